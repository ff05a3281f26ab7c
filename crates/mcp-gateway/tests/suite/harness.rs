//! A fake backend, a gateway on a real socket, and a raw streamable HTTP client.

use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use futures::stream::BoxStream;
use mcp_gateway::{
    BackendError, BotTools, ExposedTool, GatewayBackend, GatewayConfig, KeyPolicy,
    ServerInstructions, mcp_router,
};
use rmcp::ServiceExt;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

pub fn tool(name: &str) -> Tool {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let Value::Object(schema) = schema else {
        unreachable!("an object literal")
    };
    Tool::new(name.to_owned(), format!("fake {name}"), Arc::new(schema))
}

/// One fake bot: (server, tool, allowed by the filter), and each server's instructions.
#[derive(Debug, Clone, Default)]
pub struct FakeBot {
    pub tools: Vec<(String, Tool, bool)>,
    pub instructions: BTreeMap<String, String>,
}

impl FakeBot {
    pub fn tool(mut self, server: &str, name: &str, allowed: bool) -> Self {
        self.tools.push((server.to_owned(), tool(name), allowed));
        self
    }

    pub fn instructions(mut self, server: &str, text: &str) -> Self {
        self.instructions.insert(server.to_owned(), text.to_owned());
        self
    }
}

/// Calls echo `{bot, server, tool, arguments}` as text; a tool named `fail` answers `isError`;
/// one named `wait` answers only when its call is cancelled (told on `waiting`, counted in
/// `cancelled`).
#[derive(Debug)]
pub struct FakeBackend {
    bots: Mutex<HashMap<String, FakeBot>>,
    changes: broadcast::Sender<String>,
    pub calls: Mutex<Vec<(String, String, String)>>,
    pub waiting: tokio::sync::Notify,
    pub cancelled: std::sync::atomic::AtomicUsize,
    /// Every server's notifications (none are sent): its receivers are the sessions'
    /// followers (`closed()` completes when the last is gone).
    pub events: broadcast::Sender<mcp_client::relay::ServerEvent>,
    /// A permit for each follower that subscribed.
    pub subscribed: tokio::sync::Semaphore,
}

impl FakeBackend {
    pub fn new(bots: impl IntoIterator<Item = (&'static str, FakeBot)>) -> Arc<Self> {
        Arc::new(Self {
            bots: Mutex::new(bots.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
            changes: broadcast::channel(16).0,
            calls: Mutex::new(Vec::new()),
            waiting: tokio::sync::Notify::new(),
            cancelled: std::sync::atomic::AtomicUsize::new(0),
            events: broadcast::channel(16).0,
            subscribed: tokio::sync::Semaphore::new(0),
        })
    }

    /// Replace a bot's tools and announce the change.
    pub fn change(&self, bot: &str, new: FakeBot) {
        if let Ok(mut bots) = self.bots.lock() {
            bots.insert(bot.to_owned(), new);
        }
        let _ = self.changes.send(bot.to_owned());
    }

    fn bot(&self, bot: &str) -> Result<FakeBot, BackendError> {
        self.bots
            .lock()
            .ok()
            .and_then(|bots| bots.get(bot).cloned())
            .ok_or_else(|| BackendError::UnknownBot {
                bot: bot.to_owned(),
            })
    }
}

impl GatewayBackend for FakeBackend {
    async fn bot_tools(&self, bot: &str) -> Result<BotTools, BackendError> {
        let fake = self.bot(bot)?;
        let allowed: Vec<(&String, &Tool)> = fake
            .tools
            .iter()
            .filter(|(_, _, allowed)| *allowed)
            .map(|(server, tool, _)| (server, tool))
            .collect();
        // Named as the toolset names them.
        let names = toolset::QualifiedToolNames::build(
            allowed
                .iter()
                .map(|(server, tool)| toolset::ToolRoute::new(*server, tool.name.to_string())),
        );
        Ok(BotTools {
            tools: allowed
                .iter()
                .filter_map(|(server, tool)| {
                    Some(ExposedTool {
                        qualified: names.qualified(server, &tool.name)?.to_owned(),
                        route: toolset::ToolRoute::new(*server, tool.name.to_string()),
                        tool: (*tool).clone(),
                    })
                })
                .collect(),
            failures: Vec::new(),
        })
    }

    async fn bot_instructions(&self, bot: &str) -> Result<Vec<ServerInstructions>, BackendError> {
        Ok(self
            .bot(bot)?
            .instructions
            .iter()
            .map(|(server, text)| ServerInstructions {
                server: server.clone(),
                text: text.clone(),
            })
            .collect())
    }

    async fn call_tool(
        &self,
        bot: &str,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: CancellationToken,
    ) -> Result<CallToolResult, BackendError> {
        let fake = self.bot(bot)?;
        let allowed = fake
            .tools
            .iter()
            .any(|(s, t, allowed)| s == server && t.name == tool && *allowed);
        if !allowed {
            return Err(BackendError::NotAllowed {
                bot: bot.to_owned(),
                server: server.to_owned(),
                tool: tool.to_owned(),
            });
        }
        if let Ok(mut calls) = self.calls.lock() {
            calls.push((bot.to_owned(), server.to_owned(), tool.to_owned()));
        }
        if tool == "wait" {
            self.waiting.notify_one();
            cancel.cancelled().await;
            self.cancelled
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Err(BackendError::Cancelled);
        }
        let text =
            json!({"bot": bot, "server": server, "tool": tool, "arguments": arguments}).to_string();
        Ok(if tool == "fail" {
            CallToolResult::error(vec![ContentBlock::text("the fake tool failed")])
        } else {
            CallToolResult::success(vec![ContentBlock::text(text)])
        })
    }

    fn server_events(
        &self,
        _server: &str,
    ) -> Option<broadcast::Receiver<mcp_client::relay::ServerEvent>> {
        let events = self.events.subscribe();
        self.subscribed.add_permits(1);
        Some(events)
    }

    fn tool_list_changes(&self, bot: &str) -> BoxStream<'static, ()> {
        let bot = bot.to_owned();
        futures::stream::unfold(self.changes.subscribe(), move |mut events| {
            let bot = bot.clone();
            async move {
                loop {
                    match events.recv().await {
                        Ok(changed) if changed == bot => return Some(((), events)),
                        Ok(_) => continue,
                        Err(broadcast::error::RecvError::Lagged(_)) => return Some(((), events)),
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            }
        })
        .boxed()
    }
}

/// A gateway served on 127.0.0.1.
pub struct Served {
    pub url: String,
    pub address: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    pub async fn start<B: GatewayBackend>(
        backend: Arc<B>,
        policy: KeyPolicy,
        port: u16,
    ) -> anyhow::Result<Self> {
        let config = GatewayConfig::default();
        Self::serve(mcp_router(backend, policy, &config), port, config.shutdown).await
    }

    pub async fn serve(
        app: axum::Router,
        port: u16,
        sessions: CancellationToken,
    ) -> anyhow::Result<Self> {
        let listener =
            tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
        let address = listener.local_addr()?;
        let stop = CancellationToken::new();
        let until = stop.clone();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { until.cancelled().await })
                .await;
        });
        let stop_sessions = stop.clone();
        tokio::spawn(async move {
            stop_sessions.cancelled().await;
            sessions.cancel();
        });
        Ok(Self {
            url: format!("http://{address}/mcp"),
            address,
            stop,
            task,
        })
    }

