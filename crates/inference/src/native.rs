//! Native tools: tools BotCraft implements in-process (such as
//! `tool_search`), offered to the model beside MCP tools. Owns the
//! [`NativeTool`] trait and the [`NativeToolRegistry`].

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::tool_schema::ToolDefinition;

/// A tool implemented in this process.
pub trait NativeTool: Send + Sync {
    /// The name the model calls. Must match `[a-zA-Z0-9_-]{1,64}`.
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON schema of the input object.
    fn input_schema(&self) -> Value;
    /// The tool changes nothing (MCP's `readOnlyHint`): a bot whose native tools ask under
    /// `writes` does not ask for it. Default false.
    fn read_only(&self) -> bool {
        false
    }
    /// Runs the tool. It should return promptly once `cancel` fires.
    fn call(&self, input: Value, cancel: CancellationToken) -> BoxFuture<'_, NativeToolResult>;
}

/// The text the model reads, or why the call failed (also told to the model).
pub type NativeToolResult = Result<String, NativeToolError>;

/// A native tool call that failed. The turn goes on: the model reads the
/// message as the call's error result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NativeToolError {
    /// The input does not fit the tool's schema.
    #[error("invalid input: {reason}")]
    InvalidInput { reason: String },
    /// The tool ran and failed.
    #[error("{message}")]
    Failed { message: String },
}

/// The native tools of a bot, by name.
#[derive(Clone, Default)]
pub struct NativeToolRegistry {
    tools: BTreeMap<String, Arc<dyn NativeTool>>,
}

impl std::fmt::Debug for NativeToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.tools.keys()).finish()
    }
}

/// Two native tools share a name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("native tool `{name}` is registered twice")]
pub struct DuplicateNativeTool {
    pub name: String,
}

impl NativeToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool; a second tool with the same name is refused.
    pub fn register(&mut self, tool: Arc<dyn NativeTool>) -> Result<(), DuplicateNativeTool> {
        let name = tool.name().to_owned();
        if self.tools.contains_key(&name) {
            return Err(DuplicateNativeTool { name });
        }
        self.tools.insert(name, tool);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn NativeTool>> {
        self.tools.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Definitions of every tool, sorted by name.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .values()
            .map(|tool| ToolDefinition::new(tool.name(), tool.description(), tool.input_schema()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    struct Echo(&'static str);

    impl NativeTool for Echo {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            "Echoes its input."
        }
        fn input_schema(&self) -> Value {
            json!({"$schema": "x", "type": "object"})
        }
        fn call(
            &self,
            input: Value,
            _cancel: CancellationToken,
        ) -> BoxFuture<'_, NativeToolResult> {
            Box::pin(async move { Ok(input.to_string()) })
        }
    }

    #[test]
    fn registry_refuses_duplicates_and_lists_normalised_definitions() {
        let mut registry = NativeToolRegistry::new();
        assert_eq!(registry.register(Arc::new(Echo("echo"))), Ok(()));
        assert_eq!(registry.register(Arc::new(Echo("alpha"))), Ok(()));
        assert_eq!(
            registry.register(Arc::new(Echo("echo"))),
            Err(DuplicateNativeTool {
                name: "echo".into()
            })
        );
        assert_eq!(
            registry.definitions(),
            vec![
                ToolDefinition {
                    name: "alpha".into(),
                    description: "Echoes its input.".into(),
                    input_schema: json!({"type": "object", "properties": {}}),
                },
                ToolDefinition {
                    name: "echo".into(),
                    description: "Echoes its input.".into(),
                    input_schema: json!({"type": "object", "properties": {}}),
                },
            ]
        );
    }
}
