//! What the gateway needs from BotCraft, as a trait: [`GatewayBackend`]. The gateway never
//! touches the manager or the store itself; the real implementation is
//! [`crate::adapter::ManagerBackend`], tests use fakes.
//!
//! Bots are named by their **name** (what a bearer key maps to). A bot's tools come named
//! (`server__tool`, the `toolset` crate's naming, the same names the chat model sees); calls
//! go back by route (server, raw tool name).

use std::future::Future;

use futures::stream::BoxStream;
use mcp_client::relay::ServerEvent;
use mcp_lifecycle::ForwardFor;
use rmcp::model::{CallToolResult, ClientRequest, JsonObject, ServerResult, Tool};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use toolset::ToolRoute;

/// One tool a bot may use, named.
#[derive(Debug, Clone, PartialEq)]
pub struct ExposedTool {
    /// The name the client calls it by.
    pub qualified: String,
    pub route: ToolRoute,
    /// The tool as its server lists it (raw name).
    pub tool: Tool,
}

/// A server's `instructions`, forwarded in the gateway's `initialize` (toolset's type: one
/// owner for what a bot's servers declared).
pub use toolset::ServerInstructions;

/// A bot's tools as the backend sees them right now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BotTools {
    pub tools: Vec<ExposedTool>,
    /// Why some servers could not list their tools. Logged, never sent to the client (a
    /// cause may carry paths or stderr).
    pub failures: Vec<String>,
}

/// Why the backend refused or failed. The gateway maps each variant to what the MCP client
/// sees; the texts are for logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The bot a key maps to does not exist (a configuration error).
    #[error("no bot named {bot:?}")]
    UnknownBot { bot: String },
    /// The bot may not use this tool (not bound, binding disabled, outside the filter).
    #[error("bot {bot:?} may not call {tool:?} on {server:?}")]
    NotAllowed {
        bot: String,
        server: String,
        tool: String,
    },
    /// The call ran past the server's timeout.
    #[error("tool {tool:?} on {server:?} timed out")]
    Timeout { server: String, tool: String },
    /// The client cancelled the call.
    #[error("the call was cancelled")]
    Cancelled,
    /// The server could not be started or stopped answering.
    #[error("MCP server {server:?} is unavailable: {cause}")]
    Unavailable { server: String, cause: String },
    /// The server answered with this JSON-RPC error: the client sees it unchanged.
    #[error("the server answered error {code}: {message}")]
    Refused {
        code: i32,
        message: String,
        data: Option<serde_json::Value>,
    },
    /// This backend relays tools only.
    #[error("this backend does not relay {method}")]
    Unsupported { method: String },
    /// The store or another internal part failed.
    #[error("internal error: {cause}")]
    Internal { cause: String },
}

/// BotCraft as the gateway sees it: a bot's tools, calls routed to a server, and tool-list
/// changes. Implementations apply the bot's bindings (enabled, tool filter) on every call,
/// not only on listing, and start servers lazily under their own timeouts.
pub trait GatewayBackend: Send + Sync + 'static {
    /// The tools bot `bot` may use, from the cached tool lists: listing starts no server.
    fn bot_tools(&self, bot: &str) -> impl Future<Output = Result<BotTools, BackendError>> + Send;

    /// The instructions of the bot's enabled servers, in server-name order. Starts nothing.
    fn bot_instructions(
        &self,
        bot: &str,
    ) -> impl Future<Output = Result<Vec<ServerInstructions>, BackendError>> + Send;

    /// Call raw tool `tool` on `server` for `bot`. Refused with
    /// [`BackendError::NotAllowed`] when the bot may not use it; ends with
    /// [`BackendError::Cancelled`] soon after `cancel` fires.
    fn call_tool(
        &self,
        bot: &str,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<CallToolResult, BackendError>> + Send;

    /// One item each time the tools of `bot` may have changed (a server's list changed, a
    /// server started). Spurious items are fine: the gateway compares what a session last
    /// listed with the fresh list before it tells the client. Ends when the backend shuts
    /// down.
    fn tool_list_changes(&self, bot: &str) -> BoxStream<'static, ()>;

    /// The servers `bot` may use (bound, binding enabled), in name order. Starts nothing.
    fn bot_servers(
        &self,
        bot: &str,
    ) -> impl Future<Output = Result<Vec<String>, BackendError>> + Send {
        let bot = bot.to_owned();
        async move {
            let tools = self.bot_tools(&bot).await?;
            let mut servers: Vec<String> =
                tools.tools.into_iter().map(|t| t.route.server).collect();
            servers.sort();
            servers.dedup();
            Ok(servers)
        }
    }

    /// Whether [`Self::forward`] relays requests (else it refuses every one with
    /// [`BackendError::Unsupported`], and a tool call goes through [`Self::call_tool`]).
    fn forwards(&self) -> bool {
        false
    }

    /// Forward any request to `server` for `bot` (resources, prompts, completion, logging,
    /// a tool call with its `_meta`), with `target` answering the server's requests and
    /// hearing progress. Refused with [`BackendError::NotAllowed`] when the bot may not use
    /// the server (or, for `tools/call`, that tool).
    fn forward(
        &self,
        bot: &str,
        server: &str,
        request: ClientRequest,
        target: ForwardFor,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<ServerResult, BackendError>> + Send {
        let _ = (bot, server, target, cancel);
        let method = request.method().to_owned();
        async move { Err(BackendError::Unsupported { method }) }
    }

    /// The notifications of `server` from now on; `None` when the backend relays none.
    fn server_events(&self, server: &str) -> Option<broadcast::Receiver<ServerEvent>> {
        let _ = server;
        None
    }

    /// Who holds which of `server`'s resource subscriptions, shared by every session of
    /// every face over this backend's servers; `None` when the backend keeps no count (each
    /// session's unsubscribe then goes on as it came, for what the session holds).
    fn subscribers(&self, server: &str) -> Option<std::sync::Arc<mcp_client::Subscribers>> {
        let _ = server;
        None
    }
}
