//! Everything MCP carries besides tool lists, through the gateway over the real manager and
//! test-support's conformance fixture (run over stdio): elicitation reaching the gateway's
//! client and its answer flowing back, refused when the client did not declare it; progress
//! in order before the result; resources and prompts under merged names on `/mcp` and under
//! their own on `/mcp/fixture`; a session's log level and resource subscriptions its own, never
//! another's to change through the shared connection.

#![allow(deprecated)] // logging is legacy in 2026-07-28; 2025-11-25 servers (the fixture) use it

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_gateway::{BotKeys, KeyPolicy, ToolsetBackend};
use mcp_lifecycle::{ManagerSettings, McpServerManager};
use pretty_assertions::assert_eq;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, ElicitRequestParams,
    ElicitResult, ElicitationAction, GetPromptRequestParams, Implementation,
    ProgressNotificationParam, ReadResourceRequestParams, ServerResult,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::json;
use store::{BindingSpec, BotSpec, McpServerSpec, Store};

use super::harness::Served;

const KEY: &str = "relay-key";

struct Setup {
    manager: Arc<McpServerManager>,
    served: Served,
    store: Store,
    /// The bot's id and the fixture server's.
    ids: (String, String),
    _dir: tempfile::TempDir,
}

async fn setup() -> anyhow::Result<Setup> {
    let dir = tempfile::tempdir()?;
    let store = Store::connect(&store::sqlite_url(&dir.path().join("store.db"))).await?;
    let binary = test_support::conformance_fixture_binary()?;
    let server = store
        .create_server(&McpServerSpec::new("fixture", binary.display().to_string()).timeout(10_000))
        .await?;
    let bot = store.create_bot(&BotSpec::new("demo", "none")).await?;
    store
        .bind(&bot.id, &server.id, &BindingSpec::default())
        .await?;
    let settings = ManagerSettings {
        env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        stop_grace: Duration::from_secs(2),
        ..ManagerSettings::default()
    };
    let manager = McpServerManager::new(server_records::records(store.clone()), settings);
    manager.load_configs().await?;
    manager.get_tools("fixture").await?;
    let toolsets = toolset::Toolsets::new(store.clone(), manager.clone(), ["tool_search"]);
    let backend = Arc::new(ToolsetBackend::new(toolsets));
    let served = Served::start(
        backend,
        KeyPolicy::Keys(BotKeys::default().with("demo", KEY)),
        0,
    )
    .await?;
    Ok(Setup {
        manager,
        served,
        store,
        ids: (bot.id, server.id),
        _dir: dir,
    })
}

/// The gateway's client: declares elicitation when told to, answers it, records progress.
#[derive(Clone, Default)]
struct Client {
    elicitation: bool,
    asked: Arc<Mutex<Vec<String>>>,
    progress: Arc<Mutex<Vec<f64>>>,
    /// Told of each log message the client receives.
    logged: Arc<tokio::sync::Notify>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.elicitation {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("relay-test", "1"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = serde_json::to_value(&request)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or_default();
        self.asked
            .lock()
            .map_err(|_| ErrorData::internal_error("poisoned", None))?
            .push(message);
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({"username": "ada", "email": "ada@example.com"})))
    }

    async fn on_logging_message(
        &self,
        _params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logged.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Ok(mut seen) = self.progress.lock() {
            seen.push(params.progress);
        }
    }
}

/// Once the session's follower of the fixture's events runs: a log message of the server
/// (logging at info) has reached the client.
async fn followed(
    setup: &Setup,
    session: &RunningService<RoleClient, Client>,
    client: &Client,
) -> anyhow::Result<()> {
    session
        .peer()
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Info,
        ))
        .await?;
    setup
        .manager
        .call_tool("fixture", "test_tool_with_logging", None)
        .await?;
    tokio::time::timeout(Duration::from_secs(20), client.logged.notified()).await?;
    Ok(())
}

