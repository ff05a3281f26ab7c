//! Past one machine: two `botcraft serve` replicas on one PostgreSQL store (a fresh database
//! on the server `BOTCRAFT_TEST_DATABASE_URL` names; without it the test says "skipped"), each
//! hearing the other's writes, and a second `serve` on one SQLite file refused.

use crate::common;

use std::process::Stdio;

use std::collections::BTreeSet;

use anyhow::Context;
use common::{Api, BOUND, Listener, Served, serve_command, spawn_served};
use pretty_assertions::assert_eq;
use reqwest::Method;
use rmcp::ServiceExt;
use rmcp::service::RoleClient;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use sqlx::migrate::MigrateDatabase;
use test_support::{FakeLlm, FakeReply};
use tokio::sync::mpsc;

const KEY: &str = "replicas-admin-key";
const POSTGRES_URL_VAR: &str = "BOTCRAFT_TEST_DATABASE_URL";

/// A database of its own on the test server, dropped by [`Dropped`].
async fn fresh_database() -> anyhow::Result<Option<String>> {
    let Ok(base) = std::env::var(POSTGRES_URL_VAR) else {
        eprintln!("{POSTGRES_URL_VAR} is not set: the two-replica test is skipped");
        return Ok(None);
    };
    sqlx::any::install_default_drivers();
    let name = format!("botcraft_replicas_{:08x}", rand::random::<u32>());
    let (head, query) = base.split_once('?').unwrap_or((&base, ""));
    let server = head.rsplit_once('/').map_or(head, |(server, _)| server);
    let url = if query.is_empty() {
        format!("{server}/{name}")
    } else {
        format!("{server}/{name}?{query}")
    };
    sqlx::Any::create_database(&url)
        .await
        .with_context(|| format!("create {name} ({POSTGRES_URL_VAR} is set)"))?;
    Ok(Some(url))
}

/// Chat requests split across the replicas.
const CHATS: usize = 200;
/// 2026-07-28 calls alternating between the replicas.
const STATELESS_CALLS: usize = 100;

/// A replica over `database`, its data folder `data`, its chats answered by `llm`.
fn replica(data: &std::path::Path, database: &str, llm: &FakeLlm) -> anyhow::Result<Served> {
    let mut command = serve_command(data, KEY)?;
    command
        .arg("--no-seed")
        .env("DATABASE_URL", database)
        .env("OPENAI_API_KEY", "sk-replicas")
        .env("OPENAI_BASE_URL", llm.openai_base_url());
    spawn_served(command)
}

/// A gateway client that reports `tools/list_changed`.

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_on_one_postgres_hear_each_others_writes() -> anyhow::Result<()> {
    let Some(database) = fresh_database().await? else {
        return Ok(());
    };
    let result = run_two_replicas(&database).await;
    sqlx::Any::drop_database(&database).await?;
    result
}

