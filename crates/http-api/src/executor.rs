//! MCP tools in a chat turn: [`BotToolset`] is what a bot may call this turn (qualified
//! names, definitions, the `tool_search` catalog, pinned tools, per-server deadlines, server
//! instructions), and [`McpToolExecutor`] implements inference's [`ToolExecutor`] over the
//! [`McpServerManager`].
//!
//! Rules:
//! - a bot's tools are its **enabled** bindings' servers' tools, cut to each binding's tool
//!   filter. A server's list is the manager's cached catalog (the last listing, in memory or
//!   in the store's tool cache) whether or not the server runs, so listing a bot's tools never
//!   starts a server that was listed once. A server never listed is started to list it
//!   ([`ListPolicy::CachedThenStart`], chat turns) or reported unavailable
//!   ([`ListPolicy::CachedOnly`], tool search); a server that cannot give its list is left
//!   out of the turn and logged, the other servers still serve;
//! - MCP tools reach the model only under qualified names (`server__tool`, see
//!   `inference::naming`), named with the native tool names and `tool_search` reserved. A
//!   native tool and an MCP tool therefore never share a name, whatever the servers call
//!   their tools: the seed's "MCP overrides native" question (§8.2) cannot arise. Routing
//!   goes through the reverse map, never by prefix; the `tool_search` catalog uses the same
//!   names;
//! - a call's deadline is its server's `timeout` plus its `initTimeout` (a lazy start may come
//!   first); the manager's own `timeout` on the call itself answers first in the usual case;
//! - the turn's cancellation drops the call;
//! - every call is recorded in the metrics: server, tool, outcome (`ok`, `tool_error`,
//!   `timeout`, `failed`, `cancelled`) and latency.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use inference::{
    CatalogEntry, QualifiedToolNames, ServerInstructions, TOOL_SEARCH, ToolCallError,
    ToolDefinition, ToolExecutor, ToolResultContent, ToolRoute,
};
use mcp_lifecycle::{CallToolResult, JsonObject, LifecycleError, McpServerManager};
use observability::{BotCraftMetrics, ToolCallOutcome};
use serde_json::Value;
use store::{Bot, Store, StoreError};
use tokio_util::sync::CancellationToken;

/// A server whose tools could not be listed for this turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnavailableServer {
    pub server: String,
    pub reason: String,
}

/// The MCP tools of one bot for one turn.
#[derive(Debug, Clone, Default)]
pub struct BotToolset {
    pub names: QualifiedToolNames,
    pub definitions: Vec<ToolDefinition>,
    /// Per server: call deadline (timeout + init timeout).
    pub deadlines: BTreeMap<String, Duration>,
    /// Instructions of the enabled servers, in binding order.
    pub instructions: Vec<ServerInstructions>,
    pub unavailable: Vec<UnavailableServer>,
    /// Qualified names of the binding's pinned tools (offered even when deferred).
    pub pinned: Vec<String>,
    /// Every allowed tool as `tool_search` indexes it (same qualified names).
    pub catalog: Vec<CatalogEntry>,
}

fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// Where a turn's tool lists come from when a server's tools were never listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListPolicy {
    /// The cached catalog, else a lazy start to list the tools once (chat turns, a bot's
    /// tool listing): a server never listed would otherwise never be offered nor found.
    CachedThenStart,
    /// The cached catalog only: never starts a server (tool search); a server never listed
    /// is reported unavailable.
    CachedOnly,
}

/// The tool list of a server: the manager's cached catalog (memory, else the store's tool
/// cache), else, when `policy` allows, a lazy start's.
async fn server_tools(
    manager: &McpServerManager,
    server: &store::McpServer,
    policy: ListPolicy,
) -> Result<Arc<Vec<mcp_lifecycle::Tool>>, LifecycleError> {
    if let Some(tools) = manager.cached_tools(&server.name).await? {
        return Ok(tools);
    }
    match policy {
        ListPolicy::CachedThenStart => manager.get_tools(&server.name).await,
        ListPolicy::CachedOnly => Err(LifecycleError::NoCachedTools {
            server: server.name.clone(),
        }),
    }
}