    /// Stop serving and wait until the socket is closed.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

/// One HTTP answer of `/mcp`.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub session: Option<String>,
    /// `Content-Type` and `Content-Length` as sent.
    pub content_type: Option<String>,
    pub content_length: Option<u64>,
    /// The JSON body, or the JSON-RPC message of the SSE stream that answers the request.
    pub body: Value,
    pub text: String,
}

/// A raw streamable HTTP client.
#[derive(Debug, Clone)]
pub struct Http {
    pub client: reqwest::Client,
    pub url: String,
}

impl Http {
    pub fn new(url: &str) -> Self {
        Self {
            client: reqwest::Client::new(),
            url: url.to_owned(),
        }
    }

    pub async fn send(
        &self,
        method: reqwest::Method,
        key: Option<&str>,
        session: Option<&str>,
        body: Option<Value>,
    ) -> anyhow::Result<Reply> {
        let mut request = self
            .client
            .request(method, &self.url)
            .header("accept", "application/json, text/event-stream");
        if let Some(key) = key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.context("send")?;
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let content_length = response.content_length();
        let is_sse = content_type
            .as_deref()
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let text = if is_sse {
            first_sse_answer(response).await?
        } else {
            response.text().await?
        };
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Reply {
            status,
            session,
            content_type,
            content_length,
            body,
            text,
        })
    }

    pub async fn post(
        &self,
        key: Option<&str>,
        session: Option<&str>,
        body: Value,
    ) -> anyhow::Result<Reply> {
        self.send(reqwest::Method::POST, key, session, Some(body))
            .await
    }

    /// `initialize` + `notifications/initialized`; the reply of initialize.
    pub async fn initialize(&self, key: Option<&str>) -> anyhow::Result<Reply> {
        let reply = self
            .post(
                key,
                None,
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}}}),
            )
            .await?;
        if let (Some(session), true) = (&reply.session, reply.body.get("result").is_some()) {
            let done = self
                .post(
                    key,
                    Some(session),
                    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                )
                .await?;
            anyhow::ensure!(done.status == 202, "initialized answered {}", done.status);
        }
        Ok(reply)
    }

    pub async fn list(&self, key: Option<&str>, session: Option<&str>) -> anyhow::Result<Reply> {
        self.post(
            key,
            session,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await
    }

    pub async fn call(
        &self,
        key: Option<&str>,
        session: Option<&str>,
        name: &str,
        arguments: Value,
    ) -> anyhow::Result<Reply> {
        self.post(
            key,
            session,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}}),
        )
        .await
    }
}

/// The data of the first SSE event that is a JSON-RPC answer (has an `id`).
async fn first_sse_answer(response: reqwest::Response) -> anyhow::Result<String> {
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    while let Some(chunk) = stream.next().await {
        buffer.push_str(&String::from_utf8_lossy(&chunk?));
        for line in buffer.lines() {
            if let Some(data) = line.strip_prefix("data:") {
                let data = data.trim();
                if let Ok(value) = serde_json::from_str::<Value>(data)
                    && value.get("id").is_some()
                {
                    return Ok(data.to_owned());
                }
            }
        }
    }
    Ok(buffer)
}

/// The names of a `tools/list` reply.
pub fn names(reply: &Reply) -> Vec<String> {
    reply.body["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The text of a `tools/call` reply's first content block.
pub fn call_text(reply: &Reply) -> String {
    reply.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A client handler that forwards `tools/list_changed` to a channel.
#[derive(Clone)]
pub struct Listener {
    changed: mpsc::UnboundedSender<()>,
}

impl rmcp::ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("gateway-test", "0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

pub async fn rmcp_client(
    url: &str,
    key: &str,
) -> anyhow::Result<(
    rmcp::service::RunningService<RoleClient, Listener>,
    mpsc::UnboundedReceiver<()>,
)> {
    let (changed, receiver) = mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(key),
    );
    let client = Listener { changed }.serve(transport).await?;
    Ok((client, receiver))
}