async fn run_two_replicas(database: &str) -> anyhow::Result<()> {
    let (a_dir, b_dir) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let llm = FakeLlm::start((0..CHATS).map(|_| FakeReply::text(["answered"]))).await?;
    let mut a = tokio::task::block_in_place(|| replica(a_dir.path(), database, &llm))?;
    let mut b = tokio::task::block_in_place(|| replica(b_dir.path(), database, &llm))?;
    let (api_a, api_b) = (Api::new(&a.url, KEY), Api::new(&b.url, KEY));

    // A server added on A is listed and callable on B, once B has applied A's write.
    let fake = test_support::fake_mcp_server_binary()?;
    let (status, body) = api_a
        .send(
            Method::POST,
            "/api/servers",
            Some(json!({"name": "echo", "command": fake.to_string_lossy()})),
        )
        .await?;
    assert_eq!(status, 201, "{body}");
    tokio::task::block_in_place(|| b.wait_for_line("server configs reloaded"))?;
    let (status, listed) = api_b.send(Method::GET, "/api/servers", None).await?;
    assert_eq!(status, 200);
    let names: Vec<&str> = listed
        .as_array()
        .context("a list")?
        .iter()
        .filter_map(|server| server["name"].as_str())
        .collect();
    assert_eq!(names, vec!["echo"]);
    let (status, called) = api_b
        .send(
            Method::POST,
            "/api/servers/echo/tools/echo/call",
            Some(json!({"arguments": {"text": "from B"}})),
        )
        .await?;
    assert_eq!(status, 200, "{called}");
    assert!(called.to_string().contains("from B"), "{called}");
    // B started its own child: A knows the server and runs nothing.
    assert_eq!(state(&api_a, "echo").await?, Some("stopped".to_owned()));
    assert_eq!(state(&api_b, "echo").await?, Some("running".to_owned()));

    // A bot bound on A: a /mcp session on B lists its tools, and hears a binding changed on A.
    for (method, path, body) in [
        (
            Method::POST,
            "/api/bots",
            json!({"name": "b", "model": "openai:gpt-test"}),
        ),
        (
            Method::PUT,
            "/api/bots/b/servers/echo",
            json!({"enabled": true, "toolFilter": ["echo"]}),
        ),
    ] {
        let (status, answer) = api_a.send(method, path, Some(body)).await?;
        assert!(status == 200 || status == 201, "{path}: {status} {answer}");
    }
    let (status, created) = api_a
        .send(
            Method::POST,
            "/api/keys",
            Some(json!({"name": "mcp", "role": "bot", "bot": "b"})),
        )
        .await?;
    assert_eq!(status, 201, "{created}");
    let bot_key = created["secret"]
        .as_str()
        .context("the bot key")?
        .to_owned();
    let (changed, mut changes) = mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", b.url))
            .auth_header(bot_key.clone()),
    );
    let session = Listener { changed }.serve(transport).await?;
    assert_eq!(tool_names(&session).await?, vec!["echo__echo"]);
    let (status, answer) = api_a
        .send(
            Method::PUT,
            "/api/bots/b/servers/echo",
            Some(json!({"enabled": true, "toolFilter": ["echo", "env"]})),
        )
        .await?;
    assert_eq!(status, 200, "{answer}");
    tokio::time::timeout(BOUND, changes.recv())
        .await
        .context("no tools/list_changed on B for a binding changed on A")?;
    assert_eq!(tool_names(&session).await?, vec!["echo__echo", "echo__env"]);
    session.cancel().await?;

    // A 2025-11-25 session of B sent to A: 404, the spec's answer for an unknown session.
    let session_id = initialize(&b.url, &bot_key).await?;
    for (replica, expected) in [(&b.url, 202), (&a.url, 404)] {
        let status = post_mcp(
            replica,
            &bot_key,
            Some(&session_id),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await?
        .0;
        assert_eq!(status, expected, "{replica}");
    }

    // A 2026-07-28 client that alternates between A and B on every request: all answered.
    for i in 0..STATELESS_CALLS {
        let replica = if i % 2 == 0 { &a.url } else { &b.url };
        let text = format!("call {i}");
        let (status, body) = stateless_call(replica, &bot_key, &text).await?;
        assert_eq!(status, 200, "call {i} on {replica}: {body}");
        assert!(
            body.contains(&text) && !body.contains("\"isError\":true"),
            "call {i} on {replica}: {body}"
        );
    }

    // Chat requests split across A and B: every one answered.
    let client = reqwest::Client::new();
    let answers = futures::future::join_all((0..CHATS).map(|i| {
        let url = if i % 2 == 0 { &a.url } else { &b.url };
        client
            .post(format!("{url}/api/ai/chat"))
            .bearer_auth(KEY)
            .header("accept", "application/json")
            .json(&json!({"botId": "b", "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": format!("hello {i}")}]}]}))
            .send()
    }))
    .await;
    let mut answered = 0;
    for answer in answers {
        let answer = answer?;
        anyhow::ensure!(answer.status() == 200, "chat: {}", answer.status());
        let body: serde_json::Value = answer.json().await?;
        anyhow::ensure!(body["text"] == "answered", "chat: {body}");
        answered += 1;
    }
    assert_eq!(answered, CHATS);

    // A key revoked on A fails on B at its next request.
    let (status, created) = api_a
        .send(
            Method::POST,
            "/api/keys",
            Some(json!({"name": "front", "role": "chat"})),
        )
        .await?;
    assert_eq!(status, 201, "{created}");
    let chat_key = created["secret"]
        .as_str()
        .context("the new key")?
        .to_owned();
    let (status, _) = api_b
        .send_as(&chat_key, Method::GET, "/api/whoami", None)
        .await?;
    assert_eq!(status, 200);
    let (status, _) = api_a.send(Method::DELETE, "/api/keys/front", None).await?;
    assert_eq!(status, 200);
    let (status, _) = api_b
        .send_as(&chat_key, Method::GET, "/api/whoami", None)
        .await?;
    assert_eq!(status, 401);

    // SIGKILL A while a server of its own left a grandchild in a session of its own: B keeps
    // serving with its child untouched; A, restarted, reaps its own orphan.
    let grandchild_file = a_dir.path().join("grandchild.pid");
    let (status, body) = api_a
        .send(
            Method::POST,
            "/api/servers",
            Some(
                // Unconfined: it writes its grandchild's pid into the data folder, which no
                // sandbox reaches (this case is about reaping, not the sandbox).
                json!({"name": "orphaner", "command": fake.to_string_lossy(),
                "env": {"FAKE_MCP_GRANDCHILD_PID_FILE": grandchild_file.to_string_lossy()},
                "sandbox": {"enabled": false}}),
            ),
        )
        .await?;
    assert_eq!(status, 201, "{body}");
    let (status, body) = api_a
        .send(Method::POST, "/api/servers/orphaner/start", None)
        .await?;
    assert_eq!(status, 200, "{body}");
    let grandchild = std::fs::read_to_string(&grandchild_file)?
        .trim()
        .parse::<u32>()?;
    let grandchild = proc_tree::identify(grandchild).context("the grandchild runs")?;
    let b_child = pid(&api_b, "echo").await?.context("B's echo runs")?;
    a.child.kill()?;
    a.child.wait()?;
    let (status, called) = api_b
        .send(
            Method::POST,
            "/api/servers/echo/tools/echo/call",
            Some(json!({"arguments": {"text": "after A died"}})),
        )
        .await?;
    assert_eq!(status, 200, "{called}");
    assert_eq!(
        pid(&api_b, "echo").await?,
        Some(b_child),
        "B's child was touched"
    );
    assert!(
        proc_tree::is_alive(grandchild),
        "A's orphan outlives A until A starts again"
    );
    let _a_again = tokio::task::block_in_place(|| replica(a_dir.path(), database, &llm))?;
    let reaped = proc_tree::wait_gone(&BTreeSet::from([grandchild]), BOUND).await;
    assert!(reaped, "A's restart did not reap its orphan");
    assert_eq!(
        pid(&api_b, "echo").await?,
        Some(b_child),
        "A's restart touched B's child"
    );

    // Deleted on B: B stops its child, and A forgets the server too once it has applied the
    // write (each reload line on A is a chance; none within the bound fails the test).
    let (status, _) = api_b
        .send(Method::DELETE, "/api/servers/echo", None)
        .await?;
    assert_eq!(status, 204);
    assert_eq!(state(&api_b, "echo").await?, None);
    Ok(())
}

