//! The deferred-loading hook: which tools the model is offered at each step.
//! Owns the [`ActiveTools`] trait, its [`StepContext`], and [`EagerTools`]
//! (every native and MCP tool, every step), the default.
//!
//! A turn asks its `ActiveTools` before every step, so tools that a
//! `tool_search` call found during step N can be offered from step N + 1 on
//! (the seed's option C). A call to a tool that is not in the step's active
//! set is answered with an error result, never executed.

use std::sync::Arc;

use crate::conversation::Message;
use crate::mcp_tools::ToolExecutor;
use crate::native::NativeToolRegistry;
use crate::tool_schema::ToolDefinition;

/// What the hook can look at when it chooses a step's tools.
#[derive(Debug, Clone, Copy)]
pub struct StepContext<'a> {
    /// 0 for the first step of the turn.
    pub step: u32,
    /// The conversation so far, including this turn's earlier steps and
    /// their tool results.
    pub messages: &'a [Message],
}

/// Chooses the tools offered to the model for one step.
pub trait ActiveTools: Send + Sync {
    fn tools_for_step(&self, context: &StepContext<'_>) -> Vec<ToolDefinition>;

    /// The same tools, asked for without offering them to the model (the calls a previous
    /// turn asked about, settled before the first step): a hook that meters what it offers
    /// does not count these.
    fn tools_unoffered(&self, context: &StepContext<'_>) -> Vec<ToolDefinition> {
        self.tools_for_step(context)
    }
}

impl<F> ActiveTools for F
where
    F: Fn(&StepContext<'_>) -> Vec<ToolDefinition> + Send + Sync,
{
    fn tools_for_step(&self, context: &StepContext<'_>) -> Vec<ToolDefinition> {
        self(context)
    }
}

/// Every native tool, then every MCP tool the executor offers, at every step.
#[derive(Clone)]
pub struct EagerTools {
    native: NativeToolRegistry,
    executor: Option<Arc<dyn ToolExecutor>>,
}

impl EagerTools {
    pub fn new(native: NativeToolRegistry, executor: Option<Arc<dyn ToolExecutor>>) -> Self {
        Self { native, executor }
    }
}

impl ActiveTools for EagerTools {
    fn tools_for_step(&self, _context: &StepContext<'_>) -> Vec<ToolDefinition> {
        let mut tools = self.native.definitions();
        if let Some(executor) = &self.executor {
            tools.extend(executor.definitions());
        }
        tools
    }
}
