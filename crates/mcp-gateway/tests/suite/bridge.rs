//! `mcp-stdio-bridge` (what `botcraft mcp-stdio` runs) as a process: it starts with an empty
//! environment, answers from its manifest, exits 0 on EOF, and fails each call it cannot
//! make with the seed's reason code.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use axum::http::StatusCode;
use mcp_gateway::manifest::BotManifest;
use mcp_gateway::{BotKeys, KeyPolicy};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::StdioServer;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::harness::{FakeBackend, FakeBot, Served, tool};
use super::manifest::committed_forge_manifest;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-stdio-bridge");

#[tokio::test]
async fn with_an_empty_environment_it_serves_the_manifest_and_exits_0_on_eof() -> anyhow::Result<()>
{
    let manifest_path = committed_forge_manifest();
    let manifest = BotManifest::load(&manifest_path, "forge")?;
    let mut child = tokio::process::Command::new(BRIDGE)
        .args(["--bot", "forge", "--manifest"])
        .arg(&manifest_path)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "forge-bash__run", "arguments": {"command": "true"}}}),
    ];
    for request in &requests {
        stdin.write_all(format!("{request}\n").as_bytes()).await?;
    }
    stdin.flush().await?;
    let mut answers = BTreeMap::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while answers.len() < 3 {
            let Some(line) = stdout.next_line().await? else {
                anyhow::bail!("stdout closed early");
            };
            let message: Value = serde_json::from_str(&line)?;
            if let Some(id) = message["id"].as_u64() {
                answers.insert(id, message);
            }
        }
        Ok(())
    })
    .await
    .context("no answers within 20 s")??;
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait()).await??;
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        tokio::io::AsyncReadExt::read_to_string(&mut pipe, &mut stderr).await?;
    }

    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    let init = &answers[&1]["result"];
    assert_eq!(init["serverInfo"]["name"], "botcraft");
    assert_eq!(
        init["instructions"].as_str(),
        manifest.instructions.as_deref()
    );
    let tools: Vec<rmcp::model::Tool> =
        serde_json::from_value(answers[&2]["result"]["tools"].clone())?;
    assert_eq!(tools, manifest.tools);
    assert_eq!(answers[&3]["result"]["isError"], true);
    assert_eq!(
        answers[&3]["result"]["content"][0]["text"],
        mcp_gateway::bridge::NOT_CONFIGURED
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines[0].starts_with("botcraft-mcp-stdio: ready — bot forge, 21 tools from ")
            && lines[0]
                .contains("tools/call is unconfigured (set BOTCRAFT_URL and BOTCRAFT_API_KEY)"),
        "{stderr}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(
            "botcraft-mcp-stdio: reason=stdio.not_configured tool=forge-bash__run tools/call is not configured"
        )),
        "{stderr}"
    );
    Ok(())
}

/// The bridge started with `args` and an empty environment: its `tools/list` and stderr.
async fn list_with(args: &[&str]) -> anyhow::Result<(Vec<rmcp::model::Tool>, String)> {
    let mut child = tokio::process::Command::new(BRIDGE)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?).lines();
    for request in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ] {
        stdin.write_all(format!("{request}\n").as_bytes()).await?;
    }
    stdin.flush().await?;
    let listed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let Some(line) = stdout.next_line().await? else {
                anyhow::bail!("stdout closed early");
            };
            let message: Value = serde_json::from_str(&line)?;
            if message["id"] == 2 {
                return Ok(message["result"]["tools"].clone());
            }
        }
    })
    .await
    .context("no tools/list answer within 20 s")??;
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(20), child.wait()).await??;
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        tokio::io::AsyncReadExt::read_to_string(&mut pipe, &mut stderr).await?;
    }
    Ok((serde_json::from_value(listed)?, stderr))
}

/// No `--manifest`, no cache (no HOME): the seeded bot's committed manifest is built in; any
/// other bot lists nothing and is told what to pass.
#[tokio::test]
async fn without_a_manifest_the_seeded_bot_is_built_in_and_another_bot_is_told_what_to_pass()
-> anyhow::Result<()> {
    let committed = BotManifest::load(&committed_forge_manifest(), "forge")?;
    let (tools, stderr) = list_with(&["--bot", "forge"]).await?;
    assert_eq!(tools, committed.tools, "{stderr}");
    assert!(
        stderr.contains("21 tools from the manifest built into this binary"),
        "{stderr}"
    );
    let (tools, stderr) = list_with(&["--bot", "support"]).await?;
    assert_eq!(tools, vec![], "{stderr}");
    assert!(
        stderr.contains("no manifest for bot support: no cache folder; pass --manifest FILE"),
        "{stderr}"
    );
    Ok(())
}

