//! MCP tools in a chat turn, over the bot's [`BotToolset`] (the `toolset` crate owns which
//! tools, their names, and calls): [`definitions`] and [`catalog_entries`] say what the model
//! is offered and what `tool_search` indexes, under the same qualified names, and
//! [`McpToolExecutor`] implements inference's [`ToolExecutor`] through [`Toolsets::call`].
//!
//! Rules:
//! - MCP tools reach the model only under qualified names (`server__tool`), named with the
//!   native tool names and `tool_search` reserved, so a native tool and an MCP tool never
//!   share a name: the seed's "MCP overrides native" question (§8.2) cannot arise. Routing
//!   goes through the reverse map, never by prefix;
//! - a call's deadline is its server's `timeout` plus its `initTimeout` (a lazy start may come
//!   first); the manager's own `timeout` on the call itself answers first in the usual case;
//! - the turn's cancellation drops the call;
//! - every call is recorded in the metrics: server, tool, outcome (`ok`, `tool_error`,
//!   `timeout`, `failed`, `cancelled`) and latency.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use inference::{
    CallTarget, CatalogEntry, ToolCallError, ToolDefinition, ToolExecutor, ToolResultContent,
};
use mcp_lifecycle::{CallToolResult, ContentBlock, JsonObject, ResourceContents};
use observability::{BotCraftMetrics, ToolCallOutcome};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolset::{BotToolset, CallError, ToolRoute, Toolsets};

/// The tool definitions the model is offered (every allowed tool, eager loading).
pub fn definitions(toolset: &BotToolset) -> Vec<ToolDefinition> {
    toolset
        .tools
        .iter()
        .map(|t| ToolDefinition::new(&t.qualified, t.description(), t.input_schema()))
        .collect()
}

/// Every allowed tool as `tool_search` indexes it (same qualified names).
pub fn catalog_entries(toolset: &BotToolset) -> Vec<CatalogEntry> {
    toolset
        .tools
        .iter()
        .map(|t| CatalogEntry {
            qualified: t.qualified.clone(),
            server: t.route.server.clone(),
            tool: t.route.tool.clone(),
            description: t.description().to_owned(),
            input_schema: t.input_schema(),
            server_instructions: t.server_instructions.clone(),
        })
        .collect()
}

/// Calls a bot's MCP tools by qualified name and records each call (server, tool, outcome,
/// latency) in the metrics.
pub struct McpToolExecutor {
    toolsets: Arc<Toolsets>,
    toolset: Arc<BotToolset>,
    metrics: BotCraftMetrics,
}

impl McpToolExecutor {
    pub fn new(
        toolsets: Arc<Toolsets>,
        toolset: Arc<BotToolset>,
        metrics: BotCraftMetrics,
    ) -> Self {
        Self {
            toolsets,
            toolset,
            metrics,
        }
    }
}

impl ToolExecutor for McpToolExecutor {
    fn definitions(&self) -> Vec<ToolDefinition> {
        definitions(&self.toolset)
    }