async fn connect(url: &str, client: Client) -> anyhow::Result<RunningService<RoleClient, Client>> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(KEY),
    );
    Ok(client.serve(transport).await?)
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn elicitation_reaches_the_client_and_its_answer_completes_the_call() -> anyhow::Result<()> {
    let setup = setup().await?;
    for url in [
        format!("{}/fixture", setup.served.url),
        setup.served.url.clone(),
    ] {
        let name = if url.ends_with("/fixture") {
            "test_elicitation"
        } else {
            "fixture__test_elicitation"
        };
        let client = Client {
            elicitation: true,
            ..Client::default()
        };
        let session = connect(&url, client.clone()).await?;
        let args = json!({"message": "Who are you?"}).as_object().cloned();
        let result = session
            .call_tool(CallToolRequestParams::new(name).with_arguments(args.unwrap_or_default()))
            .await?;
        assert_eq!(
            *client
                .asked
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?,
            vec!["Who are you?".to_owned()],
            "{url}"
        );
        let text = text_of(&result);
        assert!(
            text.starts_with("User response: ")
                && text.contains("\"accept\"")
                && text.contains("ada@example.com"),
            "{url}: {text}"
        );
        session.cancel().await?;
    }
    setup.manager.stop_all().await;
    Ok(())
}

#[tokio::test]
async fn elicitation_is_refused_with_the_reason_when_the_client_did_not_declare_it()
-> anyhow::Result<()> {
    let setup = setup().await?;
    let session = connect(&format!("{}/fixture", setup.served.url), Client::default()).await?;
    let args = json!({"message": "Who are you?"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let result = session
        .call_tool(CallToolRequestParams::new("test_elicitation").with_arguments(args))
        .await?;
    assert_eq!(result.is_error, Some(true));
    let text = text_of(&result);
    assert!(
        text.contains("did not declare the elicitation capability"),
        "{text}"
    );
    session.cancel().await?;
    setup.manager.stop_all().await;
    Ok(())
}

/// A client that sends `notifications/initialized` again and again starts one set of
/// followers, not one per notification.
#[tokio::test]
async fn initialized_sent_again_starts_no_more_followers() -> anyhow::Result<()> {
    let setup = setup().await?;
    let client = Client::default();
    let session = connect(&setup.served.url, client.clone()).await?;
    let followers = || setup.manager.server_event_followers("fixture");
    followed(&setup, &session, &client).await?;
    assert_eq!(followers()?, 1);
    for _ in 0..3 {
        session.peer().notify_initialized().await?;
        // A round trip after each: the notification was read before its answer went out.
        session.list_tools(None).await?;
    }
    session.list_tools(None).await?;
    assert_eq!(followers()?, 1);
    session.cancel().await?;
    setup.manager.stop_all().await;
    Ok(())
}

/// A session whose bot loses a server (its binding disabled) hears nothing more of it: its
/// follower of that server's notifications ends at the next one.
#[tokio::test]
async fn a_session_hears_nothing_more_of_a_server_its_bot_lost() -> anyhow::Result<()> {
    let setup = setup().await?;
    let client = Client::default();
    let session = connect(&setup.served.url, client.clone()).await?;
    let followers = || setup.manager.server_event_followers("fixture");
    followed(&setup, &session, &client).await?;
    assert_eq!(followers()?, 1);
    let (bot, server) = &setup.ids;
    let disabled = BindingSpec {
        enabled: false,
        ..BindingSpec::default()
    };
    setup.store.bind(bot, server, &disabled).await?;
    // The server logs (for another user of it, say): the follower sees it and ends.
    setup
        .manager
        .call_tool("fixture", "test_tool_with_logging", None)
        .await?;
    tokio::time::timeout(
        Duration::from_secs(20),
        setup.manager.server_event_followers_gone("fixture"),
    )
    .await??;
    assert_eq!(followers()?, 0);
    session.cancel().await?;
    setup.manager.stop_all().await;
    Ok(())
}

#[tokio::test]
async fn progress_arrives_in_order_before_the_result() -> anyhow::Result<()> {
    let setup = setup().await?;
    let client = Client::default();
    let session = connect(&format!("{}/fixture", setup.served.url), client.clone()).await?;
    let request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
        CallToolRequestParams::new("test_tool_with_progress"),
    ));
    let handle = session
        .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
        .await?;
    let answer = handle.await_response().await?;
    assert!(
        matches!(answer, ServerResult::CallToolResult(_)),
        "{answer:?}"
    );
    assert_eq!(
        *client
            .progress
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?,
        vec![0.0, 50.0, 100.0]
    );
    session.cancel().await?;
    setup.manager.stop_all().await;
    Ok(())
}