impl BotToolset {
    /// The toolset of `bot`, with `reserved` (the native tool names) and `tool_search` never
    /// used for an MCP tool, so qualified names are the same in every loading mode.
    pub async fn load<'a>(
        store: &Store,
        manager: &McpServerManager,
        bot: &Bot,
        reserved: impl IntoIterator<Item = &'a str>,
        policy: ListPolicy,
    ) -> Result<Self, StoreError> {
        let bound: Vec<_> = store
            .bound_servers(&bot.id)
            .await?
            .into_iter()
            .filter(|bound| bound.binding.enabled)
            .collect();
        let lists = futures::future::join_all(
            bound
                .iter()
                .map(|bound| server_tools(manager, &bound.server, policy)),
        )
        .await;
        let mut toolset = Self::default();
        let mut described: BTreeMap<ToolRoute, Described> = BTreeMap::new();
        for (bound, list) in bound.iter().zip(lists) {
            let server = &bound.server;
            toolset.deadlines.insert(
                server.name.clone(),
                millis(server.timeout) + millis(server.init_timeout),
            );
            let instructions = server
                .instructions
                .as_deref()
                .filter(|t| !t.trim().is_empty())
                .unwrap_or_default();
            if !instructions.is_empty() {
                toolset.instructions.push(ServerInstructions {
                    server: server.name.clone(),
                    instructions: instructions.to_owned(),
                });
            }
            let tools = match list {
                Ok(tools) => tools,
                Err(error) => {
                    tracing::warn!(server = %server.name, %error, "MCP server left out of the turn");
                    toolset.unavailable.push(UnavailableServer {
                        server: server.name.clone(),
                        reason: error.to_string(),
                    });
                    continue;
                }
            };
            for tool in tools.iter() {
                let name = tool.name.as_ref();
                if !bound.binding.allows(name) {
                    continue;
                }
                let schema = Value::Object(tool.input_schema.as_ref().clone());
                described.insert(
                    ToolRoute::new(&server.name, name),
                    Described {
                        description: tool.description.as_deref().unwrap_or_default().to_owned(),
                        schema,
                        instructions: instructions.to_owned(),
                        pinned: bound.binding.pinned_tools.iter().any(|p| p == name),
                    },
                );
            }
        }
        toolset.names = QualifiedToolNames::build_with_reserved(
            reserved.into_iter().chain([TOOL_SEARCH]),
            described.keys().cloned(),
        );
        for (qualified, route) in toolset.names.iter() {
            let Some(tool) = described.get(route) else {
                continue;
            };
            toolset.definitions.push(ToolDefinition::new(
                qualified,
                &tool.description,
                tool.schema.clone(),
            ));
            if tool.pinned {
                toolset.pinned.push(qualified.to_owned());
            }
            toolset.catalog.push(CatalogEntry {
                qualified: qualified.to_owned(),
                server: route.server.clone(),
                tool: route.tool.clone(),
                description: tool.description.clone(),
                input_schema: tool.schema.clone(),
                server_instructions: tool.instructions.clone(),
            });
        }
        Ok(toolset)
    }
}

/// One allowed tool while a toolset is assembled.
struct Described {
    description: String,
    schema: Value,
    instructions: String,
    pinned: bool,
}

/// Calls a bot's MCP tools through the manager, by qualified name, and records each call
/// (server, tool, outcome, latency) in the metrics.
pub struct McpToolExecutor {
    manager: Arc<McpServerManager>,
    toolset: BotToolset,
    metrics: BotCraftMetrics,
}

impl McpToolExecutor {
    pub fn new(
        manager: Arc<McpServerManager>,
        toolset: BotToolset,
        metrics: BotCraftMetrics,
    ) -> Self {
        Self {
            manager,
            toolset,
            metrics,
        }
    }
}

impl ToolExecutor for McpToolExecutor {
    fn definitions(&self) -> Vec<ToolDefinition> {
        self.toolset.definitions.clone()
    }

    fn call<'a>(
        &'a self,
        qualified_name: &'a str,
        input: Value,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ToolResultContent, ToolCallError>> {
        Box::pin(async move {
            let Some(route) = self.toolset.names.resolve(qualified_name) else {
                return Err(ToolCallError::UnknownTool {
                    name: qualified_name.to_owned(),
                });
            };
            let arguments: Option<JsonObject> = match input {
                Value::Object(map) => Some(map),
                Value::Null => None,
                _ => {
                    return Err(ToolCallError::Protocol {
                        server: route.server.clone(),
                        message: "tool input must be a JSON object".to_owned(),
                    });
                }
            };
            let mut record = CallRecord::new(
                &self.metrics,
                route,
                self.toolset.deadlines.get(&route.server).copied(),
            );
            let result = tokio::select! {
                () = cancel.cancelled() => Err(ToolCallError::Cancelled),
                result = self.manager.call_tool(&route.server, &route.tool, arguments) => {
                    result.map(flatten_result).map_err(|error| call_error(&route.server, error))
                }
            };
            record.finish(match &result {
                Ok(content) if content.is_error => ToolCallOutcome::ToolError,
                Ok(_) => ToolCallOutcome::Ok,
                Err(ToolCallError::Timeout { .. }) => ToolCallOutcome::Timeout,
                Err(ToolCallError::Cancelled) => ToolCallOutcome::Cancelled,
                Err(_) => ToolCallOutcome::Failed,
            });
            result
        })
    }

