//! The deferred-loading hook: the active tools are recomputed before every
//! step, so a tool a `tool_search` call found joins from the next step, and
//! a call to a tool not yet offered is refused with an error result.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use inference::{
    ActiveTools, ChatTurn, Message, NativeTool, NativeToolRegistry, NativeToolResult, StepContext,
    ToolDefinition, ToolExecutor, ToolResult,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::{FakeLlm, FakeReply, FakeToolCall};
use tokio_util::sync::CancellationToken;

use super::harness::{FakeExecutor, WIRES, model, offered_tools, provider, run};

/// A scripted `tool_search`: "finds" the tool named in `query` and adds it
/// to the shared set of loaded tools.
struct ScriptedToolSearch {
    loaded: Arc<Mutex<BTreeSet<String>>>,
}

impl NativeTool for ScriptedToolSearch {
    fn name(&self) -> &str {
        "tool_search"
    }
    fn description(&self) -> &str {
        "Finds tools."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"query": {"type": "string"}}})
    }
    fn call(&self, input: Value, _cancel: CancellationToken) -> BoxFuture<'_, NativeToolResult> {
        Box::pin(async move {
            let name = input["query"].as_str().unwrap_or_default().to_owned();
            self.loaded
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(name.clone());
            Ok(format!("loaded {name}"))
        })
    }
}

#[tokio::test]
async fn tools_found_by_search_join_from_the_next_step() -> anyhow::Result<()> {
    for wire in WIRES {
        let fake = FakeLlm::start([
            FakeReply::tool_calls([
                FakeToolCall::new("call_1", "forge-bash__run", ["{\"command\":\"ls\"}"]),
                FakeToolCall::new(
                    "call_2",
                    "tool_search",
                    ["{\"query\":", "\"forge-bash__run\"}"],
                ),
            ]),
            FakeReply::tool_calls([FakeToolCall::new(
                "call_3",
                "forge-bash__run",
                ["{\"command\":\"ls\"}"],
            )]),
            FakeReply::text(["Done."]),
        ])
        .await?;
        let loaded = Arc::new(Mutex::new(BTreeSet::new()));
        let mut native = NativeToolRegistry::new();
        native.register(Arc::new(ScriptedToolSearch {
            loaded: Arc::clone(&loaded),
        }))?;
        let executor = Arc::new(FakeExecutor::with_tools(&[
            "forge-bash__run",
            "forge-filesystem__read_text_file",
        ]));
        let steps_seen = Arc::new(Mutex::new(Vec::new()));
        let hook: Arc<dyn ActiveTools> = {
            let native = native.clone();
            let executor = Arc::clone(&executor);
            let loaded = Arc::clone(&loaded);
            let steps_seen = Arc::clone(&steps_seen);
            Arc::new(move |context: &StepContext<'_>| -> Vec<ToolDefinition> {
                steps_seen
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((context.step, context.messages.len()));
                let loaded = loaded.lock().unwrap_or_else(|p| p.into_inner());
                let mut tools = native.definitions();
                tools.extend(
                    executor
                        .definitions()
                        .into_iter()
                        .filter(|tool| loaded.contains(&tool.name)),
                );
                tools
            })
        };
        let turn = ChatTurn::new(provider(&fake, wire, Duration::from_secs(30))?, model(wire))
            .with_messages(vec![Message::user("List files.")])
            .with_native_tools(native)
            .with_tool_executor(executor.clone())
            .with_active_tools(hook);

        let (_events, outcome) = run(turn).await?;

        let offered: Vec<Vec<String>> = fake
            .requests()
            .iter()
            .map(|request| offered_tools(&request.body, wire))
            .collect();
        assert_eq!(
            offered,
            vec![
                vec!["tool_search".to_owned()],
                vec!["tool_search".to_owned(), "forge-bash__run".to_owned()],
                vec!["tool_search".to_owned(), "forge-bash__run".to_owned()],
            ],
            "{wire:?}"
        );
        assert_eq!(
            *steps_seen.lock().unwrap_or_else(|p| p.into_inner()),
            vec![(0, 1), (1, 3), (2, 5)],
            "{wire:?}: the hook sees each step and the history so far"
        );
        assert_eq!(
            outcome.messages.get(1),
            Some(&Message::ToolResults(vec![
                ToolResult {
                    call_id: "call_1".into(),
                    tool_name: "forge-bash__run".into(),
                    content: "tool `forge-bash__run` is not available in this step".into(),
                    is_error: true,
                    images: Vec::new(),
                },
                ToolResult {
                    call_id: "call_2".into(),
                    tool_name: "tool_search".into(),
                    content: "loaded forge-bash__run".into(),
                    is_error: false,
                    images: Vec::new(),
                },
            ])),
            "{wire:?}"
        );
        assert_eq!(
            executor.recorded_calls(),
            vec![("forge-bash__run".to_owned(), json!({"command": "ls"}))],
            "{wire:?}: only the call made after loading reached the executor"
        );
    }
    Ok(())
}
