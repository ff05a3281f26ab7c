//! Token accounting for tool definitions: how many tokens the tools offered
//! in a request cost, counted with a real tokenizer (`o200k_base`, the
//! encoding of OpenAI's current models) over the JSON the OpenAI wire format
//! sends. Owns [`definition_tokens`] and [`MeteredTools`], an
//! [`ActiveTools`] wrapper that records the count of every step, so eager
//! and deferred loading can be compared on the same conversation.

use std::sync::{Arc, Mutex};

use crate::active_tools::{ActiveTools, StepContext};
use crate::tool_schema::ToolDefinition;

/// Tokens of `tools` as an OpenAI `tools` array (`o200k_base`).
pub fn definition_tokens(tools: &[ToolDefinition]) -> usize {
    if tools.is_empty() {
        return 0;
    }
    let text = crate::providers::openai::tools_json(tools).to_string();
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(&text)
        .len()
}

/// The tool-definition tokens of each step of a turn.
#[derive(Debug, Clone, Default)]
pub struct ToolTokenLog {
    steps: Arc<Mutex<Vec<usize>>>,
}

impl ToolTokenLog {
    pub fn steps(&self) -> Vec<usize> {
        self.steps.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn total(&self) -> usize {
        self.steps().iter().sum()
    }

    fn record(&self, tokens: usize) {
        if let Ok(mut steps) = self.steps.lock() {
            steps.push(tokens);
        }
    }
}

/// Wraps a hook and records the tokens of the tools it offers each step.
pub struct MeteredTools {
    inner: Arc<dyn ActiveTools>,
    log: ToolTokenLog,
}

impl MeteredTools {
    pub fn new(inner: Arc<dyn ActiveTools>) -> (Self, ToolTokenLog) {
        let log = ToolTokenLog::default();
        (
            Self {
                inner,
                log: log.clone(),
            },
            log,
        )
    }
}

impl ActiveTools for MeteredTools {
    fn tools_for_step(&self, context: &StepContext<'_>) -> Vec<ToolDefinition> {
        let tools = self.inner.tools_for_step(context);
        let tokens = definition_tokens(&tools);
        tracing::debug!(
            step = context.step,
            tools = tools.len(),
            tokens,
            "tool definitions offered"
        );
        self.log.record(tokens);
        tools
    }

    fn tools_unoffered(&self, context: &StepContext<'_>) -> Vec<ToolDefinition> {
        self.inner.tools_for_step(context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_grow_with_definitions_and_are_recorded_per_step() {
        let one = vec![ToolDefinition::new(
            "run",
            "Run a command",
            json!({"type": "object"}),
        )];
        let mut two = one.clone();
        two.push(ToolDefinition::new(
            "read_text_file",
            "Read the complete contents of a file from the file system as text.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        ));
        assert_eq!(definition_tokens(&[]), 0);
        let a = definition_tokens(&one);
        let b = definition_tokens(&two);
        assert!(a > 5 && b > a + 10, "{a} {b}");

        let tools = two.clone();
        let hook: Arc<dyn ActiveTools> = Arc::new(move |_: &StepContext<'_>| tools.clone());
        let (metered, log) = MeteredTools::new(hook);
        let context = StepContext {
            step: 0,
            messages: &[],
        };
        metered.tools_for_step(&context);
        metered.tools_for_step(&context);
        // Asked for without offering them (approvals settled before the first step).
        assert_eq!(metered.tools_unoffered(&context).len(), 2);
        assert_eq!(log.steps(), vec![b, b]);
        assert_eq!(log.total(), 2 * b);
    }
}
