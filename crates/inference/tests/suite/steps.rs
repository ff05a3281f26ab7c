//! Multi-step tool use: results go back to the model, calls of a step run
//! concurrently, failed calls are told to the model, the step limit holds.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use inference::{
    ChatTurn, FinishReason, Message, NativeToolRegistry, ToolCall, ToolResult, TurnConfig, TurnEnd,
    TurnEvent, Usage,
};
use pretty_assertions::assert_eq;
use serde_json::json;
use test_support::{FakeLlm, FakeReply, FakeToolCall, Wire};
use tokio::sync::Barrier;

use super::harness::{
    Adder, Failing, FakeExecutor, Gauge, Meet, WIRES, WaitForCancel, WaitState, last_message,
    model, offered_tools, provider, run,
};

const IDLE: Duration = Duration::from_secs(30);

fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
    Usage {
        input_tokens,
        output_tokens,
    }
}

#[tokio::test]
async fn tool_results_go_back_to_the_model_until_it_answers() -> anyhow::Result<()> {
    for wire in WIRES {
        let fake = FakeLlm::start([
            FakeReply::tool_calls([FakeToolCall::new(
                "call_1",
                "add",
                ["{\"a\":2,", "\"b\":3}"],
            )])
            .with_text(["Adding."])
            .with_usage(30, 12),
            FakeReply::text(["The sum ", "is 5."]).with_usage(50, 6),
        ])
        .await?;
        let mut native = NativeToolRegistry::new();
        native.register(Arc::new(Adder))?;
        let turn = ChatTurn::new(provider(&fake, wire, IDLE)?, model(wire))
            .with_system_prompt("You add numbers.\n\n## Prefer short commands.\n")
            .with_messages(vec![Message::user("What is 2 + 3?")])
            .with_native_tools(native);

        let (events, outcome) = run(turn).await?;

        assert_eq!(
            events,
            vec![
                TurnEvent::StepStarted { step: 0 },
                TurnEvent::TextDelta("Adding.".into()),
                TurnEvent::ToolInputStarted {
                    call_id: "call_1".into(),
                    tool_name: "add".into()
                },
                TurnEvent::ToolInputDelta {
                    call_id: "call_1".into(),
                    delta: "{\"a\":2,".into()
                },
                TurnEvent::ToolInputDelta {
                    call_id: "call_1".into(),
                    delta: "\"b\":3}".into()
                },
                TurnEvent::ToolInputAvailable {
                    call_id: "call_1".into(),
                    tool_name: "add".into(),
                    input: json!({"a": 2, "b": 3}),
                },
                TurnEvent::ToolOutputAvailable {
                    call_id: "call_1".into(),
                    output: "5".into()
                },
                TurnEvent::StepFinished {
                    step: 0,
                    reason: FinishReason::ToolCalls,
                    usage: usage(30, 12)
                },
                TurnEvent::StepStarted { step: 1 },
                TurnEvent::TextDelta("The sum ".into()),
                TurnEvent::TextDelta("is 5.".into()),
                TurnEvent::StepFinished {
                    step: 1,
                    reason: FinishReason::Stop,
                    usage: usage(50, 6)
                },
                TurnEvent::Finished {
                    reason: FinishReason::Stop,
                    usage: usage(80, 18),
                    step_limit_reached: false
                },
            ],
            "{wire:?}"
        );
        assert_eq!(
            outcome.messages,
            vec![
                Message::Assistant {
                    text: "Adding.".into(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "add".into(),
                        input: json!({"a": 2, "b": 3}),
                    }],
                },
                Message::ToolResults(vec![ToolResult {
                    call_id: "call_1".into(),
                    tool_name: "add".into(),
                    content: "5".into(),
                    is_error: false,
                    images: Vec::new(),
                }]),
                Message::assistant("The sum is 5."),
            ],
            "{wire:?}"
        );
        assert_eq!(outcome.steps, 2, "{wire:?}");

        let requests = fake.requests();
        assert_eq!(requests.len(), 2, "{wire:?}");
        // Sent as given, trimmed.
        let system = "You add numbers.\n\n## Prefer short commands.";
        let first = &requests[0];
        let second = &requests[1];
        assert_eq!(offered_tools(&first.body, wire), vec!["add"], "{wire:?}");
        match wire {
            Wire::OpenAi => {
                assert_eq!(first.path, "/v1/chat/completions");
                assert_eq!(
                    first.headers,
                    BTreeMap::from([("authorization".into(), "Bearer test-openai-key".into())])
                );
                assert_eq!(
                    first.body["messages"][0],
                    json!({"role": "system", "content": system})
                );
                assert_eq!(
                    first.body["tools"][0]["function"]["parameters"],
                    json!({"type": "object", "required": ["a", "b"],
                           "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})
                );
                assert_eq!(
                    last_message(&second.body),
                    json!({"role": "tool", "tool_call_id": "call_1", "content": "5"})
                );
            }
            Wire::Anthropic => {
                assert_eq!(first.path, "/v1/messages");
                assert_eq!(
                    first.headers,
                    BTreeMap::from([
                        ("anthropic-version".into(), "2023-06-01".into()),
                        ("x-api-key".into(), "test-anthropic-key".into()),
                    ])
                );
                assert_eq!(first.body["system"], json!(system));
                assert_eq!(
                    last_message(&second.body),
                    json!({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "call_1", "content": "5", "is_error": false}
                    ]})
                );
            }
        }
    }
    Ok(())
}