#[tokio::test]
async fn resources_and_prompts_under_merged_names_and_under_their_own() -> anyhow::Result<()> {
    let setup = setup().await?;
    let merged = connect(&setup.served.url, Client::default()).await?;
    let uris: Vec<String> = merged
        .list_all_resources()
        .await?
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    assert_eq!(
        uris,
        vec![
            "botcraft://fixture/test://static-text",
            "botcraft://fixture/test://static-binary",
            "botcraft://fixture/test://watched-resource"
        ]
    );
    let read = merged
        .read_resource(ReadResourceRequestParams::new(
            "botcraft://fixture/test://template/7/data",
        ))
        .await?;
    assert_eq!(
        serde_json::to_value(&read.contents)?,
        json!([{"uri": "botcraft://fixture/test://template/7/data", "mimeType": "application/json", "text": "{\"data\":\"Data for ID: 7\",\"id\":\"7\",\"templateTest\":true}"}])
    );
    let prompts: Vec<String> = merged
        .list_all_prompts()
        .await?
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert!(
        prompts.contains(&"fixture__test_simple_prompt".to_owned()),
        "{prompts:?}"
    );
    let prompt = merged
        .get_prompt(GetPromptRequestParams::new("fixture__test_simple_prompt"))
        .await?;
    assert_eq!(
        serde_json::to_value(&prompt.messages)?,
        json!([{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}])
    );
    let unknown = merged
        .read_resource(ReadResourceRequestParams::new("test://static-text"))
        .await;
    assert!(unknown.is_err(), "an unqualified URI is not routed on /mcp");
    merged.cancel().await?;

    let single = connect(&format!("{}/fixture", setup.served.url), Client::default()).await?;
    let read = single
        .read_resource(ReadResourceRequestParams::new("test://static-text"))
        .await?;
    assert_eq!(
        serde_json::to_value(&read.contents)?,
        json!([{"uri": "test://static-text", "mimeType": "text/plain", "text": "This is the content of the static text resource."}])
    );
    let tools: Vec<String> = single
        .list_all_tools()
        .await?
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(tools.contains(&"test_simple_text".to_owned()), "{tools:?}");
    single.cancel().await?;
    setup.manager.stop_all().await;
    Ok(())
}

#[tokio::test]
async fn a_server_the_bot_does_not_bind_is_refused_at_initialize() -> anyhow::Result<()> {
    let setup = setup().await?;
    let refused = connect(&format!("{}/other", setup.served.url), Client::default()).await;
    let error = format!(
        "{:?}",
        anyhow::Context::context(refused.err(), "initialize must fail")?
    );
    assert!(error.contains("Unknown MCP server: other"), "{error}");
    setup.manager.stop_all().await;
    Ok(())
}

/// One stateless 2026-07-28 `tools/call` to `url` (no session; the request names its
/// revision, client and capabilities in `_meta`); the JSON-RPC answer.
async fn stateless_call(url: &str, params: serde_json::Value) -> anyhow::Result<serde_json::Value> {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}
    });
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(KEY)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
        .send()
        .await?;
    let is_sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let text = response.text().await?;
    let body = if is_sse {
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|data| !data.is_empty())
            .unwrap_or_default()
            .to_owned()
    } else {
        text
    };
    Ok(serde_json::from_str(&body)?)
}

