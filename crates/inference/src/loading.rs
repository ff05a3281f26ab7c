//! Tool loading modes (seed 000 §9.3, option C): which MCP tools a bot's
//! model sees at each step. Owns [`ToolLoading`], [`DeferredTools`] and
//! [`plan_tools`], which picks eager or deferred for a request.
//!
//! - `eager`: every native and every allowed MCP tool, every step.
//! - `deferred`: native tools (with `tool_search`) and the bot's pinned
//!   tools; tools a `tool_search` call found join the active set from the
//!   next step on, for the rest of the conversation. "Found" is read from the
//!   conversation itself (earlier `tool_search` results, and MCP tools the
//!   model already called without an error: a guessed name it was not
//!   offered loads nothing), so it survives across requests without state.
//! - `auto` (the default): deferred once the allowed MCP tools' definitions
//!   pass a token threshold, eager below it.

use std::collections::BTreeSet;
use std::str::FromStr;
use std::sync::Arc;

use crate::active_tools::{ActiveTools, StepContext};
use crate::conversation::Message;
use crate::native::NativeToolRegistry;
use crate::tokens::definition_tokens;
use crate::tool_schema::ToolDefinition;
use crate::tool_search::{TOOL_SEARCH, found_names};

/// Tool-definition tokens above which `auto` defers.
pub const DEFAULT_AUTO_THRESHOLD_TOKENS: usize = 3_000;

/// A bot's tool loading mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolLoading {
    Eager,
    Deferred,
    #[default]
    Auto,
}

impl ToolLoading {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolLoading::Eager => "eager",
            ToolLoading::Deferred => "deferred",
            ToolLoading::Auto => "auto",
        }
    }
}

/// A loading mode that is not `eager`, `deferred` or `auto`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool loading mode {0:?}: use eager, deferred or auto")]
pub struct UnknownLoading(pub String);

impl FromStr for ToolLoading {
    type Err = UnknownLoading;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "eager" => Ok(ToolLoading::Eager),
            "deferred" => Ok(ToolLoading::Deferred),
            "auto" => Ok(ToolLoading::Auto),
            other => Err(UnknownLoading(other.to_owned())),
        }
    }
}

/// Deferred loading: native tools, pinned tools, and what searches found.
pub struct DeferredTools {
    native: NativeToolRegistry,
    mcp: Vec<ToolDefinition>,
    pinned: BTreeSet<String>,
}

impl DeferredTools {
    /// `native` should hold `tool_search`; `mcp` is every MCP tool the bot
    /// may call (qualified names); `pinned` are always offered.
    pub fn new(
        native: NativeToolRegistry,
        mcp: Vec<ToolDefinition>,
        pinned: impl IntoIterator<Item = String>,
    ) -> Self {
        Self {
            native,
            mcp,
            pinned: pinned.into_iter().collect(),
        }
    }

    /// Names that joined through the conversation: `tool_search` results and
    /// MCP tools the model already called.
    pub fn discovered(&self, messages: &[Message]) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        // A call that failed proves nothing (the model may have guessed a name it was not
        // offered); one that ran, or waits for a person, does. A call's result is looked for
        // in the results that follow its own step (ids may repeat across steps).
        let mut calls: &[crate::conversation::ToolCall] = &[];
        let mut failed: BTreeSet<&str> = BTreeSet::new();
        let mut called = |calls: &[crate::conversation::ToolCall], failed: &BTreeSet<&str>| {
            names.extend(
                calls
                    .iter()
                    .filter(|call| !failed.contains(call.id.as_str()))
                    .map(|call| call.name.clone()),
            );
        };
        let mut found = BTreeSet::new();
        for message in messages {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    called(calls, &failed);
                    calls = tool_calls;
                    failed.clear();
                }
                Message::ToolResults(results) => {
                    for result in results {
                        if result.is_error {
                            failed.insert(result.call_id.as_str());
                        } else if result.tool_name == TOOL_SEARCH {
                            found.extend(found_names(&result.content));
                        }
                    }
                }
                Message::User { .. } => {}
            }
        }
        called(calls, &failed);
        names.extend(found);
        names
    }
}