#[tokio::test]
async fn tool_calls_of_one_step_run_concurrently() -> anyhow::Result<()> {
    for wire in WIRES {
        let fake = FakeLlm::start([
            FakeReply::tool_calls([
                FakeToolCall::new("call_a", "meet", ["{}"]),
                FakeToolCall::new("call_b", "forge-bash__run", ["{\"command\":", "\"ls\"}"]),
                FakeToolCall::new("call_c", "meet", [""]),
            ]),
            FakeReply::text(["All met."]),
        ])
        .await?;
        // Three calls, one barrier of three: it opens only if all three
        // are waiting at once. Run one after another, each would time out.
        let barrier = Arc::new(Barrier::new(3));
        let mut native = NativeToolRegistry::new();
        native.register(Arc::new(Meet(Arc::clone(&barrier))))?;
        let executor = Arc::new(FakeExecutor {
            barrier: Some(barrier),
            ..FakeExecutor::with_tools(&["forge-bash__run"])
        });
        let turn = ChatTurn::new(provider(&fake, wire, IDLE)?, model(wire))
            .with_messages(vec![Message::user("Meet.")])
            .with_native_tools(native)
            .with_tool_executor(executor.clone())
            .with_config(TurnConfig {
                tool_timeout: Duration::from_secs(10),
                ..TurnConfig::default()
            });

        let (_events, outcome) = run(turn).await?;

        assert_eq!(
            outcome.messages.get(1),
            Some(&Message::ToolResults(vec![
                ToolResult {
                    call_id: "call_a".into(),
                    tool_name: "meet".into(),
                    content: "met".into(),
                    is_error: false,
                    images: Vec::new(),
                },
                ToolResult {
                    call_id: "call_b".into(),
                    tool_name: "forge-bash__run".into(),
                    content: "ran forge-bash__run with {\"command\":\"ls\"}".into(),
                    is_error: false,
                    images: Vec::new(),
                },
                ToolResult {
                    call_id: "call_c".into(),
                    tool_name: "meet".into(),
                    content: "met".into(),
                    is_error: false,
                    images: Vec::new(),
                },
            ])),
            "{wire:?}"
        );
        assert_eq!(
            executor.recorded_calls(),
            vec![("forge-bash__run".to_owned(), json!({"command": "ls"}))],
            "{wire:?}"
        );
        assert_eq!(
            offered_tools(&fake.requests()[0].body, wire),
            vec!["meet", "forge-bash__run"],
            "{wire:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_step_runs_at_most_its_cap_of_calls_a_few_at_a_time() -> anyhow::Result<()> {
    use std::sync::atomic::Ordering::SeqCst;
    for wire in WIRES {
        // One reply of seven calls (a prompt injection asking for hundreds, made small).
        let calls = (1..=7).map(|n| FakeToolCall::new(&format!("call_{n}"), "gauge", ["{}"]));
        let fake =
            FakeLlm::start([FakeReply::tool_calls(calls), FakeReply::text(["Counted."])]).await?;
        let gauge = Arc::new(Gauge::default());
        let mut native = NativeToolRegistry::new();
        native.register(Arc::clone(&gauge) as Arc<dyn inference::NativeTool>)?;
        let turn = ChatTurn::new(provider(&fake, wire, IDLE)?, model(wire))
            .with_messages(vec![Message::user("Count.")])
            .with_native_tools(native)
            .with_config(TurnConfig {
                max_calls_per_step: 5,
                max_parallel_calls: 2,
                ..TurnConfig::default()
            });

        let (events, outcome) = run(turn).await?;

        assert_eq!(gauge.calls.load(SeqCst), 5, "{wire:?}");
        assert_eq!(gauge.peak.load(SeqCst), 2, "{wire:?}");
        let refused = "not run: this step asked for 7 tool calls and at most 5 run in one step; call the rest in the next step if they are still needed";
        let results: Vec<ToolResult> = (1..=7)
            .map(|n| ToolResult {
                call_id: format!("call_{n}"),
                tool_name: "gauge".into(),
                content: if n <= 5 { "counted" } else { refused }.into(),
                is_error: n > 5,
                images: Vec::new(),
            })
            .collect();
        assert_eq!(
            outcome.messages.get(1),
            Some(&Message::ToolResults(results)),
            "{wire:?}"
        );
        let errors: Vec<&str> = events
            .iter()
            .filter_map(|event| match event {
                TurnEvent::ToolOutputError { call_id, error } if error == refused => {
                    Some(call_id.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(errors, vec!["call_6", "call_7"], "{wire:?}");
        assert!(
            matches!(outcome.end, TurnEnd::Finished { .. }),
            "{wire:?}: {:?}",
            outcome.end
        );
    }
    Ok(())
}

#[tokio::test]
async fn failed_tool_calls_are_told_to_the_model_and_the_turn_goes_on() -> anyhow::Result<()> {
    for wire in WIRES {
        let fake = FakeLlm::start([
            FakeReply::tool_calls([
                FakeToolCall::new("call_1", "explode", ["{}"]),
                FakeToolCall::new("call_2", "docs__search", ["{\"command\":\"x\"}"]),
                FakeToolCall::new("call_3", "nowhere__tool", ["{}"]),
                FakeToolCall::new("call_4", "add", ["{\"a\":", "1"]),
            ]),
            FakeReply::text(["Everything failed."]),
        ])
        .await?;
        let mut native = NativeToolRegistry::new();
        native.register(Arc::new(Failing))?;
        native.register(Arc::new(Adder))?;
        let mut executor = FakeExecutor::with_tools(&["docs__search"]);
        executor.error_results.insert("docs__search".into());
        let turn = ChatTurn::new(provider(&fake, wire, IDLE)?, model(wire))
            .with_messages(vec![Message::user("Try everything.")])
            .with_native_tools(native)
            .with_tool_executor(Arc::new(executor));

        let (events, outcome) = run(turn).await?;

        let errors: Vec<&TurnEvent> = events
            .iter()
            .filter(|event| matches!(event, TurnEvent::ToolOutputError { .. }))
            .collect();
        assert_eq!(errors.len(), 4, "{wire:?}: {events:?}");
        let results = vec![
            ToolResult {
                call_id: "call_1".into(),
                tool_name: "explode".into(),
                content: "the fuse blew".into(),
                is_error: true,
                images: Vec::new(),
            },
            ToolResult {
                call_id: "call_2".into(),
                tool_name: "docs__search".into(),
                content: "ran docs__search with {\"command\":\"x\"}".into(),
                is_error: true,
                images: Vec::new(),
            },
            ToolResult {
                call_id: "call_3".into(),
                tool_name: "nowhere__tool".into(),
                content: "tool `nowhere__tool` is not available in this step".into(),
                is_error: true,
                images: Vec::new(),
            },
            ToolResult {
                call_id: "call_4".into(),
                tool_name: "add".into(),
                content: "invalid input for `add`: arguments are not valid JSON: \
                          EOF while parsing an object at line 1 column 6"
                    .into(),
                is_error: true,
                images: Vec::new(),
            },
        ];
        assert_eq!(
            outcome.messages.get(1),
            Some(&Message::ToolResults(results)),
            "{wire:?}"
        );
        assert_eq!(
            outcome.end,
            TurnEnd::Finished {
                reason: FinishReason::Stop,
                step_limit_reached: false
            },
            "{wire:?}"
        );
        let second = &fake.requests()[1].body;
        match wire {
            Wire::OpenAi => assert_eq!(
                second["messages"][2],
                json!({"role": "tool", "tool_call_id": "call_1", "content": "Error: the fuse blew"})
            ),
            Wire::Anthropic => assert_eq!(
                last_message(second)["content"][0],
                json!({"type": "tool_result", "tool_use_id": "call_1",
                       "content": "the fuse blew", "is_error": true})
            ),
        }
    }
    Ok(())
}

#[tokio::test]
async fn turn_stops_at_the_step_limit_after_running_the_last_calls() -> anyhow::Result<()> {
    for wire in WIRES {
        let fake = FakeLlm::start([
            FakeReply::tool_calls([FakeToolCall::new("call_1", "add", ["{\"a\":1,\"b\":1}"])]),
            FakeReply::tool_calls([FakeToolCall::new("call_2", "add", ["{\"a\":2,\"b\":2}"])]),
            FakeReply::text(["never asked for"]),
        ])
        .await?;
        let mut native = NativeToolRegistry::new();
        native.register(Arc::new(Adder))?;
        let turn = ChatTurn::new(provider(&fake, wire, IDLE)?, model(wire))
            .with_messages(vec![Message::user("Loop.")])
            .with_native_tools(native)
            .with_config(TurnConfig {
                max_steps: 2,
                ..TurnConfig::default()
            });

        let (events, outcome) = run(turn).await?;

        assert_eq!(
            events.last(),
            Some(&TurnEvent::Finished {
                reason: FinishReason::ToolCalls,
                usage: usage(20, 10),
                step_limit_reached: true,
            }),
            "{wire:?}"
        );
        assert_eq!(outcome.steps, 2, "{wire:?}");
        assert_eq!(
            outcome.messages.last(),
            Some(&Message::ToolResults(vec![ToolResult {
                call_id: "call_2".into(),
                tool_name: "add".into(),
                content: "4".into(),
                is_error: false,
                images: Vec::new(),
            }])),
            "{wire:?}"
        );
        assert_eq!(fake.requests().len(), 2, "{wire:?}");
        assert_eq!(fake.remaining_replies(), 1, "{wire:?}");
    }
    Ok(())
}

#[tokio::test]
async fn tool_call_past_its_deadline_is_told_to_the_model_as_an_error() -> anyhow::Result<()> {
    for wire in WIRES {
        let fake = FakeLlm::start([
            FakeReply::tool_calls([FakeToolCall::new("call_1", "wait", ["{}"])]),
            FakeReply::text(["It timed out."]),
        ])
        .await?;
        let state = Arc::new(WaitState::default());
        let mut native = NativeToolRegistry::new();
        native.register(Arc::new(WaitForCancel(Arc::clone(&state))))?;
        let turn = ChatTurn::new(provider(&fake, wire, IDLE)?, model(wire))
            .with_messages(vec![Message::user("Wait forever.")])
            .with_native_tools(native)
            .with_config(TurnConfig {
                tool_timeout: Duration::from_millis(200),
                ..TurnConfig::default()
            });

        let (_events, outcome) = run(turn).await?;

        assert_eq!(
            outcome.messages.get(1),
            Some(&Message::ToolResults(vec![ToolResult {
                call_id: "call_1".into(),
                tool_name: "wait".into(),
                content: "the tool call timed out after 200ms".into(),
                is_error: true,
                images: Vec::new(),
            }])),
            "{wire:?}"
        );
        assert_eq!(
            outcome.messages.last(),
            Some(&Message::assistant("It timed out.")),
            "{wire:?}"
        );
    }
    Ok(())
}