/// An HTTP server that answers every request with `status`, `content_type` and `body`.
async fn canned(
    status: StatusCode,
    content_type: &'static str,
    body: &'static str,
) -> anyhow::Result<Served> {
    let app = axum::Router::new().fallback(move || async move {
        (
            status,
            [(axum::http::header::CONTENT_TYPE, content_type)],
            body,
        )
    });
    Served::serve(app, 0, tokio_util::sync::CancellationToken::new()).await
}

/// A port nobody listens on.
async fn closed_port() -> anyhow::Result<u16> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    Ok(listener.local_addr()?.port())
}

async fn wait_for_line(server: &StdioServer, needle: &str) -> anyhow::Result<()> {
    server
        .wait_for_stderr(needle, Duration::from_secs(10))
        .await
}

/// (case, url and key or none, tool, reason code or none for success, text it contains, one
/// more variable for the bridge)
type ReasonCase<'a> = (
    &'a str,
    Option<(String, &'a str)>,
    &'a str,
    Option<&'a str>,
    &'a str,
    Option<(&'a str, String)>,
);

#[tokio::test]
async fn each_failed_call_states_its_cause_with_the_seeds_reason_code() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let manifest = BotManifest::from_servers(
        "demo",
        &[("fake".to_owned(), vec![tool("echo"), tool("fail")], None)],
    );
    let manifest_path = dir.path().join("demo.json");
    manifest.save(&manifest_path)?;
    let backend = FakeBackend::new([(
        "demo",
        FakeBot::default()
            .tool("fake", "echo", true)
            .tool("fake", "fail", true),
    )]);
    let gateway = Served::start(
        backend,
        KeyPolicy::Keys(BotKeys::default().with("demo", "demo-key")),
        0,
    )
    .await?;
    let error_500 = canned(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", "boom").await?;
    let garbage = canned(StatusCode::OK, "text/plain", "hello").await?;
    let unreachable = format!("http://127.0.0.1:{}", closed_port().await?);
    // reqwest carries the calls through a proxy the environment names, as it always has.
    let unreachable_proxy = unreachable.clone();
    let base = gateway.url.trim_end_matches("/mcp").to_owned();

    let cases: Vec<ReasonCase> = vec![
        (
            "not configured",
            None,
            "fake__echo",
            Some("stdio.not_configured"),
            "set BOTCRAFT_URL",
            None,
        ),
        (
            "unreachable",
            Some((unreachable, "demo-key")),
            "fake__echo",
            Some("stdio.upstream_unreachable"),
            "cannot reach BotCraft",
            None,
        ),
        (
            "HTTP 500",
            Some((error_500.url.clone(), "demo-key")),
            "fake__echo",
            Some("stdio.upstream_http_error"),
            "HTTP 500",
            None,
        ),
        (
            "wrong key",
            Some((base.clone(), "nope")),
            "fake__echo",
            Some("stdio.upstream_http_error"),
            "HTTP 401",
            None,
        ),
        (
            "bad payload",
            Some((garbage.url.clone(), "demo-key")),
            "fake__echo",
            Some("stdio.upstream_bad_payload"),
            "not what MCP expects",
            None,
        ),
        (
            "tool error",
            Some((base.clone(), "demo-key")),
            "fake__fail",
            Some("stdio.tool_error"),
            "the fake tool failed",
            None,
        ),
        (
            "success",
            Some((base.clone(), "demo-key")),
            "fake__echo",
            None,
            "\"tool\":\"echo\"",
            None,
        ),
        (
            "a proxy named in the environment (it is down)",
            Some((base.clone(), "demo-key")),
            "fake__echo",
            Some("stdio.upstream_unreachable"),
            "cannot reach BotCraft",
            Some(("HTTP_PROXY", unreachable_proxy)),
        ),
    ];
    for (case, upstream, tool_name, reason, text, variable) in cases {
        let mut env = StdioServer::base_env();
        if let Some((name, value)) = variable {
            env.insert(name.into(), value);
        }
        if let Some((url, key)) = upstream {
            env.insert("BOTCRAFT_URL".into(), url);
            env.insert("BOTCRAFT_API_KEY".into(), key.into());
        }
        let path = manifest_path.display().to_string();
        let server = StdioServer::spawn(
            BRIDGE,
            &["--bot", "demo", "--manifest", &path, "--no-refresh"],
            &env,
        )
        .await?;
        let outcome = server.call(tool_name, json!({"text": "hi"})).await?;
        assert_eq!(
            outcome.is_error,
            reason.is_some(),
            "{case}: {}",
            outcome.text
        );
        assert!(outcome.text.contains(text), "{case}: {}", outcome.text);
        match reason {
            Some(code) => {
                wait_for_line(
                    &server,
                    &format!("botcraft-mcp-stdio: reason={code} tool={tool_name} "),
                )
                .await
                .with_context(|| case.to_owned())?;
            }
            None => assert!(
                !server.stderr_lines().iter().any(|l| l.contains("reason=")),
                "{case}: {:?}",
                server.stderr_lines()
            ),
        }
        server.close().await?;
    }
    gateway.stop().await;
    error_500.stop().await;
    garbage.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_configured_bridge_fetches_caches_and_serves_the_live_list() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let backend = FakeBackend::new([("demo", FakeBot::default().tool("fake", "echo", true))]);
    let gateway = Served::start(
        backend,
        KeyPolicy::Keys(BotKeys::default().with("demo", "demo-key")),
        0,
    )
    .await?;
    let mut env = StdioServer::base_env();
    env.insert("BOTCRAFT_URL".into(), gateway.url.clone());
    env.insert("BOTCRAFT_API_KEY".into(), "demo-key".into());
    let cache = dir.path().display().to_string();
    let server =
        StdioServer::spawn(BRIDGE, &["--bot", "demo", "--cache-dir", &cache], &env).await?;
    let cached = dir.path().join("demo.json");
    // Bounded poll on the condition: the refresh wrote the cache.
    tokio::time::timeout(Duration::from_secs(10), async {
        while !cached.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .context("the manifest was never cached")?;
    let names: Vec<String> = server
        .tools()
        .await?
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["fake__echo"]);
    assert_eq!(BotManifest::load(&cached, "demo")?.tools.len(), 1);
    server.close().await?;
    gateway.stop().await;
    Ok(())
}

/// `--server S` starts with nothing too: `initialize` and `tools/list` answer under an empty
/// environment (no tools, the cause on stderr); a call fails as that call's, a resource read as
/// a JSON-RPC error stating the cause.
#[tokio::test]
async fn a_single_server_bridge_starts_with_nothing_and_states_each_cause() -> anyhow::Result<()> {
    let unreachable = format!("http://127.0.0.1:{}", closed_port().await?);
    let cases: Vec<(&str, BTreeMap<String, String>, &str)> = vec![
        (
            "not configured",
            StdioServer::base_env(),
            "stdio.not_configured",
        ),
        (
            "unreachable",
            {
                let mut env = StdioServer::base_env();
                env.insert("BOTCRAFT_URL".into(), unreachable.clone());
                env.insert("BOTCRAFT_API_KEY".into(), "demo-key".into());
                env
            },
            "stdio.upstream_unreachable",
        ),
    ];
    for (case, env, reason) in cases {
        let server =
            StdioServer::spawn(BRIDGE, &["--bot", "demo", "--server", "fixture"], &env).await?;
        let info = server.client.peer_info().context("initialize answered")?;
        assert!(
            info.capabilities.resources.is_some() && info.capabilities.prompts.is_some(),
            "{case}"
        );
        assert_eq!(server.tools().await?, Vec::new(), "{case}");
        wait_for_line(&server, &format!("reason={reason} tool=tools/list")).await?;
        let call = server.call("test_simple_text", json!({})).await?;
        assert!(call.is_error, "{case}: {call:?}");
        let read = server
            .client
            .read_resource(rmcp::model::ReadResourceRequestParams::new(
                "test://static-text",
            ))
            .await;
        let error = format!("{:?}", read.err().context("a read cannot succeed")?);
        let expected = if reason == "stdio.not_configured" {
            "BOTCRAFT_URL"
        } else {
            "cannot open a session with BotCraft"
        };
        assert!(error.contains(expected), "{case}: {error}");
        wait_for_line(&server, &format!("reason={reason} tool=resources/read")).await?;
        server.close().await?;
    }
    Ok(())
}