    fn timeout(&self, qualified_name: &str) -> Option<Duration> {
        let route = self.toolset.names.resolve(qualified_name)?;
        self.toolset.deadlines.get(&route.server).copied()
    }
}

/// Records one tool call once: when it ends, or when its future is dropped (the turn's
/// deadline passed — a timeout — or the turn went away — a cancellation).
struct CallRecord<'a> {
    metrics: &'a BotCraftMetrics,
    route: &'a ToolRoute,
    deadline: Option<Duration>,
    started: Instant,
    done: bool,
}

impl<'a> CallRecord<'a> {
    fn new(metrics: &'a BotCraftMetrics, route: &'a ToolRoute, deadline: Option<Duration>) -> Self {
        Self {
            metrics,
            route,
            deadline,
            started: Instant::now(),
            done: false,
        }
    }

    fn finish(&mut self, outcome: ToolCallOutcome) {
        if !self.done {
            self.done = true;
            self.metrics.tool_call(
                &self.route.server,
                &self.route.tool,
                outcome,
                self.started.elapsed(),
            );
        }
    }
}

impl Drop for CallRecord<'_> {
    fn drop(&mut self) {
        let past_deadline = self
            .deadline
            .is_some_and(|deadline| self.started.elapsed() >= deadline);
        self.finish(if past_deadline {
            ToolCallOutcome::Timeout
        } else {
            ToolCallOutcome::Cancelled
        });
    }
}

/// A tool call the manager could not complete on `server`, as inference tells it to the model.
pub fn call_error(server: &str, error: LifecycleError) -> ToolCallError {
    match error {
        LifecycleError::CallTimeout { timeout, .. } => ToolCallError::Timeout { after: timeout },
        LifecycleError::Request { .. } => ToolCallError::Protocol {
            server: server.to_owned(),
            message: error.to_string(),
        },
        // Not configured, not startable, exited, unresponsive, crash-looping, …
        _ => ToolCallError::ServerUnavailable {
            server: server.to_owned(),
            reason: error.to_string(),
        },
    }
}

/// A `tools/call` result as the text the model reads: text blocks joined by newlines, other
/// blocks described; `structuredContent` when there is no content at all.
pub fn flatten_result(result: CallToolResult) -> ToolResultContent {
    let is_error = result.is_error.unwrap_or(false);
    let value = serde_json::to_value(&result).unwrap_or(Value::Null);
    let blocks: Vec<String> = value
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().map(describe_block).collect())
        .unwrap_or_default();
    let text = if blocks.is_empty() {
        value
            .get("structuredContent")
            .map(Value::to_string)
            .unwrap_or_default()
    } else {
        blocks.join("\n")
    };
    ToolResultContent { text, is_error }
}

fn describe_block(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or("");
    match field("type") {
        "text" => field("text").to_owned(),
        "image" | "audio" => format!(
            "[{} {}, {} base64 characters]",
            field("type"),
            field("mimeType"),
            field("data").len()
        ),
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => text.to_owned(),
                None => format!(
                    "[resource {}]",
                    resource.get("uri").and_then(Value::as_str).unwrap_or("")
                ),
            }
        }
        "resource_link" => format!("[resource link {}]", field("uri")),
        other => format!("[{other} content]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn results_flatten_to_text_for_the_model() {
        let cases = [
            (
                json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
                ToolResultContent::text("a\nb"),
            ),
            (
                json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
                ToolResultContent::error("boom"),
            ),
            (
                json!({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
                ToolResultContent::text("[image image/png, 4 base64 characters]"),
            ),
            (
                json!({"content": [], "structuredContent": {"n": 1}}),
                ToolResultContent::text("{\"n\":1}"),
            ),
        ];
        for (raw, expected) in cases {
            let result: CallToolResult = serde_json::from_value(raw.clone()).expect("a result");
            assert_eq!(flatten_result(result), expected, "{raw}");
        }
    }

    #[test]
    fn lifecycle_errors_become_tool_errors_by_variant() {
        let timeout = call_error(
            "s",
            LifecycleError::CallTimeout {
                server: "s".into(),
                tool: "t".into(),
                timeout: Duration::from_millis(5),
            },
        );
        assert_eq!(
            timeout,
            ToolCallError::Timeout {
                after: Duration::from_millis(5)
            }
        );
        let unavailable = call_error(
            "s",
            LifecycleError::NotConfigured {
                server: "s".into(),
                key: "K".into(),
                variable: "V".into(),
            },
        );
        assert!(matches!(
            unavailable,
            ToolCallError::ServerUnavailable { ref server, .. } if server == "s"
        ));
    }
}
