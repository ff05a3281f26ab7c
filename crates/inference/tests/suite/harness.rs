//! What the scenarios share: providers pointed at the fake LLM, native tools
//! with observable behaviour, a fake MCP `ToolExecutor`, and a runner that
//! collects a turn's events and outcome.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use futures::StreamExt;
use futures::future::BoxFuture;
use inference::providers::HttpTimeouts;
use inference::providers::{AnthropicSettings, OpenAiSettings};
use inference::{
    CallTarget, ChatTurn, NativeTool, NativeToolError, NativeToolResult, Provider,
    ProviderSettings, Providers, ToolCallError, ToolDefinition, ToolExecutor, ToolResultContent,
    TurnEvent, TurnOutcome,
};
use serde_json::{Value, json};
use test_support::{FakeLlm, Wire};
use tokio::sync::{Barrier, Notify};
use tokio_util::sync::CancellationToken;

pub const WIRES: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

/// A safety bound on waits that must succeed; never reached when the code
/// under test works.
pub const BOUND: Duration = Duration::from_secs(20);

pub async fn bounded<F: Future>(what: &str, future: F) -> anyhow::Result<F::Output> {
    tokio::time::timeout(BOUND, future)
        .await
        .with_context(|| format!("{what} did not happen"))
}

/// A provider for `wire` pointed at `fake`, built the way the app builds
/// one: from settings and a model string.
pub fn provider(fake: &FakeLlm, wire: Wire, idle: Duration) -> anyhow::Result<Arc<dyn Provider>> {
    let settings = ProviderSettings {
        openai: OpenAiSettings {
            api_key: Some("test-openai-key".into()),
            base_url: Some(fake.openai_base_url()),
        },
        anthropic: AnthropicSettings {
            api_key: Some("test-anthropic-key".into()),
            base_url: Some(fake.anthropic_base_url()),
        },
        timeouts: HttpTimeouts {
            connect: Duration::from_secs(5),
            idle,
        },
    };
    let spec = match wire {
        Wire::OpenAi => "openai:gpt-test",
        Wire::Anthropic => "anthropic:claude-test",
    };
    Ok(Providers::new(settings)?
        .for_bot("test-bot", spec)?
        .provider)
}

pub fn model(wire: Wire) -> &'static str {
    match wire {
        Wire::OpenAi => "gpt-test",
        Wire::Anthropic => "claude-test",
    }
}

/// Runs the turn to its end; returns every event and the outcome.
pub async fn run(turn: ChatTurn) -> anyhow::Result<(Vec<TurnEvent>, TurnOutcome)> {
    let (events, handle) = turn.spawn(CancellationToken::new());
    let events = bounded("the turn's end", events.collect::<Vec<_>>()).await?;
    let outcome = bounded("the turn's outcome", handle).await??;
    Ok((events, outcome))
}

/// The tool names a recorded request offered, in order.
pub fn offered_tools(body: &Value, wire: Wire) -> Vec<String> {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    tools
        .iter()
        .map(|tool| match wire {
            Wire::OpenAi => tool["function"]["name"].as_str(),
            Wire::Anthropic => tool["name"].as_str(),
        })
        .map(|name| name.unwrap_or_default().to_owned())
        .collect()
}

/// The last message of a recorded request, in its wire format.
pub fn last_message(body: &Value) -> Value {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.last().cloned())
        .unwrap_or(Value::Null)
}

/// `add`: `{a, b}` → their sum.
pub struct Adder;

impl NativeTool for Adder {
    fn name(&self) -> &str {
        "add"
    }
    fn description(&self) -> &str {
        "Adds two integers."
    }
    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        })
    }
    fn call(&self, input: Value, _cancel: CancellationToken) -> BoxFuture<'_, NativeToolResult> {
        Box::pin(async move {
            match (input["a"].as_i64(), input["b"].as_i64()) {
                (Some(a), Some(b)) => Ok((a + b).to_string()),
                _ => Err(NativeToolError::InvalidInput {
                    reason: "a and b must be integers".into(),
                }),
            }
        })
    }
}

/// `explode`: always fails.
pub struct Failing;

impl NativeTool for Failing {
    fn name(&self) -> &str {
        "explode"
    }
    fn description(&self) -> &str {
        "Always fails."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn call(&self, _input: Value, _cancel: CancellationToken) -> BoxFuture<'_, NativeToolResult> {
        Box::pin(async {
            Err(NativeToolError::Failed {
                message: "the fuse blew".into(),
            })
        })
    }
}

/// `meet`: waits at a barrier shared with other calls, so it only returns
/// when they run at the same time.
pub struct Meet(pub Arc<Barrier>);

