//! The contract between a forge server and the kit: [`Toolbox`].

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::reason::ToolFailure;

/// Who the server is: what `initialize` reports.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The server name, e.g. `forge-bash`.
    pub name: &'static str,
    /// The server version, usually `env!("CARGO_PKG_VERSION")`.
    pub version: &'static str,
    /// Instructions for the model, sent in `initialize`.
    pub instructions: Option<String>,
}

/// One `tools/call`.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub name: String,
    pub arguments: JsonObject,
    /// Cancelled when the client sends `notifications/cancelled` for this
    /// request (or the connection closes). Long tools select on it.
    pub cancel: CancellationToken,
}

impl ToolCall {
    pub fn new(name: impl Into<String>, arguments: JsonObject) -> Self {
        Self {
            name: name.into(),
            arguments,
            cancel: CancellationToken::new(),
        }
    }

    /// Parse the arguments into the tool's parameter struct. A mismatch is a
    /// tool error (the 2025-11-25 rule: input validation errors are results
    /// the model can read and correct), naming the tool and the problem.
    pub fn parse<P: DeserializeOwned>(&self) -> Result<P, ToolFailure> {
        serde_json::from_value(Value::Object(self.arguments.clone())).map_err(|error| {
            ToolFailure::tool(format!("Invalid arguments for tool {}: {error}", self.name))
        })
    }
}

/// What a successful tool call returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    /// Sent as `structuredContent` when the tool declares an output schema.
    pub structured: Option<Value>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            structured: None,
        }
    }

    /// Text plus `structuredContent: {"content": text}`: the shape of the
    /// reference filesystem server's results.
    pub fn text_with_content(text: impl Into<String>) -> Self {
        let text = text.into();
        let structured = serde_json::json!({ "content": text });
        Self {
            text,
            structured: Some(structured),
        }
    }

    pub(crate) fn into_result(self) -> CallToolResult {
        let mut result = CallToolResult::success(vec![ContentBlock::text(self.text)]);
        result.structured_content = self.structured;
        result
    }
}

/// A forge server's tools and how to call them.
pub trait Toolbox: Send + Sync + 'static {
    fn identity(&self) -> Identity;

    /// The tools, in the order `tools/list` reports them.
    fn tools(&self) -> Vec<Tool>;

    /// Run one call. `call.name` is one of [`Toolbox::tools`]; the kit answers
    /// unknown names itself.
    fn call(&self, call: ToolCall) -> impl Future<Output = Result<ToolOutput, ToolFailure>> + Send;
}

/// Declare a tool whose input schema is derived from `P` (doc comments on the
/// fields become descriptions). The schema is normalised for clients and LLM
/// providers: no `$schema`, no `title`.
pub fn tool_spec<P: JsonSchema>(name: &'static str, description: &'static str) -> Tool {
    let schema = schemars::schema_for!(P);
    let mut object = match schema.to_value() {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    };
    object.remove("$schema");
    object.remove("title");
    if !object.contains_key("properties") {
        object.insert("properties".into(), Value::Object(JsonObject::new()));
    }
    Tool::new(name, description, Arc::new(object))
}

/// The input schema of a tool that takes no arguments.
pub fn empty_schema() -> Arc<JsonObject> {
    let mut object = JsonObject::new();
    object.insert("type".into(), Value::String("object".into()));
    object.insert("properties".into(), Value::Object(JsonObject::new()));
    Arc::new(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct RunParams {
        /// Full command string.
        command: String,
    }

    #[test]
    fn tool_spec_derives_a_clean_schema() {
        let tool = tool_spec::<RunParams>("run", "Run a command");
        assert_eq!(
            Value::Object((*tool.input_schema).clone()),
            json!({
                "type": "object",
                "properties": {"command": {"type": "string", "description": "Full command string."}},
                "required": ["command"]
            })
        );
    }

    #[test]
    fn parse_failure_names_the_tool() {
        let call = ToolCall::new("run", JsonObject::new());
        let failure = call.parse::<RunParams>().expect_err("missing field");
        assert!(
            failure
                .message
                .starts_with("Invalid arguments for tool run:")
        );
        assert!(failure.message.contains("command"));
    }
}