impl ActiveTools for DeferredTools {
    fn tools_for_step(&self, context: &StepContext<'_>) -> Vec<ToolDefinition> {
        let discovered = self.discovered(context.messages);
        let mut tools = self.native.definitions();
        tools.extend(
            self.mcp
                .iter()
                .filter(|t| self.pinned.contains(&t.name) || discovered.contains(&t.name))
                .cloned(),
        );
        tools
    }
}

/// What [`plan_tools`] decided.
#[derive(Clone)]
pub struct ToolPlan {
    /// `Eager` or `Deferred` (never `Auto`).
    pub mode: ToolLoading,
    pub active: Arc<dyn ActiveTools>,
    /// The native tools to run the turn with (`tool_search` included when
    /// deferred): give these to [`crate::ChatTurn::with_native_tools`].
    pub native: NativeToolRegistry,
    /// Tokens of every allowed tool's definition (what eager sends).
    pub eager_tokens: usize,
}

/// Pick the tools for a request. `native` is the bot's native tools without
/// `tool_search`; `tool_search` is added in deferred mode only.
pub fn plan_tools(
    mode: ToolLoading,
    threshold_tokens: usize,
    native: NativeToolRegistry,
    tool_search: Arc<dyn crate::native::NativeTool>,
    mcp: Vec<ToolDefinition>,
    pinned: Vec<String>,
) -> ToolPlan {
    let eager_tokens = eager_tokens(&native, &mcp);
    plan_tools_counted(
        mode,
        threshold_tokens,
        native,
        tool_search,
        mcp,
        pinned,
        eager_tokens,
    )
}

/// Tokens of the native and `mcp` definitions together: what eager loading sends each step.
pub fn eager_tokens(native: &NativeToolRegistry, mcp: &[ToolDefinition]) -> usize {
    let mut all = native.definitions();
    all.extend(mcp.iter().cloned());
    definition_tokens(&all)
}

