//! The gateway over the real `McpServerManager` and store, with test-support's fake MCP
//! server: lazy start, the binding's tool filter, instructions, list_changed from a server.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use mcp_gateway::{BackendError, BotKeys, GatewayBackend, KeyPolicy, ToolsetBackend};
use mcp_lifecycle::{ManagerSettings, McpServerManager};
use pretty_assertions::assert_eq;
use serde_json::json;
use store::{BindingSpec, BotSpec, McpServerSpec, Store};
use tokio_util::sync::CancellationToken;

use super::harness::{Http, Served, call_text, names, rmcp_client};

const KEY: &str = "demo-key";

struct Setup {
    manager: Arc<McpServerManager>,
    backend: Arc<ToolsetBackend>,
    metrics: observability::BotCraftMetrics,
    served: Served,
    _dir: tempfile::TempDir,
}

async fn setup(filter: &[&str]) -> anyhow::Result<Setup> {
    let dir = tempfile::tempdir()?;
    let store = Store::connect(&store::sqlite_url(&dir.path().join("store.db"))).await?;
    let binary = test_support::fake_mcp_server_binary()?;
    let server = store
        .create_server(
            &McpServerSpec::new("fake", binary.display().to_string())
                .instructions("Use the fake.")
                .timeout(10_000),
        )
        .await?;
    let bot = store.create_bot(&BotSpec::new("demo", "none")).await?;
    let binding = BindingSpec {
        tool_filter: filter.iter().map(|t| (*t).to_owned()).collect(),
        ..BindingSpec::default()
    };
    store.bind(&bot.id, &server.id, &binding).await?;
    let settings = ManagerSettings {
        env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        stop_grace: Duration::from_secs(2),
        ..ManagerSettings::default()
    };
    let manager = McpServerManager::new(server_records::records(store.clone()), settings);
    manager.load_configs().await?;
    // Listed once, then stopped: the gateway lists from the cached tool list.
    manager.get_tools("fake").await?;
    manager.stop_server("fake").await?;
    let toolsets = toolset::Toolsets::new(store, manager.clone(), ["tool_search"]);
    let metrics = observability::BotCraftMetrics::new()?;
    let backend = Arc::new(ToolsetBackend::new(toolsets).with_metrics(metrics.clone()));
    let served = Served::start(
        backend.clone(),
        KeyPolicy::Keys(BotKeys::default().with("demo", KEY)),
        0,
    )
    .await?;
    Ok(Setup {
        manager,
        backend,
        metrics,
        served,
        _dir: dir,
    })
}

fn state(manager: &McpServerManager) -> mcp_lifecycle::ServerState {
    manager
        .get_all_statuses()
        .into_iter()
        .find(|s| s.name == "fake")
        .map_or(mcp_lifecycle::ServerState::Error, |s| s.state)
}

#[tokio::test]
async fn the_gateway_serves_the_bound_server_through_the_manager() -> anyhow::Result<()> {
    let setup = setup(&["echo", "change_tools", "added"]).await?;
    let http = Http::new(&setup.served.url);
    let init = http.initialize(Some(KEY)).await?;
    assert_eq!(
        init.body["result"]["instructions"],
        "BotCraft bot \"demo\". Tools are named SERVER__TOOL; each belongs to one of the MCP servers below.\n\n## fake\nUse the fake."
    );
    let session = init.session.as_deref();
    assert_eq!(
        names(&http.list(Some(KEY), session).await?),
        ["fake__change_tools", "fake__echo"]
    );
    // Neither initialize nor tools/list started the server.
    assert_eq!(state(&setup.manager), mcp_lifecycle::ServerState::Stopped);
    let echoed = http
        .call(Some(KEY), session, "fake__echo", json!({"text": "hello"}))
        .await?;
    assert_eq!(call_text(&echoed), "hello");
    // Counted as a call through /mcp.
    let exposition = setup.metrics.encode();
    assert!(
        exposition.contains(
            r#"botcraft_tool_calls_total{server="fake",tool="echo",outcome="ok",path="mcp"} 1"#
        ),
        "{exposition}"
    );
    let outside = http
        .call(Some(KEY), session, "fake__sleep", json!({}))
        .await?;
    assert_eq!(
        outside.body["error"]["message"],
        "Unknown tool: fake__sleep"
    );

    // The backend refuses a tool outside the filter even when asked directly.
    let refused = setup
        .backend
        .call_tool("demo", "fake", "sleep", None, CancellationToken::new())
        .await;
    assert_eq!(
        refused,
        Err(BackendError::NotAllowed {
            bot: "demo".into(),
            server: "fake".into(),
            tool: "sleep".into()
        })
    );
    setup.served.stop().await;
    setup.manager.stop_all().await;
    Ok(())
}

#[tokio::test]
async fn a_servers_list_changed_reaches_the_gateways_clients() -> anyhow::Result<()> {
    let setup = setup(&["echo", "change_tools", "added"]).await?;
    let (client, mut changed) = rmcp_client(&setup.served.url, KEY).await?;
    let tool_names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.iter().map(|t| t.name.to_string()).collect()
    };
    assert_eq!(
        tool_names(client.list_all_tools().await?),
        ["fake__change_tools", "fake__echo"]
    );
    let mut params = rmcp::model::CallToolRequestParams::new("fake__change_tools");
    params = params.with_arguments(serde_json::Map::new());
    client.call_tool(params).await?;
    tokio::time::timeout(Duration::from_secs(10), changed.recv())
        .await
        .context("no tools/list_changed within 10 s")?;
    assert_eq!(
        tool_names(client.list_all_tools().await?),
        ["fake__added", "fake__change_tools", "fake__echo"]
    );
    client.cancel().await?;
    setup.served.stop().await;
    setup.manager.stop_all().await;
    Ok(())
}