/// The tools a gateway session lists, by name.
async fn tool_names(
    session: &rmcp::service::RunningService<RoleClient, Listener>,
) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = session
        .list_all_tools()
        .await?
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect();
    names.sort();
    Ok(names)
}

/// One JSON-RPC message POSTed to `/mcp` of `replica`: the status and the body text.
async fn post_mcp(
    replica: &str,
    key: &str,
    session: Option<&str>,
    message: &serde_json::Value,
) -> anyhow::Result<(u16, String, Option<String>)> {
    let mut request = reqwest::Client::new()
        .post(format!("{replica}/mcp"))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .json(message);
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let answer = request.send().await?;
    let session = answer
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    Ok((answer.status().as_u16(), answer.text().await?, session))
}

/// A 2025-11-25 session opened on `replica`: its id.
async fn initialize(replica: &str, key: &str) -> anyhow::Result<String> {
    let (status, body, session) = post_mcp(
        replica,
        key,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "replicas-test", "version": "0"}}}),
    )
    .await?;
    anyhow::ensure!(status == 200, "initialize: {status} {body}");
    session.context("no Mcp-Session-Id")
}

/// `tools/call echo__echo {text}` as a 2026-07-28 client: one self-contained request, no
/// session. The status and the body text.
async fn stateless_call(replica: &str, key: &str, text: &str) -> anyhow::Result<(u16, String)> {
    let answer = reqwest::Client::new()
        .post(format!("{replica}/mcp"))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo__echo")
        .json(
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "echo__echo", "arguments": {"text": text},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "replicas-test", "version": "0"}
            }}}),
        )
        .send()
        .await?;
    Ok((answer.status().as_u16(), answer.text().await?))
}

