//! Typed errors: each says which server, in which state, and what the process left behind
//! (exit status, the tail of its stderr).

use std::sync::Arc;
use std::time::Duration;

use mcp_client::ExitInfo;
use thiserror::Error;

use crate::state::ServerState;

/// Everything the lifecycle can fail with. Cheap to clone (a shared start hands the same
/// error to every waiter).
#[derive(Debug, Clone, Error)]
pub enum LifecycleError {
    #[error("no MCP server named {server:?}")]
    UnknownServer { server: String },
    #[error(
        "MCP server {server:?} is not configured: env {key} needs ${{{variable}}}, which is not set"
    )]
    NotConfigured {
        server: String,
        key: String,
        variable: String,
    },
    #[error(
        "MCP server {server:?} is not allowed to start: env {key} asks for ${{{variable}}}, {}",
        if *.secret {
            "one of BotCraft's own secrets, which never reach an MCP server".to_owned()
        } else {
            format!("which MCP servers may not read (allowed: {allowed}; BOTCRAFT_SERVER_ENV adds names)")
        }
    )]
    EnvNotAllowed {
        server: String,
        key: String,
        variable: String,
        secret: bool,
        allowed: String,
    },
    #[error("MCP server {server:?} cannot be sandboxed: {reason}")]
    Sandbox { server: String, reason: String },
    #[error("MCP server {server:?}: header {name:?} does not resolve to a valid HTTP header")]
    BadHeader { server: String, name: String },
    #[error("MCP server {server:?}: cannot connect to {url} over {transport}: {reason}")]
    Connect {
        server: String,
        /// As shown: without its query ([`mcp_client::shown_url`]).
        url: String,
        transport: &'static str,
        reason: String,
    },
    #[error(
        "MCP server {server:?} ({url}) needs authorization before its tools can be used{hint}, then try again"
    )]
    NeedsAuth {
        server: String,
        url: String,
        /// Set when it is a principal's own connection ([`crate::principals`]) that needs it.
        principal: Option<String>,
        /// What an operator does about it, in the app's words ([`crate::ReconnectHint`]),
        /// with its leading separator; empty on the errors passed inside the manager.
        hint: String,
        /// The server's `WWW-Authenticate` challenge (never shown: it is for the next
        /// authorization's discovery and scopes).
        challenge: Option<String>,
    },
    #[error("MCP server {server:?}: OAuth with {url} failed: {reason}")]
    OAuth {
        server: String,
        url: String,
        reason: String,
    },
    #[error("MCP server {server:?} cannot be authorized with OAuth: {reason}")]
    OAuthUnavailable { server: String, reason: String },
    #[error(
        "this authorization is unknown or expired (each may be completed once, within 10 minutes); start it again"
    )]
    OAuthUnknownState,
    #[error("MCP server {server:?}: the connection to {url} was lost; the next use reconnects")]
    Disconnected {
        server: String,
        url: String,
        /// The request was never delivered (the send failed): safe to send again.
        unsent: bool,
    },
    #[error("MCP server {server:?}: cannot start {command:?}")]
    Spawn {
        server: String,
        command: String,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error("MCP server {server:?} did not answer initialize within {timeout:?}")]
    InitTimeout {
        server: String,
        timeout: Duration,
        stderr_tail: Vec<String>,
    },
    #[error("MCP server {server:?} failed during initialize ({})", exit.map_or("still running".to_owned(), |e| e.to_string()))]
    InitFailed {
        server: String,
        exit: Option<ExitInfo>,
        stderr_tail: Vec<String>,
        #[source]
        source: Option<Arc<rmcp::service::ClientInitializeError>>,
    },
    #[error("MCP server {server:?} is {state}")]
    NotRunning {
        server: String,
        state: ServerState,
        exit: Option<ExitInfo>,
        stderr_tail: Vec<String>,
    },
    #[error("MCP server {server:?} exited ({exit})")]
    Exited {
        server: String,
        exit: ExitInfo,
        stderr_tail: Vec<String>,
    },
    #[error(
        "MCP server {server:?} exited during the call of {tool:?} ({exit}); it is restarted if always-on, else on its next use"
    )]
    ExitedDuringCall {
        server: String,
        tool: String,
        exit: ExitInfo,
        stderr_tail: Vec<String>,
    },
    /// The server answered nothing within `waited` (what it was asked: `asked`): it was
    /// stopped, and is being restarted.
    #[error(
        "MCP server {server:?} did not answer within {waited:?} ({asked}); it was stopped and is being restarted"
    )]
    Unresponsive {
        server: String,
        waited: Duration,
        asked: String,
    },
    #[error("MCP server {server:?} crashed {attempts} times in a row; not restarting")]
    CrashLoop { server: String, attempts: u32 },
    #[error("tool {tool:?} on MCP server {server:?} timed out after {timeout:?}")]
    CallTimeout {
        server: String,
        tool: String,
        timeout: Duration,
    },
    #[error("MCP server {server:?}: {method} timed out after {timeout:?}")]
    RequestTimeout {
        server: String,
        method: String,
        timeout: Duration,
    },
    /// The server answered a forwarded request with a JSON-RPC error: passed on unchanged.
    #[error("MCP server {server:?} refused {method}: {}", error.message)]
    Refused {
        server: String,
        method: String,
        error: rmcp::ErrorData,
    },
    /// The client of a forwarded request cancelled it (`notifications/cancelled` was sent on).
    #[error("{method} on MCP server {server:?} was cancelled")]
    Cancelled { server: String, method: String },
    #[error("MCP server {server:?}: {method} failed")]
    Request {
        server: String,
        method: &'static str,
        #[source]
        source: Arc<rmcp::ServiceError>,
    },
    #[error(
        "MCP server {server:?} failed to start ({failures} time(s) in a row: {cause}); it is left alone for {retry_in_ms} ms more, unless started explicitly"
    )]
    BackingOff {
        server: String,
        retry_in_ms: u64,
        failures: u32,
        cause: String,
    },
    #[error("MCP server {server:?} was stopped while it started")]
    StartCancelled { server: String },
    /// The server's `tools/list` went past a bound: it is refused, not followed.
    #[error("MCP server {server:?} lists more than {limit}; its list is refused")]
    ToolListTooLong { server: String, limit: ListLimit },
    #[error("MCP server {server:?} has no cached tool list (its tools were never listed)")]
    NoCachedTools { server: String },
    #[error("MCP server {server:?}: the cached tool list does not parse")]
    BadToolCache {
        server: String,
        #[source]
        source: Arc<serde_json::Error>,
    },
    #[error("the server records")]
    Records(#[source] crate::records::RecordsError),
}

