//! How a turn reaches MCP tools without knowing the MCP manager: the
//! [`ToolExecutor`] trait (implemented by `http-api`'s executor over `toolset`, by fakes in
//! tests), its result [`ToolResultContent`] and its [`ToolCallError`].
//! Names are qualified (`server__tool`, the rule of `toolset::naming`); the executor
//! routes them through its reverse map, never by prefix.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::tool_schema::ToolDefinition;

/// Calls MCP tools by qualified name.
pub trait ToolExecutor: Send + Sync {
    /// Every tool this executor offers to the bot, under qualified names.
    fn definitions(&self) -> Vec<ToolDefinition>;

    /// Calls a tool. The executor stops the call (and tells the server)
    /// when `cancel` fires.
    fn call<'a>(
        &'a self,
        qualified_name: &'a str,
        input: Value,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ToolResultContent, ToolCallError>>;

    /// The deadline of one call of this tool (its server's timeout); `None`
    /// uses the turn's default.
    fn timeout(&self, qualified_name: &str) -> Option<Duration> {
        let _ = qualified_name;
        None
    }

    /// Where a call of this name goes now (its server and the server's own name for the
    /// tool), which an approval is bound to; `None` when the name leads nowhere.
    fn target(&self, qualified_name: &str) -> Option<crate::CallTarget> {
        let _ = qualified_name;
        None
    }
}

/// What a tool returned, flattened for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResultContent {
    /// The text blocks of the result, joined; other blocks described.
    pub text: String,
    /// The server marked the result `isError`: the model is told it failed.
    pub is_error: bool,
    /// The result's images (`text` describes them too, for a model that takes none).
    pub images: Vec<crate::ToolImage>,
}

impl ToolResultContent {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
            images: Vec::new(),
        }
    }
}

/// A call that produced no result. Each is told to the model as an error
/// result and the turn goes on; only the turn's own cancellation ends it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolCallError {
    #[error("unknown tool `{name}`")]
    UnknownTool { name: String },
    /// The server could not be started or reached.
    #[error("MCP server `{server}` is unavailable: {reason}")]
    ServerUnavailable { server: String, reason: String },
    /// The server answered with a protocol error.
    #[error("MCP server `{server}` rejected the call: {message}")]
    Protocol { server: String, message: String },
    #[error("the tool call timed out after {after:?}")]
    Timeout { after: Duration },
    #[error("the tool call was cancelled")]
    Cancelled,
}
