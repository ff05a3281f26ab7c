//! [`ToolsetBackend`]: the [`GatewayBackend`] over BotCraft's [`Toolsets`], so the HTTP layer
//! only constructs it.
//!
//! - A bot's tools are its toolset from the cached tool lists ([`ListPolicy::CachedOnly`]):
//!   listing them starts no server. A server never listed is left out (and logged) until
//!   something starts it; its tools then arrive as `tools/list_changed`.
//! - Every call goes through [`Toolsets::call`]: the binding is checked again (in memory,
//!   exact: the store's version), the server is leased for the call and started if needed,
//!   the call runs under the server's timeout and ends early when the client cancels. No
//!   store query on the warm path.
//! - Changes are the toolsets' change stream (a server's list changed, a write of servers,
//!   bots or bindings); the gateway compares what a session last listed before telling it.

use std::sync::Arc;

use futures::stream::BoxStream;
use mcp_client::relay::ServerEvent;
use mcp_lifecycle::ForwardFor;
use rmcp::model::{CallToolResult, ClientRequest, JsonObject, ServerResult};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use toolset::{CallError, ListPolicy, ToolRoute, ToolsetError, Toolsets};

use crate::backend::{BackendError, BotTools, ExposedTool, GatewayBackend, ServerInstructions};

/// The gateway's backend in BotCraft.
#[derive(Debug, Clone)]
pub struct ToolsetBackend {
    toolsets: Arc<Toolsets>,
    metrics: Option<observability::BotCraftMetrics>,
}

impl ToolsetBackend {
    pub fn new(toolsets: Arc<Toolsets>) -> Self {
        Self {
            toolsets,
            metrics: None,
        }
    }

    /// Count every call in `metrics` (`botcraft_tool_calls_total{path="mcp"}`).
    pub fn with_metrics(mut self, metrics: observability::BotCraftMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }
}

/// The metrics outcome of a call that answered with `isError` = `is_error`, or failed.
fn outcome(is_error: Result<Option<bool>, &CallError>) -> observability::ToolCallOutcome {
    use observability::ToolCallOutcome;
    match is_error {
        Ok(Some(true)) => ToolCallOutcome::ToolError,
        Ok(_) => ToolCallOutcome::Ok,
        Err(CallError::Timeout { .. }) => ToolCallOutcome::Timeout,
        Err(CallError::Cancelled) => ToolCallOutcome::Cancelled,
        Err(_) => ToolCallOutcome::Failed,
    }
}

fn load_error(error: ToolsetError) -> BackendError {
    match error {
        ToolsetError::UnknownBot { bot } => BackendError::UnknownBot { bot },
        ToolsetError::Store(source) => BackendError::Internal {
            cause: source.to_string(),
        },
    }
}

fn call_error(error: CallError) -> BackendError {
    match error {
        CallError::UnknownBot { bot } => BackendError::UnknownBot { bot },
        CallError::NotAllowed { bot, server, tool } => {
            BackendError::NotAllowed { bot, server, tool }
        }
        CallError::Timeout { server, tool, .. } => BackendError::Timeout { server, tool },
        CallError::Cancelled => BackendError::Cancelled,
        CallError::Unavailable { server, reason } => BackendError::Unavailable {
            server,
            cause: reason,
        },
        CallError::Protocol { server, message } => BackendError::Unavailable {
            server,
            cause: message,
        },
        CallError::Refused {
            code,
            message,
            data,
            ..
        } => BackendError::Refused {
            code,
            message,
            data,
        },
        CallError::Internal { cause } => BackendError::Internal { cause },
    }
}

impl GatewayBackend for ToolsetBackend {
    async fn bot_tools(&self, bot: &str) -> Result<BotTools, BackendError> {
        let toolset = self
            .toolsets
            .load(bot, ListPolicy::CachedOnly)
            .await
            .map_err(load_error)?;
        Ok(BotTools {
            tools: toolset
                .tools
                .iter()
                .map(|t| ExposedTool {
                    qualified: t.qualified.clone(),
                    route: t.route.clone(),
                    tool: t.tool.clone(),
                })
                .collect(),
            failures: toolset
                .unavailable
                .iter()
                .map(|u| format!("{}: {}", u.server, u.reason))
                .collect(),
        })
    }

    async fn bot_instructions(&self, bot: &str) -> Result<Vec<ServerInstructions>, BackendError> {
        let bindings = self.toolsets.bindings(bot).await.map_err(load_error)?;
        Ok(bindings
            .iter()
            .filter(|b| b.binding.enabled)
            .filter_map(|b| {
                b.server
                    .instructions
                    .as_ref()
                    .map(|text| ServerInstructions {
                        server: b.server.name.clone(),
                        text: text.clone(),
                    })
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
        let started = std::time::Instant::now();
        let result = self
            .toolsets
            .call(bot, &ToolRoute::new(server, tool), arguments, cancel)
            .await;
        if let Some(metrics) = &self.metrics {
            metrics.tool_call(
                observability::CallPath::Mcp,
                server,
                tool,
                outcome(result.as_ref().map(|r| r.is_error)),
                started.elapsed(),
            );
        }
        result.map_err(call_error)
    }

    fn tool_list_changes(&self, _bot: &str) -> BoxStream<'static, ()> {
        self.toolsets.changes()
    }

    async fn bot_servers(&self, bot: &str) -> Result<Vec<String>, BackendError> {
        self.toolsets.enabled_servers(bot).await.map_err(load_error)
    }

    fn forwards(&self) -> bool {
        true
    }

    async fn forward(
        &self,
        bot: &str,
        server: &str,
        request: ClientRequest,
        target: ForwardFor,
        cancel: CancellationToken,
    ) -> Result<ServerResult, BackendError> {
        // The tool's name, for the metrics (none kept without them).
        let tool = match &request {
            ClientRequest::CallToolRequest(call) if self.metrics.is_some() => {
                Some(call.params.name.to_string())
            }
            _ => None,
        };
        let started = std::time::Instant::now();
        let result = self
            .toolsets
            .forward(bot, server, request, target, cancel)
            .await;
        if let (Some(metrics), Some(tool)) = (&self.metrics, &tool) {
            let is_error = result.as_ref().map(|answer| match answer {
                ServerResult::CallToolResult(r) => r.is_error,
                _ => None,
            });
            metrics.tool_call(
                observability::CallPath::Mcp,
                server,
                tool,
                outcome(is_error),
                started.elapsed(),
            );
        }
        result.map_err(call_error)
    }

    fn server_events(&self, server: &str) -> Option<broadcast::Receiver<ServerEvent>> {
        self.toolsets.manager().server_events(server).ok()
    }

    fn subscribers(&self, server: &str) -> Option<std::sync::Arc<mcp_client::Subscribers>> {
        self.toolsets.manager().server_subscribers(server).ok()
    }
}