    fn call<'a>(
        &'a self,
        qualified_name: &'a str,
        input: Value,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ToolResultContent, ToolCallError>> {
        Box::pin(async move {
            let Some(tool) = self.toolset.resolve(qualified_name) else {
                return Err(ToolCallError::UnknownTool {
                    name: qualified_name.to_owned(),
                });
            };
            let route = &tool.route;
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
            let mut record =
                CallRecord::new(&self.metrics, route, self.toolset.deadline(&route.server));
            let result = self
                .toolsets
                .call(&self.toolset.bot_id, route, arguments, cancel)
                .await
                .map(|result| {
                    flatten_result(result, tool.tool.output_schema.is_some(), &route.server)
                })
                .map_err(|error| call_error(qualified_name, error));
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
        let tool = self.toolset.resolve(qualified_name)?;
        self.toolset.deadline(&tool.route.server)
    }

    fn target(&self, qualified_name: &str) -> Option<CallTarget> {
        let tool = self.toolset.resolve(qualified_name)?;
        Some(CallTarget::Mcp {
            server: tool.route.server.clone(),
            server_id: tool.server_id.clone(),
            tool: tool.route.tool.clone(),
        })
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
                observability::CallPath::Chat,
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

/// A call that did not return a result, as inference tells it to the model.
pub fn call_error(qualified_name: &str, error: CallError) -> ToolCallError {
    match error {
        CallError::Timeout { after, .. } => ToolCallError::Timeout { after },
        CallError::Cancelled => ToolCallError::Cancelled,
        // The binding changed since the turn began: the tool is no longer the bot's.
        CallError::NotAllowed { .. } | CallError::UnknownBot { .. } => ToolCallError::UnknownTool {
            name: qualified_name.to_owned(),
        },
        CallError::Protocol { server, message } => ToolCallError::Protocol { server, message },
        CallError::Refused {
            server,
            code,
            message,
            ..
        } => ToolCallError::Protocol {
            server,
            message: format!("error {code}: {message}"),
        },
        CallError::Unavailable { server, reason } => {
            ToolCallError::ServerUnavailable { server, reason }
        }
        // Its cause (a store error…) is the operator's to read, not the model's.
        CallError::Internal { cause } => {
            tracing::error!(
                tool = qualified_name,
                cause,
                "tool call failed inside BotCraft"
            );
            ToolCallError::ServerUnavailable {
                server: "botcraft".to_owned(),
                reason: "the call failed inside BotCraft; see its log".to_owned(),
            }
        }
    }
}

/// A `tools/call` result as the model reads it: text blocks joined by newlines, other blocks
/// described. `structuredContent`, as JSON, comes first when the content is empty, or when the
/// tool declared an `outputSchema` (`declared_output`) and the text does not carry it already:
/// a text block that is the same JSON is left out, and no JSON is added when every string in
/// it is already in the text (`{"content": TEXT}` beside TEXT, as the reference filesystem
/// server answers). Its images are kept beside the text, for a model that takes them (the
/// text describes them for one that does not). A binary resource is described with the API
/// path that reads it from `server` (`GET /api/servers/SERVER/resource?uri=…`).
pub fn flatten_result(
    result: CallToolResult,
    declared_output: bool,
    server: &str,
) -> ToolResultContent {
    let is_error = result.is_error.unwrap_or(false);
    let mut images: Vec<inference::ToolImage> = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image(image) if passable_image(&image.mime_type, &image.data) => {
                Some(inference::ToolImage {
                    mime_type: image.mime_type.clone(),
                    data: image.data.clone(),
                })
            }
            _ => None,
        })
        .collect();
    let text_blocks: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    let joined_text = text_blocks.concat();
    let structured = result.structured_content.as_ref().filter(|structured| {
        result.content.is_empty() || (declared_output && !carries(&joined_text, structured))
    });
    let repeats_structured = |block: &ContentBlock| match (block, structured) {
        (ContentBlock::Text(text), Some(structured)) => {
            serde_json::from_str::<Value>(&text.text).is_ok_and(|v| &v == structured)
        }
        _ => false,
    };
    let blocks: Vec<String> = structured
        .map(Value::to_string)
        .into_iter()
        .chain(
            result
                .content
                .iter()
                .filter(|block| !repeats_structured(block))
                .map(|block| describe_block(block, server)),
        )
        .collect();
    let mut text = blocks.join("\n");
    if images.len() > MAX_IMAGES_PER_RESULT {
        let left = images.len() - MAX_IMAGES_PER_RESULT;
        images.truncate(MAX_IMAGES_PER_RESULT);
        text.push_str(&format!(
            "\n[{left} more images not passed to the model: at most {MAX_IMAGES_PER_RESULT} per result]"
        ));
    }
    ToolResultContent {
        text,
        is_error,
        images,
    }
}

/// Whether `text` already carries `structured`: it is the same JSON value, or `structured`
/// is an object of one string field whose value is `text` (`{"content": TEXT}` beside TEXT,
/// as the reference filesystem server answers). Anything else gets the JSON too.
fn carries(text: &str, structured: &Value) -> bool {
    if serde_json::from_str::<Value>(text).is_ok_and(|v| &v == structured) {
        return true;
    }
    match structured {
        Value::Object(fields) if fields.len() == 1 => {
            fields.values().next().and_then(Value::as_str) == Some(text)
        }
        _ => false,
    }
}

/// Image types every provider takes (Anthropic: JPEG, PNG, GIF, WebP), up to 5,000,000
/// base64 characters (3.75 MB, under Anthropic's 5 MB per image). Others are only described.
const PASSABLE_IMAGES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
pub const MAX_IMAGE_BASE64_CHARS: usize = 5_000_000;

/// Images of one result passed on (to the model and the chat's front end), in order; the
/// others are only described. A server's result of thousands of images costs the model and
/// the client no more than this.
pub const MAX_IMAGES_PER_RESULT: usize = 8;

fn passable_image(mime_type: &str, data: &str) -> bool {
    PASSABLE_IMAGES.contains(&mime_type) && data.len() <= MAX_IMAGE_BASE64_CHARS
}

/// Where the API serves resource `uri` of `server`.
pub fn resource_path(server: &str, uri: &str) -> String {
    format!(
        "/api/servers/{}/resource?uri={}",
        percent_encoded(server),
        percent_encoded(uri)
    )
}

/// `text` with every byte outside RFC 3986's unreserved set percent-encoded.
fn percent_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn describe_block(block: &ContentBlock, server: &str) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) if passable_image(&image.mime_type, &image.data) => format!(
            "[image {}, {} base64 characters]",
            image.mime_type,
            image.data.len()
        ),
        ContentBlock::Image(image) => format!(
            "[image {}, {} base64 characters; not passed to the model: it takes PNG, JPEG, GIF or WebP up to {MAX_IMAGE_BASE64_CHARS} base64 characters]",
            image.mime_type,
            image.data.len()
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio {}, {} base64 characters]",
            audio.mime_type,
            audio.data.len()
        ),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[binary resource {uri} ({}, {} base64 characters), not shown: GET {}]",
                mime_type.as_deref().unwrap_or("no type given"),
                blob.len(),
                resource_path(server, uri)
            ),
            _ => "[resource]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link {}]", link.uri),
        _ => "[content of a kind this BotCraft does not know]".to_owned(),
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
                ToolResultContent {
                    images: vec![inference::ToolImage {
                        mime_type: "image/png".into(),
                        data: "AAAA".into(),
                    }],
                    ..ToolResultContent::text("[image image/png, 4 base64 characters]")
                },
            ),
            (
                json!({"content": [], "structuredContent": {"n": 1}}),
                ToolResultContent::text("{\"n\":1}"),
            ),
            (
                json!({"content": [{"type": "image", "data": "PHN2Zz4=", "mimeType": "image/svg+xml"}]}),
                ToolResultContent::text(
                    "[image image/svg+xml, 8 base64 characters; not passed to the model: it takes PNG, JPEG, GIF or WebP up to 5000000 base64 characters]",
                ),
            ),
            (
                json!({"content": [
                    {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
                    {"type": "resource", "resource": {"uri": "file:///b", "blob": "AAAA"}},
                    {"type": "resource_link", "uri": "file:///c", "name": "c"},
                    {"type": "audio", "data": "AAAAAAAA", "mimeType": "audio/wav"}
                ]}),
                ToolResultContent::text(
                    "inside\n[binary resource file:///b (no type given, 4 base64 characters), not shown: GET /api/servers/s/resource?uri=file%3A%2F%2F%2Fb]\n[resource link file:///c]\n[audio audio/wav, 8 base64 characters]",
                ),
            ),
        ];
        for (raw, expected) in cases {
            let result: CallToolResult = serde_json::from_value(raw.clone()).expect("a result");
            assert_eq!(flatten_result(result, false, "s"), expected, "{raw}");
        }
    }

    #[test]
    fn a_result_passes_on_at_most_eight_images() {
        let image = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
        let raw = json!({"content": vec![image; 20]});
        let result: CallToolResult = serde_json::from_value(raw).expect("a result");
        let flat = flatten_result(result, false, "s");
        assert_eq!(flat.images.len(), MAX_IMAGES_PER_RESULT);
        assert!(
            flat.text
                .ends_with("\n[12 more images not passed to the model: at most 8 per result]"),
            "{}",
            flat.text
        );
    }

    #[test]
    fn structured_content_comes_first_when_an_output_schema_was_declared() {
        let cases = [
            // Declared, with the spec's repeated text block: that text, once.
            (
                json!({"content": [{"type": "text", "text": "{\"n\": 1}"}], "structuredContent": {"n": 1}}),
                true,
                "{\"n\": 1}",
            ),
            // Declared, a number that only looks carried ("0" in "10"): the JSON too.
            (
                json!({"content": [{"type": "text", "text": "Listed 10 items"}], "structuredContent": {"count": 0}}),
                true,
                "{\"count\":0}\nListed 10 items",
            ),
            // Declared, with text that does not carry it: the JSON, then the text.
            (
                json!({"content": [{"type": "text", "text": "one"}], "structuredContent": {"n": 1}}),
                true,
                "{\"n\":1}\none",
            ),
            // Declared, with text that carries every string of it: the text alone.
            (
                json!({"content": [{"type": "text", "text": "forty-two"}],
                       "structuredContent": {"content": "forty-two"}}),
                true,
                "forty-two",
            ),
            // Not declared: the content as it is.
            (
                json!({"content": [{"type": "text", "text": "one"}], "structuredContent": {"n": 1}}),
                false,
                "one",
            ),
        ];
        for (raw, declared, expected) in cases {
            let result: CallToolResult = serde_json::from_value(raw.clone()).expect("a result");
            assert_eq!(
                flatten_result(result, declared, "s"),
                ToolResultContent::text(expected),
                "{raw}"
            );
        }
    }

    #[test]
    fn call_errors_become_tool_errors_by_variant() {
        let timeout = call_error(
            "s__t",
            CallError::Timeout {
                server: "s".into(),
                tool: "t".into(),
                after: Duration::from_millis(5),
            },
        );
        assert_eq!(
            timeout,
            ToolCallError::Timeout {
                after: Duration::from_millis(5)
            }
        );
        let unavailable = call_error(
            "s__t",
            CallError::Unavailable {
                server: "s".into(),
                reason: "exited".into(),
            },
        );
        assert!(matches!(
            unavailable,
            ToolCallError::ServerUnavailable { ref server, .. } if server == "s"
        ));
        let gone = call_error(
            "s__t",
            CallError::NotAllowed {
                bot: "b".into(),
                server: "s".into(),
                tool: "t".into(),
            },
        );
        assert_eq!(
            gone,
            ToolCallError::UnknownTool {
                name: "s__t".into()
            }
        );
        let internal = call_error(
            "s__t",
            CallError::Internal {
                cause: "database /srv/botcraft/data.db is locked".into(),
            },
        );
        assert_eq!(
            internal,
            ToolCallError::ServerUnavailable {
                server: "botcraft".into(),
                reason: "the call failed inside BotCraft; see its log".into(),
            }
        );
    }
}