#[tokio::test]
async fn a_2026_client_gets_the_server_s_input_required_result_and_its_retry_completes()
-> anyhow::Result<()> {
    let setup = setup().await?;
    let url = format!("{}/fixture", setup.served.url);
    let tool = "test_input_required_result_elicitation";
    let first = stateless_call(&url, json!({"name": tool, "arguments": {}})).await?;
    let asked = &first["result"];
    assert_eq!(asked["resultType"], "input_required", "{first}");
    assert_eq!(
        asked["inputRequests"]["user_name"]["method"], "elicitation/create",
        "{first}"
    );
    let mut retry = json!({"name": tool, "arguments": {},
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}});
    if let Some(state) = asked.get("requestState") {
        retry["requestState"] = state.clone();
    }
    let done = stateless_call(&url, retry).await?;
    assert_eq!(
        done["result"]["content"],
        json!([{"type": "text", "text": "Hello, Ada!"}]),
        "{done}"
    );
    assert_eq!(done["result"]["resultType"], "complete");
    // A 2025-11-25 session never gets one: the server is not asked as 2026-07-28 for it.
    let session = connect(&url, Client::default()).await?;
    let refused = session
        .call_tool(CallToolRequestParams::new(tool))
        .await
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    assert!(
        refused.contains("requires negotiated protocol version 2026-07-28"),
        "{refused}"
    );
    session.cancel().await?;
    setup.manager.stop_all().await;
    Ok(())
}

/// A client's `logging/setLevel` is its session's filter and goes no further: the fixture's
/// connection is every session's, so one client's `emergency`, sent after another client asked
/// for `info`, must not silence the server for that other client.
#[tokio::test]
async fn a_sessions_log_level_is_its_own_and_never_reaches_the_shared_server() -> anyhow::Result<()>
{
    let setup = setup().await?;
    let client = Client::default();
    let listening = connect(&setup.served.url, client.clone()).await?;
    listening
        .peer()
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Info,
        ))
        .await?;
    let quiet = connect(&setup.served.url, Client::default()).await?;
    quiet
        .peer()
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Emergency,
        ))
        .await?;
    setup
        .manager
        .call_tool("fixture", "test_tool_with_logging", None)
        .await?;
    tokio::time::timeout(Duration::from_secs(20), client.logged.notified())
        .await
        .map_err(|_| anyhow::anyhow!("the info-level client heard no log message"))?;
    quiet.cancel().await?;
    listening.cancel().await?;
    setup.manager.stop_all().await;
    Ok(())
}

/// How many URIs the fixture's connection is subscribed to (it counts them itself).
async fn subscribed_upstream(setup: &Setup) -> anyhow::Result<String> {
    let touched = setup
        .manager
        .call_tool("fixture", "test_touch_resource", None)
        .await?;
    Ok(text_of(&touched))
}

/// A subscription belongs to the session that made it: another session's unsubscribe of the
/// same URI (one it never subscribed to, or its own while the first still holds it) does not
/// end it upstream; the last holder's does. A URI longer than BotCraft follows is refused.
#[tokio::test]
async fn one_session_cannot_end_another_sessions_subscription() -> anyhow::Result<()> {
    use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
    let setup = setup().await?;
    let uri = "botcraft://fixture/test://static-text";
    let victim = connect(&setup.served.url, Client::default()).await?;
    let other = connect(&setup.served.url, Client::default()).await?;
    // (who, subscribes or unsubscribes, how many URIs the fixture's connection then follows)
    let steps = [
        ("victim", true, None),
        ("other", false, Some(1)),
        ("other", true, None),
        ("other", false, Some(1)),
        ("victim", false, Some(0)),
    ];
    for (at, (who, on, following)) in steps.into_iter().enumerate() {
        let peer = if who == "victim" {
            victim.peer()
        } else {
            other.peer()
        };
        if on {
            peer.subscribe(SubscribeRequestParams::new(uri)).await?;
        } else {
            peer.unsubscribe(UnsubscribeRequestParams::new(uri)).await?;
        }
        if let Some(count) = following {
            assert_eq!(
                subscribed_upstream(&setup).await?,
                format!("updated {count} subscribed resource(s)"),
                "step {at}: {who} {}",
                if on { "subscribed" } else { "unsubscribed" }
            );
        }
    }
    let long = format!("botcraft://fixture/test://{}", "x".repeat(9 * 1024));
    let refused = victim
        .peer()
        .subscribe(SubscribeRequestParams::new(long))
        .await;
    assert!(
        format!("{refused:?}").contains("BotCraft follows URIs of at most 8192 bytes"),
        "{refused:?}"
    );
    victim.cancel().await?;
    other.cancel().await?;
    setup.manager.stop_all().await;
    Ok(())
}
