//! The errors of loading a toolset and of calling one of its tools.

use std::time::Duration;

use mcp_lifecycle::LifecycleError;
use store::StoreError;

/// Why a bot's toolset could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ToolsetError {
    #[error("no bot {bot:?}")]
    UnknownBot { bot: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a tool call did not return a result. Each face (the chat turn, `/mcp`, the admin
/// API) presents these its own way; the variant says whose fault it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("no bot {bot:?}")]
    UnknownBot { bot: String },
    /// Not bound, binding disabled, or outside the binding's tool filter.
    #[error("bot {bot:?} may not call {tool:?} on {server:?}")]
    NotAllowed {
        bot: String,
        server: String,
        tool: String,
    },
    #[error("tool {tool:?} on {server:?} timed out after {after:?}")]
    Timeout {
        server: String,
        tool: String,
        after: Duration,
    },
    #[error("the call was cancelled")]
    Cancelled,
    /// The server could not be started, exited, or stopped answering.
    #[error("MCP server {server:?} is unavailable: {reason}")]
    Unavailable { server: String, reason: String },
    /// The server answered the request with a JSON-RPC error.
    #[error("MCP server {server:?} refused the call: {message}")]
    Protocol { server: String, message: String },
    /// The server answered a forwarded request with this JSON-RPC error: passed on as is.
    #[error("MCP server {server:?} answered error {code}: {message}")]
    Refused {
        server: String,
        code: i32,
        message: String,
        data: Option<serde_json::Value>,
    },
    /// The store failed.
    #[error("internal error: {cause}")]
    Internal { cause: String },
}

impl CallError {
    /// The manager's error for a call of `tool` on `server`, mapped once.
    pub fn from_lifecycle(error: LifecycleError, server: &str, tool: &str) -> Self {
        match error {
            LifecycleError::CallTimeout { timeout, .. } => Self::Timeout {
                server: server.to_owned(),
                tool: tool.to_owned(),
                after: timeout,
            },
            LifecycleError::RequestTimeout {
                timeout, method, ..
            } => Self::Timeout {
                server: server.to_owned(),
                tool: method,
                after: timeout,
            },
            LifecycleError::Refused { error, .. } => Self::Refused {
                server: server.to_owned(),
                code: error.code.0,
                message: error.message.to_string(),
                data: error.data,
            },
            LifecycleError::Cancelled { .. } => Self::Cancelled,
            LifecycleError::Request { .. } => Self::Protocol {
                server: server.to_owned(),
                message: error.to_string(),
            },
            LifecycleError::Records(source) => Self::Internal {
                cause: source.to_string(),
            },
            // Not configured, not startable, exited, unresponsive, crash-looping, …
            other => Self::Unavailable {
                server: server.to_owned(),
                reason: other.to_string(),
            },
        }
    }
}

impl From<ToolsetError> for CallError {
    fn from(error: ToolsetError) -> Self {
        match error {
            ToolsetError::UnknownBot { bot } => Self::UnknownBot { bot },
            ToolsetError::Store(source) => Self::Internal {
                cause: source.to_string(),
            },
        }
    }
}
