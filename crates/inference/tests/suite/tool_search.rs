//! Deferred discovery end to end: the real `tool_search` over a catalog, a
//! scripted model that searches, then calls what it found in the following
//! step of the same turn; and the token saving of deferred loading with the
//! five seeded servers' real tool lists.

use std::sync::Arc;
use std::time::Duration;

use inference::{
    CatalogEntry, ChatTurn, Message, NativeToolRegistry, ToolCatalog, ToolDefinition, ToolExecutor,
    ToolLoading, ToolSearchTool, definition_tokens, plan_tools,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::{FakeLlm, FakeReply, FakeToolCall};

use super::harness::{FakeExecutor, WIRES, model, offered_tools, provider, run};

fn entries(executor: &FakeExecutor) -> Vec<CatalogEntry> {
    executor
        .definitions()
        .into_iter()
        .map(|tool| {
            let (server, raw) = tool.name.split_once("__").expect("qualified");
            CatalogEntry {
                qualified: tool.name.clone(),
                server: server.to_owned(),
                tool: raw.to_owned(),
                description: tool.description.clone(),
                input_schema: tool.input_schema.clone(),
                server_instructions: String::new(),
            }
        })
        .collect()
}

#[tokio::test]
async fn a_model_finds_a_tool_by_search_and_calls_it_in_the_next_step() -> anyhow::Result<()> {
    for wire in WIRES {
        let fake = FakeLlm::start([
            FakeReply::tool_calls([FakeToolCall::new(
                "call_1",
                "tool_search",
                [
                    "{\"query\":\"run a shell ",
                    "command\",\"mcp_server\":\"forge-bash\"}",
                ],
            )]),
            FakeReply::tool_calls([FakeToolCall::new(
                "call_2",
                "forge-bash__run",
                ["{\"command\":\"echo hi\"}"],
            )]),
            FakeReply::text(["It printed hi."]),
        ])
        .await?;
        let executor = Arc::new(FakeExecutor::with_tools(&[
            "forge-bash__run",
            "forge-filesystem__read_text_file",
            "playwright__browser_navigate",
        ]));
        let catalog = Arc::new(ToolCatalog::build(&entries(&executor)));
        let plan = plan_tools(
            ToolLoading::Deferred,
            0,
            NativeToolRegistry::new(),
            Arc::new(ToolSearchTool::new(catalog)),
            executor.definitions(),
            vec![],
        );
        let turn = ChatTurn::new(provider(&fake, wire, Duration::from_secs(30))?, model(wire))
            .with_messages(vec![Message::user("Say hi from the shell.")])
            .with_native_tools(plan.native)
            .with_tool_executor(executor.clone())
            .with_active_tools(plan.active);

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
            executor.recorded_calls(),
            vec![("forge-bash__run".to_owned(), json!({"command": "echo hi"}))],
            "{wire:?}"
        );
        let Some(Message::ToolResults(results)) = outcome.messages.get(1) else {
            panic!(
                "{wire:?}: no tool results after step 1: {:?}",
                outcome.messages
            );
        };
        let found: Value = serde_json::from_str(&results[0].content)?;
        assert_eq!(found["tools"][0]["name"], "forge-bash__run", "{wire:?}");
        assert_eq!(found["tools"].as_array().map(Vec::len), Some(1), "{wire:?}");
    }
    Ok(())
}

/// The tools of the five seeded servers: the four forge servers' committed
/// manifests and Playwright MCP's captured `tools/list`.
fn seeded_tools() -> Vec<ToolDefinition> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut tools = Vec::new();
    for server in [
        "forge-bash",
        "forge-filesystem",
        "forge-discovery",
        "forge-typesense",
    ] {
        let path = format!("{root}/apps/{server}/tools.manifest.json");
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")),
        )
        .expect("manifest JSON");
        for tool in manifest["tools"].as_array().expect("tools") {
            tools.push(definition(server, tool));
        }
    }
    let path = format!("{root}/crates/tool-search/eval/servers/playwright.json");
    let capture: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("capture")).expect("JSON");
    for tool in capture["tools"].as_array().expect("tools") {
        tools.push(definition("playwright", tool));
    }
    tools
}

fn definition(server: &str, tool: &Value) -> ToolDefinition {
    ToolDefinition::new(
        format!("{server}__{}", tool["name"].as_str().expect("name")),
        tool["description"].as_str().unwrap_or_default(),
        tool["inputSchema"].clone(),
    )
}

#[test]
fn deferred_sends_at_least_80_percent_fewer_tool_tokens_with_the_seeded_servers() {
    let tools = seeded_tools();
    assert!(tools.len() >= 40, "{} tools", tools.len());
    let catalog: Vec<CatalogEntry> = tools
        .iter()
        .map(|t| {
            let (server, raw) = t.name.split_once("__").expect("qualified");
            CatalogEntry {
                qualified: t.name.clone(),
                server: server.into(),
                tool: raw.into(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
                server_instructions: String::new(),
            }
        })
        .collect();
    let search = Arc::new(ToolSearchTool::new(Arc::new(ToolCatalog::build(&catalog))));
    let eager = plan_tools(
        ToolLoading::Eager,
        0,
        NativeToolRegistry::new(),
        search.clone(),
        tools.clone(),
        vec![],
    );
    let deferred = plan_tools(
        ToolLoading::Deferred,
        0,
        NativeToolRegistry::new(),
        search,
        tools,
        vec![],
    );
    let first_step = inference::StepContext {
        step: 0,
        messages: &[],
    };
    let eager_tokens = definition_tokens(&eager.active.tools_for_step(&first_step));
    let deferred_tokens = definition_tokens(&deferred.active.tools_for_step(&first_step));
    let saving = 1.0 - deferred_tokens as f64 / eager_tokens as f64;
    eprintln!(
        "tool-definition tokens, first request: eager {eager_tokens}, deferred {deferred_tokens}, saving {:.1}%",
        saving * 100.0
    );
    assert_eq!(eager.eager_tokens, eager_tokens);
    assert!(
        saving >= 0.80,
        "eager {eager_tokens} deferred {deferred_tokens}"
    );
}