impl LifecycleError {
    /// A short stable word for the kind of failure (a trace span's `error.type`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownServer { .. } => "unknown_server",
            Self::NotConfigured { .. } => "not_configured",
            Self::EnvNotAllowed { .. } => "env_not_allowed",
            Self::Sandbox { .. } => "sandbox",
            Self::BadHeader { .. } => "bad_header",
            Self::Connect { .. } => "connect",
            Self::NeedsAuth { .. } => "needs_auth",
            Self::OAuth { .. } | Self::OAuthUnavailable { .. } | Self::OAuthUnknownState => "oauth",
            Self::Disconnected { .. } => "disconnected",
            Self::Spawn { .. } => "spawn",
            Self::InitTimeout { .. } => "init_timeout",
            Self::InitFailed { .. } => "init_failed",
            Self::NotRunning { .. } => "not_running",
            Self::Exited { .. } | Self::ExitedDuringCall { .. } => "exited",
            Self::Unresponsive { .. } => "unresponsive",
            Self::CrashLoop { .. } => "crash_loop",
            Self::CallTimeout { .. } | Self::RequestTimeout { .. } => "timeout",
            Self::Refused { .. } => "jsonrpc_error",
            Self::Cancelled { .. } => "cancelled",
            Self::Request { .. } => "request",
            Self::BackingOff { .. } => "backing_off",
            Self::StartCancelled { .. } => "start_cancelled",
            Self::NoCachedTools { .. } | Self::BadToolCache { .. } => "no_tool_list",
            Self::ToolListTooLong { .. } => "tool_list_too_long",
            Self::Records(_) => "store",
        }
    }
}

/// The bound a server's tool list went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListLimit {
    Pages(usize),
    Tools(usize),
    /// Bytes of tool definitions, as JSON.
    Bytes(usize),
}

impl std::fmt::Display for ListLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pages(pages) => write!(f, "{pages} pages of tools"),
            Self::Tools(tools) => write!(f, "{tools} tools"),
            Self::Bytes(bytes) => write!(f, "{} MiB of tools", bytes / (1024 * 1024)),
        }
    }
}

impl From<crate::records::RecordsError> for LifecycleError {
    fn from(error: crate::records::RecordsError) -> Self {
        Self::Records(error)
    }
}
