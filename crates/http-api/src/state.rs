//! What every route shares: [`AppState`] (the store, the MCP manager, the providers, the
//! native tools, the config, the metrics) and [`ApiConfig`], the settings the edge parses once.

use std::sync::Arc;
use std::time::Duration;

use inference::{DEFAULT_AUTO_THRESHOLD_TOKENS, NativeToolRegistry, Providers};
use mcp_lifecycle::McpServerManager;
use observability::BotCraftMetrics;
use store::Store;
use tokio_util::sync::CancellationToken;
use toolset::Toolsets;

use crate::auth::ApiKeys;
use crate::chat_streams::{ChatStreams, StreamLimits};
use crate::redact::Redactor;
use chat_tools::ToolCatalogs;

/// Default limit of a request body: 4 MiB (a long chat history fits).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default limit of messages in one chat request.
pub const DEFAULT_MAX_CHAT_MESSAGES: usize = 1_000;

/// How approval ids are signed: a key every replica shares (from `BOTCRAFT_SECRET_KEY`), and
/// the time a person has to answer.
#[derive(Clone)]
pub struct ApprovalSettings {
    pub key: [u8; 32],
    pub ttl: Duration,
}

/// How long a person has to answer an approval request by default.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(1800);

impl Default for ApprovalSettings {
    /// A key of this process alone: approvals do not outlive it (the edge passes the shared
    /// one).
    fn default() -> Self {
        Self {
            key: rand::random(),
            ttl: DEFAULT_APPROVAL_TTL,
        }
    }
}

impl std::fmt::Debug for ApprovalSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalSettings")
            .field("key", &"[hidden]")
            .field("ttl", &self.ttl)
            .finish()
    }
}

/// The HTTP layer's settings, parsed once at the edge.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Keys accepted in `Authorization: Bearer <key>`.
    pub api_keys: ApiKeys,
    /// Requests with a larger body are refused with 413 (at once when `Content-Length`
    /// says so).
    pub max_body_bytes: usize,
    /// A chat request with more messages is refused with 413 `too_many_messages`.
    pub max_chat_messages: usize,
    /// Deadline of a native tool call (MCP calls use their server's timeouts).
    pub native_tool_timeout: Duration,
    /// After a client hangs up, how long the turn's tool calls get to wind down.
    pub cancel_grace: Duration,
    /// Output token cap per model step; `None` leaves it to the provider.
    pub max_output_tokens: Option<u32>,
    /// Removes secrets (provider keys, admin keys) from error text sent to clients.
    pub redactor: Redactor,
    /// A bot in `auto` tool loading defers once its tools' definitions pass this many
    /// tokens (`o200k_base`).
    pub auto_threshold_tokens: usize,
    /// The tool-search indexes, shared by every clone of the config. Not a setting: it lives
    /// here so the edge builds it with `..ApiConfig::default()`.
    pub catalogs: ToolCatalogs,
    /// BotCraft's OAuth client ID metadata document, served at
    /// `/oauth/client-metadata.json` when BotCraft has a public HTTPS address.
    pub oauth_client_metadata: Option<serde_json::Value>,
    /// Tools that ask first: the key approval ids are signed with and how long an answer
    /// holds.
    pub approvals: ApprovalSettings,
    /// Cancelled when this replica is going away: `/api/health/ready` answers 503
    /// ("draining") from then on, while requests are still served. Not a setting either.
    pub draining: tokio_util::sync::CancellationToken,
    /// The chat turns running now, capped in all and per key
    /// ([`crate::chat_streams::ChatStreams::new`] with the caps).
    pub chat_streams: Arc<ChatStreams>,
    /// Bytes of a turn's events buffered for a client that reads slower than the model
    /// writes; past it the turn stops reading the provider until the client catches up.
    pub chat_buffer_bytes: usize,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            api_keys: ApiKeys::default(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_chat_messages: DEFAULT_MAX_CHAT_MESSAGES,
            native_tool_timeout: Duration::from_secs(60),
            cancel_grace: Duration::from_secs(5),
            max_output_tokens: None,
            redactor: Redactor::default(),
            auto_threshold_tokens: DEFAULT_AUTO_THRESHOLD_TOKENS,
            catalogs: ToolCatalogs::default(),
            oauth_client_metadata: None,
            draining: tokio_util::sync::CancellationToken::new(),
            approvals: ApprovalSettings::default(),
            chat_streams: ChatStreams::new(StreamLimits::default()),
            chat_buffer_bytes: inference::DEFAULT_EVENT_BUFFER_BYTES,
        }
    }
}

/// Shared by every request. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub manager: Arc<McpServerManager>,
    /// Every bot's tools: names, listing, calls, bindings in memory.
    pub toolsets: Arc<Toolsets>,
    pub providers: Providers,
    /// The native tools every bot gets.
    pub native: NativeToolRegistry,
    pub config: Arc<ApiConfig>,
    /// Fired when draining ends at shutdown: running chat turns abort.
    pub shutdown: CancellationToken,
    /// Every metric BotCraft records; served at `GET /metrics`.
    pub metrics: BotCraftMetrics,
}

/// The toolsets of `store` and `manager`, MCP tools named with `native`'s names and
/// `tool_search` reserved: every face (chat, `/mcp`, the admin API) shares one.
pub fn new_toolsets(
    store: &Store,
    manager: &Arc<McpServerManager>,
    native: &NativeToolRegistry,
) -> Arc<Toolsets> {
    let reserved: Vec<String> = native
        .names()
        .map(str::to_owned)
        .chain([inference::TOOL_SEARCH.to_owned()])
        .collect();
    Toolsets::new(store.clone(), Arc::clone(manager), reserved)
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("native", &self.native)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