/// The pid of `server` on this replica, when it runs.
async fn pid(api: &Api, server: &str) -> anyhow::Result<Option<u64>> {
    let (_, health) = api.send(Method::GET, "/api/health", None).await?;
    Ok(health["mcpServers"][server]["pid"].as_u64())
}

/// The state of `server` in this replica's `/api/health`, `None` when it does not know it.
async fn state(api: &Api, server: &str) -> anyhow::Result<Option<String>> {
    let (_, health) = api.send(Method::GET, "/api/health", None).await?;
    Ok(health["mcpServers"][server]["state"]
        .as_str()
        .map(str::to_owned))
}

#[test]
fn a_second_serve_on_one_sqlite_file_is_refused() -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let _first = spawn_served(serve_command(data.path(), KEY)?)?;
    let second = serve_command(data.path(), KEY)?
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "the second serve ran: {stderr}");
    assert!(
        stderr.contains("SQLite has one replica"),
        "no reason given: {stderr}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn replicas_sharing_a_data_folder_need_their_own_replica_ids() -> anyhow::Result<()> {
    let Some(database) = fresh_database().await? else {
        return Ok(());
    };
    let result = share_a_data_folder(&database).await;
    sqlx::Any::drop_database(&database).await?;
    result
}

async fn share_a_data_folder(database: &str) -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let llm = FakeLlm::start(Vec::<FakeReply>::new()).await?;
    let _first = tokio::task::block_in_place(|| replica(data.path(), database, &llm))?;
    // The same registry: refused, naming it, before it could reap the first one's servers.
    let mut second = serve_command(data.path(), KEY)?;
    second
        .arg("--no-seed")
        .env("DATABASE_URL", database)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let refused = second.output()?;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "the second serve ran: {stderr}");
    assert!(stderr.contains("BOTCRAFT_REPLICA_ID"), "{stderr}");
    // With a replica id of its own it runs beside the first, on its own registry.
    let mut named = serve_command(data.path(), KEY)?;
    named
        .arg("--no-seed")
        .env("DATABASE_URL", database)
        .env("BOTCRAFT_REPLICA_ID", "b");
    let _named = tokio::task::block_in_place(|| spawn_served(named))?;
    assert!(data.path().join("pids.b.lock").exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_going_away_is_unready_while_it_still_serves() -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let mut command = serve_command(data.path(), KEY)?;
    command
        .arg("--no-seed")
        .env("BOTCRAFT_UNREADY_SECONDS", "600");
    let mut served = tokio::task::block_in_place(|| spawn_served(command))?;
    let api = Api::new(&served.url, KEY);
    let (status, _) = api.send(Method::GET, "/api/health/ready", None).await?;
    assert_eq!(status, 200);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(served.child.id())?);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
    tokio::task::block_in_place(|| {
        served.wait_for_line("draining: /api/health/ready answers 503")
    })?;
    assert_eq!(
        api.send(Method::GET, "/api/health/ready", None).await?,
        (503, json!({"status": "draining"}))
    );
    // Still serving meanwhile.
    let (status, _) = api.send(Method::GET, "/api/health/live", None).await?;
    assert_eq!(status, 200);
    // A second signal ends the wait: it drains and exits cleanly.
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
    tokio::task::block_in_place(|| served.wait_for_line("botcraft: stopped"))?;
    assert!(served.child.wait()?.success());
    Ok(())
}