impl NativeTool for Meet {
    fn name(&self) -> &str {
        "meet"
    }
    fn description(&self) -> &str {
        "Waits for the other callers."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn call(&self, _input: Value, _cancel: CancellationToken) -> BoxFuture<'_, NativeToolResult> {
        Box::pin(async move {
            self.0.wait().await;
            Ok("met".to_owned())
        })
    }
}

/// `gauge`: counts the calls running at once (each yields a few times before it ends, so calls
/// started together overlap) and the most seen.
#[derive(Default)]
pub struct Gauge {
    running: std::sync::atomic::AtomicUsize,
    pub peak: std::sync::atomic::AtomicUsize,
    pub calls: std::sync::atomic::AtomicUsize,
}

impl NativeTool for Gauge {
    fn name(&self) -> &str {
        "gauge"
    }
    fn description(&self) -> &str {
        "Counts the calls running at once."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn call(&self, _input: Value, _cancel: CancellationToken) -> BoxFuture<'_, NativeToolResult> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async move {
            self.calls.fetch_add(1, SeqCst);
            let now = self.running.fetch_add(1, SeqCst) + 1;
            self.peak.fetch_max(now, SeqCst);
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            self.running.fetch_sub(1, SeqCst);
            Ok("counted".to_owned())
        })
    }
}

/// What `wait` lets a test observe.
#[derive(Default)]
pub struct WaitState {
    pub started: Notify,
    pub saw_cancel: Mutex<bool>,
}

impl WaitState {
    pub fn saw_cancel(&self) -> bool {
        *self.saw_cancel.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `wait`: signals that it started, then waits for its cancellation and
/// records that it saw it.
pub struct WaitForCancel(pub Arc<WaitState>);

impl NativeTool for WaitForCancel {
    fn name(&self) -> &str {
        "wait"
    }
    fn description(&self) -> &str {
        "Runs until cancelled."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn call(&self, _input: Value, cancel: CancellationToken) -> BoxFuture<'_, NativeToolResult> {
        Box::pin(async move {
            self.0.started.notify_one();
            cancel.cancelled().await;
            *self.0.saw_cancel.lock().unwrap_or_else(|p| p.into_inner()) = true;
            Err(NativeToolError::Failed {
                message: "cancelled".into(),
            })
        })
    }
}

/// A fake MCP side: offers fixed qualified tools, records calls, answers
/// `ran NAME with INPUT`, an `isError` result for names in `error_results`,
/// and meets at `barrier` when one is set.
#[derive(Default)]
pub struct FakeExecutor {
    pub tools: Vec<ToolDefinition>,
    pub error_results: BTreeSet<String>,
    /// Answered instead of `ran NAME with INPUT` when set.
    pub reply: Option<ToolResultContent>,
    pub barrier: Option<Arc<Barrier>>,
    pub calls: Mutex<Vec<(String, Value)>>,
    /// Where a name leads instead of `SERVER__TOOL` read from it (a server's tools changed).
    pub retargeted: BTreeMap<String, CallTarget>,
}

impl FakeExecutor {
    pub fn with_tools(names: &[&str]) -> Self {
        Self {
            tools: names
                .iter()
                .map(|name| {
                    ToolDefinition::new(
                        *name,
                        format!("The {name} tool."),
                        json!({"type": "object", "properties": {"command": {"type": "string"}}}),
                    )
                })
                .collect(),
            ..Self::default()
        }
    }

    pub fn recorded_calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl ToolExecutor for FakeExecutor {
    fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools.clone()
    }

    fn call<'a>(
        &'a self,
        qualified_name: &'a str,
        input: Value,
        _cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ToolResultContent, ToolCallError>> {
        Box::pin(async move {
            self.calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((qualified_name.to_owned(), input.clone()));
            if !self.tools.iter().any(|tool| tool.name == qualified_name) {
                return Err(ToolCallError::UnknownTool {
                    name: qualified_name.to_owned(),
                });
            }
            if let Some(barrier) = &self.barrier {
                barrier.wait().await;
            }
            if let Some(reply) = &self.reply {
                return Ok(reply.clone());
            }
            let text = format!("ran {qualified_name} with {input}");
            if self.error_results.contains(qualified_name) {
                Ok(ToolResultContent::error(text))
            } else {
                Ok(ToolResultContent::text(text))
            }
        })
    }

    fn target(&self, qualified_name: &str) -> Option<CallTarget> {
        if let Some(target) = self.retargeted.get(qualified_name) {
            return Some(target.clone());
        }
        self.tools.iter().find(|tool| tool.name == qualified_name)?;
        let (server, tool) = qualified_name.split_once("__")?;
        Some(CallTarget::Mcp {
            server: server.to_owned(),
            server_id: String::new(),
            tool: tool.to_owned(),
        })
    }
}
