//! MCP tools in a chat turn: [`BotToolset`] is what a bot may call this turn (qualified
//! names, definitions, per-server deadlines, server instructions), and [`McpToolExecutor`]
//! implements inference's [`ToolExecutor`] over the [`McpServerManager`].
//!
//! Rules:
//! - a bot's tools are its **enabled** bindings' servers' tools, cut to each binding's tool
//!   filter. A server's list comes from the manager when it runs, else from the store's tool
//!   cache, else the server is started (lazy start) to list them; a server that cannot give
//!   its list is left out of the turn and logged, the other servers still serve;
//! - MCP tools reach the model only under qualified names (`server__tool`, see
//!   `inference::naming`), named with the native tool names reserved. A native tool and an
//!   MCP tool therefore never share a name, whatever the servers call their tools: the seed's
//!   "MCP overrides native" question (§8.2) cannot arise. Routing goes through the reverse
//!   map, never by prefix;
//! - a call's deadline is its server's `timeout` plus its `initTimeout` (a lazy start may come
//!   first); the manager's own `timeout` on the call itself answers first in the usual case;
//! - the turn's cancellation drops the call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use inference::{
    QualifiedToolNames, ServerInstructions, ToolCallError, ToolDefinition, ToolExecutor,
    ToolResultContent, ToolRoute,
};
use mcp_lifecycle::{CallToolResult, JsonObject, LifecycleError, McpServerManager, ServerState};
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
}

fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// A tool as a JSON value (`name`, `description`, `inputSchema`), whether from the manager
/// or the store's cache.
fn tool_json(tool: &mcp_lifecycle::Tool) -> Value {
    serde_json::to_value(tool).unwrap_or(Value::Null)
}

/// The tool list of a server: the running process's, the cached one, or a lazy start's.
async fn server_tools(
    store: &Store,
    manager: &McpServerManager,
    server: &store::McpServer,
) -> Result<Vec<Value>, LifecycleError> {
    let running = manager
        .get_all_statuses()
        .into_iter()
        .any(|status| status.name == server.name && status.state == ServerState::Running);
    if !running && let Some(cache) = store.tool_cache(&server.id).await? {
        return Ok(cache.tools);
    }
    let tools = manager.get_tools(&server.name).await?;
    Ok(tools.iter().map(tool_json).collect())
}

impl BotToolset {
    /// The toolset of `bot`, with `reserved` (the native tool names) never used for an MCP tool.
    pub async fn load<'a>(
        store: &Store,
        manager: &McpServerManager,
        bot: &Bot,
        reserved: impl IntoIterator<Item = &'a str>,
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
                .map(|bound| server_tools(store, manager, &bound.server)),
        )
        .await;
        let mut toolset = Self::default();
        let mut described: BTreeMap<ToolRoute, (String, Value)> = BTreeMap::new();
        for (bound, list) in bound.iter().zip(lists) {
            let server = &bound.server;
            toolset.deadlines.insert(
                server.name.clone(),
                millis(server.timeout) + millis(server.init_timeout),
            );
            if let Some(text) = server
                .instructions
                .as_deref()
                .filter(|t| !t.trim().is_empty())
            {
                toolset.instructions.push(ServerInstructions {
                    server: server.name.clone(),
                    instructions: text.to_owned(),
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
            for tool in tools {
                let Some(name) = tool.get("name").and_then(Value::as_str) else {
                    continue;
                };
                if !bound.binding.allows(name) {
                    continue;
                }
                let description = tool
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let schema = tool
                    .get("inputSchema")
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({"type": "object"}));
                described.insert(ToolRoute::new(&server.name, name), (description, schema));
            }
        }
        toolset.names =
            QualifiedToolNames::build_with_reserved(reserved, described.keys().cloned());
        toolset.definitions = toolset
            .names
            .iter()
            .filter_map(|(qualified, route)| {
                let (description, schema) = described.get(route)?;
                Some(ToolDefinition::new(qualified, description, schema.clone()))
            })
            .collect();
        Ok(toolset)
    }
}

/// Calls a bot's MCP tools through the manager, by qualified name.
pub struct McpToolExecutor {
    manager: Arc<McpServerManager>,
    toolset: BotToolset,
}

impl McpToolExecutor {
    pub fn new(manager: Arc<McpServerManager>, toolset: BotToolset) -> Self {
        Self { manager, toolset }
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
            tokio::select! {
                () = cancel.cancelled() => Err(ToolCallError::Cancelled),
                result = self.manager.call_tool(&route.server, &route.tool, arguments) => {
                    result.map(flatten_result).map_err(|error| call_error(&route.server, error))
                }
            }
        })
    }

    fn timeout(&self, qualified_name: &str) -> Option<Duration> {
        let route = self.toolset.names.resolve(qualified_name)?;
        self.toolset.deadlines.get(&route.server).copied()
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
