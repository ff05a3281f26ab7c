//! The gateway over a real socket with a fake backend: listing, calling, instructions,
//! list_changed, sessions that expire or outlive a restart.

use std::time::Duration;

use anyhow::Context;
use mcp_gateway::{BotKeys, GatewayConfig, KeyPolicy};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::harness::{FakeBackend, FakeBot, Http, Served, call_text, names, rmcp_client};

const FORGE_KEY: &str = "forge-key";

pub fn forge() -> FakeBot {
    FakeBot::default()
        .tool("fs", "read", true)
        .tool("fs", "write", false)
        .tool("forge-bash", "run", true)
        .tool("forge-bash", "fail", true)
        .instructions("forge-bash", "Run short commands.")
        .instructions("fs", "Files.")
}

fn keys() -> KeyPolicy {
    KeyPolicy::Keys(BotKeys::default().with("forge", FORGE_KEY))
}

#[tokio::test]
async fn bot_tools_are_listed_by_qualified_name_and_calls_are_routed() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge())]);
    let served = Served::start(backend.clone(), keys(), 0).await?;
    let http = Http::new(&served.url);
    let init = http.initialize(Some(FORGE_KEY)).await?;
    assert_eq!(init.status, 200);
    assert_eq!(
        init.body["result"]["instructions"],
        "BotCraft bot \"forge\". Tools are named SERVER__TOOL; each belongs to one of the MCP servers below.\n\n## forge-bash\nRun short commands.\n\n## fs\nFiles."
    );
    assert_eq!(init.body["result"]["serverInfo"]["name"], "botcraft");
    assert_eq!(
        init.body["result"]["capabilities"]["tools"],
        json!({"listChanged": true})
    );
    let session = init.session.as_deref();
    let listed = http.list(Some(FORGE_KEY), session).await?;
    assert_eq!(
        names(&listed),
        ["forge-bash__fail", "forge-bash__run", "fs__read"]
    );
    let called = http
        .call(Some(FORGE_KEY), session, "fs__read", json!({"text": "hi"}))
        .await?;
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&call_text(&called))?,
        json!({"bot": "forge", "server": "fs", "tool": "read", "arguments": {"text": "hi"}})
    );
    // A session's plain call is answered as plain JSON (mcp_gateway::direct); the list went
    // through rmcp, whose event stream ended with its one message: sent whole, with a
    // length, in one write (mcp_gateway::coalesce).
    assert_eq!(
        (
            called.content_type.as_deref(),
            called.content_length.is_some()
        ),
        (Some("application/json"), true)
    );
    assert_eq!(
        (
            listed.content_type.as_deref(),
            listed.content_length.is_some()
        ),
        (Some("text/event-stream"), true)
    );
    let failed = http
        .call(Some(FORGE_KEY), session, "forge-bash__fail", json!({}))
        .await?;
    assert_eq!(failed.body["result"]["isError"], true);
    assert_eq!(call_text(&failed), "the fake tool failed");
    served.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_tool_list_change_reaches_connected_sessions_as_list_changed() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge())]);
    let served = Served::start(backend.clone(), keys(), 0).await?;
    let (client, mut changed) = rmcp_client(&served.url, FORGE_KEY).await?;
    let before: Vec<String> = client
        .list_all_tools()
        .await?
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(before, ["forge-bash__fail", "forge-bash__run", "fs__read"]);

    // The follower starts on notifications/initialized; announce until it is heard.
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            backend.change("forge", forge().tool("fs", "write", true));
            if tokio::time::timeout(Duration::from_millis(200), changed.recv())
                .await
                .is_ok()
            {
                return;
            }
        }
    })
    .await;
    heard.context("no tools/list_changed within 10 s")?;
    let after: Vec<String> = client
        .list_all_tools()
        .await?
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        after,
        [
            "forge-bash__fail",
            "forge-bash__run",
            "fs__read",
            "fs__write"
        ]
    );
    client.cancel().await?;
    served.stop().await;
    Ok(())
}

#[tokio::test]
async fn after_a_restart_an_old_session_is_404_and_clients_reinitialize() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge())]);
    let first = Served::start(backend.clone(), keys(), 0).await?;
    let http = Http::new(&first.url);
    let init = http.initialize(Some(FORGE_KEY)).await?;
    let old = init.session.context("a session id")?;
    let (client, _changed) = rmcp_client(&first.url, FORGE_KEY).await?;
    assert_eq!(client.list_all_tools().await?.len(), 3);

    let port = first.address.port();
    first.stop().await;
    let second = Served::start(backend.clone(), keys(), port).await?;
    let stale = http.list(Some(FORGE_KEY), Some(&old)).await?;
    assert_eq!(stale.status, 404, "{}", stale.text);

    let again = http.initialize(Some(FORGE_KEY)).await?;
    assert_ne!(again.session.as_deref(), Some(old.as_str()));
    let listed = http.list(Some(FORGE_KEY), again.session.as_deref()).await?;
    assert_eq!(names(&listed).len(), 3);
    // rmcp's client re-initializes on its own after the 404.
    assert_eq!(client.list_all_tools().await?.len(), 3);
    client.cancel().await?;
    second.stop().await;
    Ok(())
}

#[tokio::test]
async fn an_unused_session_times_out_and_then_answers_404() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge())]);
    let config = GatewayConfig {
        session_timeout: Duration::from_millis(300),
        ..GatewayConfig::default()
    };
    let (service, sessions) = mcp_gateway::mcp_service(backend, &config);
    let auth = mcp_gateway::GatewayAuth::new(keys(), sessions.clone(), config.session_timeout);
    let app = axum::Router::new().nest_service(
        mcp_gateway::MCP_PATH,
        tower::ServiceBuilder::new()
            .layer(auth.layer())
            .map_response(axum::response::IntoResponse::into_response)
            .service(service),
    );
    let served = Served::serve(app, 0, config.shutdown.clone()).await?;
    let http = Http::new(&served.url);
    let session = http
        .initialize(Some(FORGE_KEY))
        .await?
        .session
        .context("a session id")?;
    let id: rmcp::transport::streamable_http_server::SessionId = session.as_str().into();
    use rmcp::transport::streamable_http_server::SessionManager;
    // Bounded poll on the condition (the session manager drops the session), not a sleep.
    tokio::time::timeout(Duration::from_secs(10), async {
        while sessions.has_session(&id).await.unwrap_or(false) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .context("the session never expired")?;
    let reply = http.list(Some(FORGE_KEY), Some(&session)).await?;
    assert_eq!(reply.status, 404);
    served.stop().await;
    Ok(())
}
