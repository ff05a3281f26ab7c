//! One owner for a bot's tools, seen from two faces in one process: the `/mcp` gateway and
//! `POST /api/ai/chat`, over a real manager, store and fake MCP servers (test-support), and
//! the fake OpenAI provider. A bot has one always-on server and two lazy ones (idle 1 s):
//! - opening a `/mcp` session and listing its tools starts nothing;
//! - a chat turn that calls one lazy server leaves the other stopped;
//! - with the gateway session open, the started server idle-stops;
//! - `tools/list_changed` reaches the session only when its listed tools changed;
//! - with the caches warm, a gateway `tools/call` and a chat request send no store query.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use common::Listener;
use mcp_lifecycle::{ManagerSettings, McpServerManager, ServerState};
use pretty_assertions::assert_eq;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RoleClient;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use store::{BindingSpec, BotSpec, McpServerSpec, Store, ToolLoadingMode};
use test_support::{FakeLlm, FakeReply, FakeToolCall};
use tokio::sync::mpsc;

const BOT_KEY: &str = "faces-bot-key";
const ADMIN_KEY: &str = "faces-admin-key";

struct World {
    store: Store,
    manager: Arc<McpServerManager>,
    llm: FakeLlm,
    url: String,
    server: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

fn state_of(manager: &McpServerManager, name: &str) -> Option<ServerState> {
    manager
        .get_all_statuses()
        .into_iter()
        .find(|s| s.name == name)
        .map(|s| s.state)
}

async fn until_state(
    manager: &McpServerManager,
    name: &str,
    state: ServerState,
) -> anyhow::Result<()> {
    let mut states = manager.watch_state(name)?;
    tokio::time::timeout(Duration::from_secs(20), async {
        while *states.borrow_and_update() != state {
            states.changed().await?;
        }
        anyhow::Ok(())
    })
    .await
    .with_context(|| format!("{name} did not reach {state:?}"))?
}

async fn world(replies: Vec<FakeReply>) -> anyhow::Result<World> {
    let dir = tempfile::tempdir()?;
    let store = Store::connect(&store::sqlite_url(&dir.path().join("store.db"))).await?;
    let binary = test_support::fake_mcp_server_binary()?
        .display()
        .to_string();
    let bot = store
        .create_bot(&{
            let mut spec = BotSpec::new("faces", "openai:gpt-test");
            spec.tool_loading_mode = ToolLoadingMode::Eager;
            spec
        })
        .await?;
    for (name, always_on) in [("always", true), ("lazy1", false), ("lazy2", false)] {
        let server = store
            .create_server(
                &McpServerSpec::new(name, binary.clone())
                    .always_on(always_on)
                    .idle_timeout_ms(1_000),
            )
            .await?;
        store
            .bind(&bot.id, &server.id, &BindingSpec::default())
            .await?;
    }
    let settings = ManagerSettings {
        env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        stop_grace: Duration::from_secs(2),
        health_interval: Duration::from_millis(200),
        pid_registry: Some(dir.path().join("pids")),
        ..ManagerSettings::default()
    };
    let manager = McpServerManager::new(server_records::records(store.clone()), settings);
    manager.load_configs().await?;
    // Each server listed once (the tool cache), then only the always-on one runs.
    for name in ["lazy1", "lazy2"] {
        manager.get_tools(name).await?;
        manager.stop_server(name).await?;
    }
    manager.start_server("always").await?;
    let _health = manager.start_health_check_loop();

    let llm = FakeLlm::start(replies).await?;
    let providers = inference::Providers::new(inference::ProviderSettings {
        openai: inference::providers::OpenAiSettings {
            api_key: Some("sk-test".into()),
            base_url: Some(llm.openai_base_url()),
        },
        ..inference::ProviderSettings::default()
    })?;
    let native = http_api::default_native_tools();
    let toolsets = http_api::new_toolsets(&store, &manager, &native);
    let state = http_api::AppState {
        store: store.clone(),
        manager: manager.clone(),
        toolsets: toolsets.clone(),
        providers,
        native,
        config: Arc::new(http_api::ApiConfig {
            api_keys: http_api::ApiKeys::new([ADMIN_KEY]),
            ..http_api::ApiConfig::default()
        }),
        shutdown: tokio_util::sync::CancellationToken::new(),
        metrics: observability::BotCraftMetrics::new()?,
    };
    let backend = Arc::new(mcp_gateway::ToolsetBackend::new(toolsets));
    let router = http_api::app(state).merge(mcp_gateway::mcp_router(
        backend,
        mcp_gateway::KeyPolicy::Keys(mcp_gateway::BotKeys::default().with("faces", BOT_KEY)),
        &mcp_gateway::GatewayConfig::default(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(World {
        store,
        manager,
        llm,
        url,
        server,
        _dir: dir,
    })
}

async fn chat(world: &World, text: &str) -> anyhow::Result<serde_json::Value> {
    let reply = reqwest::Client::new()
        .post(format!("{}/api/ai/chat", world.url))
        .bearer_auth(ADMIN_KEY)
        .header("accept", "application/json")
        .json(&json!({
            "botId": "faces",
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}],
        }))
        .send()
        .await?;
    anyhow::ensure!(reply.status() == 200, "chat: {}", reply.status());
    Ok(reply.json().await?)
}

#[tokio::test]
async fn listing_starts_nothing_idle_stop_holds_and_warm_paths_send_no_query() -> anyhow::Result<()>
{
    let world = world(vec![
        FakeReply::tool_calls([FakeToolCall::new(
            "c1",
            "lazy1__echo",
            [r#"{"text":"one"}"#],
        )]),
        FakeReply::text(["called lazy1"]),
        FakeReply::tool_calls([FakeToolCall::new(
            "c2",
            "always__echo",
            [r#"{"text":"two"}"#],
        )]),
        FakeReply::text(["called always"]),
    ])
    .await?;
    let (changed, mut changes) = mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", world.url))
            .auth_header(BOT_KEY),
    );
    let client = Listener { changed }.serve(transport).await?;
    let listed: Vec<String> = client
        .list_all_tools()
        .await?
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(listed.len(), 12, "{listed:?}");
    assert!(listed.contains(&"lazy2__echo".to_owned()));
    for name in ["lazy1", "lazy2"] {
        assert_eq!(
            state_of(&world.manager, name),
            Some(ServerState::Stopped),
            "{name}"
        );
    }

    // A chat turn calls lazy1: it starts; lazy2 stays stopped.
    let first = chat(&world, "use lazy1").await?;
    assert_eq!(first["text"], "called lazy1", "{first}");
    assert_eq!(
        state_of(&world.manager, "lazy2"),
        Some(ServerState::Stopped)
    );
    // With the gateway session open, lazy1 still idle-stops.
    until_state(&world.manager, "lazy1", ServerState::Stopped).await?;

    // Warm: a chat request and a gateway call send no store query.
    let before = world.store.queries_run();
    let second = chat(&world, "use always").await?;
    assert_eq!(second["text"], "called always", "{second}");
    let mut echo = CallToolRequestParams::new("always__echo");
    echo = echo.with_arguments(
        json!({"text": "gw"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let answered = client.call_tool(echo).await?;
    assert_eq!(answered.is_error, Some(false));
    assert_eq!(
        world.store.queries_run() - before,
        0,
        "store queries on the warm chat and gateway paths"
    );
    assert_eq!(world.llm.requests().len(), 4);

    // Starts and stops changed no listed tool: the session heard nothing. A real change of
    // the list reaches it, once.
    assert!(changes.try_recv().is_err(), "list_changed without a change");
    let mut change = CallToolRequestParams::new("always__change_tools");
    change = change.with_arguments(serde_json::Map::new());
    client.call_tool(change).await?;
    tokio::time::timeout(Duration::from_secs(10), changes.recv())
        .await
        .context("no tools/list_changed after a real change")?;
    let relisted = client.list_all_tools().await?;
    assert!(relisted.iter().any(|t| t.name == "always__added"));
    assert!(changes.try_recv().is_err(), "one change, one notification");

    client.cancel().await?;
    world.server.abort();
    world.manager.stop_all().await;
    Ok(())
}

/// `botcraft mcp-stdio --bot desk --local` over `data`, its MCP client listening for
/// `tools/list_changed` on `changed`.
async fn local_aggregator(
    data: &std::path::Path,
    changed: mpsc::UnboundedSender<()>,
) -> anyhow::Result<(
    tokio::process::Child,
    rmcp::service::RunningService<RoleClient, Listener>,
)> {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_botcraft"))
        .args(["mcp-stdio", "--bot", "desk", "--local", "--data-dir"])
        .arg(data)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", data)
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().context("no stdout")?;
    let stdin = child.stdin.take().context("no stdin")?;
    let client = Listener { changed }.serve((stdout, stdin)).await?;
    Ok((child, client))
}

fn names(tools: &[rmcp::model::Tool]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    names
}

/// `mcp-stdio --local`: the bot's servers run under a McpServerManager inside the aggregator.
/// On a store whose server was never listed, `tools/list` answers at once and the tools
/// arrive as `tools/list_changed` when the server has listed them; a call goes through; when
/// the client closes stdin the aggregator exits 0 and its server is gone. The next run lists
/// the tools from the cached catalog with nothing started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_aggregator_serves_the_bot_in_process_and_leaves_nothing_behind() -> anyhow::Result<()>
{
    let dir = tempfile::tempdir()?;
    let fake = test_support::fake_mcp_server_binary()?;
    {
        let store = Store::connect(&store::sqlite_url(&dir.path().join("botcraft.db"))).await?;
        let server = store
            .create_server(&McpServerSpec::new("echo", fake.display().to_string()))
            .await?;
        let bot = store
            .create_bot(&BotSpec::new("desk", "openai:gpt-test"))
            .await?;
        store
            .bind(&bot.id, &server.id, &BindingSpec::default())
            .await?;
        store.close().await;
    }
    let expected = vec![
        "echo__change_tools".to_owned(),
        "echo__echo".to_owned(),
        "echo__env".to_owned(),
        "echo__sleep".to_owned(),
    ];

    let (tx, mut changed) = mpsc::unbounded_channel();
    let (mut child, client) = local_aggregator(dir.path(), tx).await?;
    let pid = child.id().context("no pid")?;
    let mut listed = names(&client.list_all_tools().await?);
    if listed.is_empty() {
        tokio::time::timeout(Duration::from_secs(30), changed.recv())
            .await
            .context("no tools/list_changed once the never-listed server listed its tools")?;
        listed = names(&client.list_all_tools().await?);
    }
    assert_eq!(listed, expected);
    let mut echo = CallToolRequestParams::new("echo__echo");
    echo = echo.with_arguments(
        json!({"text": "local"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let answered = client.call_tool(echo).await?;
    assert_eq!(
        answered
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.as_str()),
        Some("local")
    );
    let servers: Vec<_> = proc_tree::descendants(pid).into_iter().collect();
    assert_eq!(
        servers.len(),
        1,
        "one server process under the aggregator: {servers:?}"
    );
    client.cancel().await?;
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .context("the aggregator did not exit after stdin closed")??;
    assert!(status.success(), "exit status {status}");
    assert!(
        !proc_tree::is_alive(servers[0]),
        "the server outlived the aggregator"
    );
    let registries: Vec<_> = std::fs::read_dir(dir.path().join("local"))?
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        registries,
        Vec::<std::ffi::OsString>::new(),
        "pid registry left behind"
    );

    // Second run: the catalog is cached; listing starts nothing.
    let (tx, _changed) = mpsc::unbounded_channel();
    let (mut child, client) = local_aggregator(dir.path(), tx).await?;
    let pid = child.id().context("no pid")?;
    assert_eq!(names(&client.list_all_tools().await?), expected);
    assert_eq!(
        proc_tree::descendants(pid),
        std::collections::BTreeSet::new(),
        "listing started a server"
    );
    client.cancel().await?;
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await??;
    assert!(status.success(), "exit status {status}");
    Ok(())
}