/// [`plan_tools`] with [`eager_tokens`] already counted (a caller that keeps the count while
/// the tools are unchanged).
pub fn plan_tools_counted(
    mode: ToolLoading,
    threshold_tokens: usize,
    native: NativeToolRegistry,
    tool_search: Arc<dyn crate::native::NativeTool>,
    mcp: Vec<ToolDefinition>,
    pinned: Vec<String>,
    eager_tokens: usize,
) -> ToolPlan {
    let deferred = match mode {
        ToolLoading::Eager => false,
        ToolLoading::Deferred => true,
        ToolLoading::Auto => eager_tokens > threshold_tokens,
    };
    if !deferred {
        let native_defs = native.clone();
        let active = move |_: &StepContext<'_>| {
            let mut tools = native_defs.definitions();
            tools.extend(mcp.iter().cloned());
            tools
        };
        return ToolPlan {
            mode: ToolLoading::Eager,
            active: Arc::new(active),
            native,
            eager_tokens,
        };
    }
    let mut native = native;
    // A bot's own native tool named `tool_search` would shadow ours; keep theirs.
    let _ = native.register(tool_search);
    ToolPlan {
        mode: ToolLoading::Deferred,
        active: Arc::new(DeferredTools::new(native.clone(), mcp, pinned)),
        native,
        eager_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{ToolCall, ToolResult};
    use crate::tool_search::{CatalogEntry, ToolCatalog, ToolSearchTool};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn def(name: &str) -> ToolDefinition {
        ToolDefinition::new(
            name,
            format!("{name} does things"),
            json!({"type": "object"}),
        )
    }

    fn names(tools: &[ToolDefinition]) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    fn search_tool() -> Arc<dyn crate::native::NativeTool> {
        let entry = CatalogEntry {
            qualified: "fs__read".into(),
            server: "fs".into(),
            tool: "read".into(),
            description: "read".into(),
            input_schema: json!({"type": "object"}),
            server_instructions: String::new(),
        };
        Arc::new(ToolSearchTool::new(Arc::new(ToolCatalog::build(&[entry]))))
    }

    #[test]
    fn modes_parse() {
        assert_eq!("eager".parse(), Ok(ToolLoading::Eager));
        assert_eq!("auto".parse(), Ok(ToolLoading::Auto));
        assert_eq!(
            "lazy".parse::<ToolLoading>(),
            Err(UnknownLoading("lazy".into()))
        );
    }

    #[test]
    fn deferred_offers_pinned_then_found_then_called() {
        let mut native = NativeToolRegistry::new();
        native.register(search_tool()).expect("register");
        let hook = DeferredTools::new(
            native,
            vec![
                def("fs__read"),
                def("fs__write"),
                def("bash__run"),
                def("web__get"),
            ],
            ["bash__run".to_owned()],
        );
        let empty: Vec<Message> = Vec::new();
        let step = |messages: &[Message]| {
            let context = StepContext { step: 0, messages };
            names(&hook.tools_for_step(&context)).join(",")
        };
        assert_eq!(step(&empty), "tool_search,bash__run");

        let found = vec![Message::ToolResults(vec![ToolResult {
            call_id: "1".into(),
            tool_name: "tool_search".into(),
            content: json!({"tools": [{"name": "fs__read", "server": "fs", "description": "", "parameters": ""}], "note": ""}).to_string(),
            is_error: false,
            images: Vec::new(),
        }])];
        assert_eq!(step(&found), "tool_search,fs__read,bash__run");

        let called = vec![Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "2".into(),
                name: "web__get".into(),
                input: json!({}),
            }],
        }];
        assert_eq!(step(&called), "tool_search,bash__run,web__get");

        // A guessed name, refused as not offered, loads nothing.
        let mut guessed = called.clone();
        guessed.push(Message::ToolResults(vec![ToolResult {
            call_id: "2".into(),
            tool_name: "web__get".into(),
            content: "tool `web__get` is not available in this step".into(),
            is_error: true,
            images: Vec::new(),
        }]));
        assert_eq!(step(&guessed), "tool_search,bash__run");

        // Ids repeat across steps (some providers): a failure is its own step's.
        let mut repeated = called.clone();
        repeated.push(Message::ToolResults(vec![ToolResult {
            call_id: "2".into(),
            tool_name: "web__get".into(),
            content: "ok".into(),
            is_error: false,
            images: Vec::new(),
        }]));
        repeated.push(Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "2".into(),
                name: "fs__write".into(),
                input: json!({}),
            }],
        });
        repeated.push(Message::ToolResults(vec![ToolResult {
            call_id: "2".into(),
            tool_name: "fs__write".into(),
            content: "tool `fs__write` is not available in this step".into(),
            is_error: true,
            images: Vec::new(),
        }]));
        assert_eq!(step(&repeated), "tool_search,bash__run,web__get");
    }

    #[test]
    fn auto_defers_past_the_threshold() {
        let mcp: Vec<ToolDefinition> = (0..40).map(|i| def(&format!("s__tool_{i}"))).collect();
        let small = plan_tools(
            ToolLoading::Auto,
            1_000_000,
            NativeToolRegistry::new(),
            search_tool(),
            mcp.clone(),
            vec![],
        );
        assert_eq!(small.mode, ToolLoading::Eager);
        let big = plan_tools(
            ToolLoading::Auto,
            10,
            NativeToolRegistry::new(),
            search_tool(),
            mcp,
            vec![],
        );
        assert_eq!(big.mode, ToolLoading::Deferred);
        let context = StepContext {
            step: 0,
            messages: &[],
        };
        assert_eq!(names(&big.active.tools_for_step(&context)), ["tool_search"]);
        assert!(big.eager_tokens > 10);
    }
}
