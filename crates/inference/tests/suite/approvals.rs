//! Tools that ask first: a call the gate names is shown with an approval id and not run, and
//! the turn ends; the conversation sent back with the answer settles it before the model is
//! asked again (run when approved and the id holds, told to the model when denied, refused
//! when the id was made for another call or is too old).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use inference::{
    ApprovalSigner, Approvals, CallTarget, ChatTurn, FinishReason, MemoryLedger, Message, TurnEnd,
    TurnEvent, UiMessage, read_conversation,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::{FakeLlm, FakeReply, FakeToolCall, Wire};

use super::harness::{FakeExecutor, model, provider, run};

const IDLE: Duration = Duration::from_secs(30);
const TTL: Duration = Duration::from_secs(600);
const ASKS: &str = "forge-bash__run";
const READS: &str = "fs__read";

/// The test's clock, and the ledger of used approval ids every turn of the test shares (as
/// replicas share the store's).
struct Clock(Arc<AtomicI64>, Arc<MemoryLedger>);

impl Clock {
    fn new() -> Self {
        let now = Arc::new(AtomicI64::new(1_700_000_000_000));
        let read = Arc::clone(&now);
        let ledger = MemoryLedger::new(Arc::new(move || read.load(Ordering::SeqCst)));
        Self(now, Arc::new(ledger))
    }

    fn signer(&self, bot: &str) -> ApprovalSigner {
        let now = Arc::clone(&self.0);
        ApprovalSigner::new(
            [42; 32],
            bot,
            "digest-of-the-chat-key",
            TTL,
            Arc::new(move || now.load(Ordering::SeqCst)),
        )
    }

    fn advance(&self, by: Duration) {
        self.0
            .fetch_add(i64::try_from(by.as_millis()).unwrap_or(0), Ordering::SeqCst);
    }
}

fn approvals(clock: &Clock) -> Approvals {
    Approvals {
        gate: Arc::new(BTreeSet::from([ASKS.to_owned()])),
        signer: clock.signer("forge"),
        ledger: Arc::clone(&clock.1) as Arc<dyn inference::ApprovalLedger>,
    }
}

fn turn(fake: &FakeLlm, executor: &Arc<FakeExecutor>, clock: &Clock) -> anyhow::Result<ChatTurn> {
    Ok(
        ChatTurn::new(provider(fake, Wire::OpenAi, IDLE)?, model(Wire::OpenAi))
            .with_tool_executor(Arc::clone(executor) as Arc<dyn inference::ToolExecutor>)
            .with_approvals(approvals(clock)),
    )
}

/// The conversation as an AI SDK 6 client sends it back after the person answered: the
/// assistant message with the call in `approval-responded`.
fn answered(
    input: Value,
    approval_id: &str,
    approved: bool,
    reason: Option<&str>,
) -> Vec<UiMessage> {
    let mut approval = json!({"id": approval_id, "approved": approved});
    if let Some(reason) = reason {
        approval["reason"] = json!(reason);
    }
    let messages = json!([
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "list the files"}]},
        {"id": "a1", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "dynamic-tool", "toolName": ASKS, "toolCallId": "c1", "state": "approval-responded",
             "input": input, "approval": approval},
            {"type": "dynamic-tool", "toolName": READS, "toolCallId": "c2", "state": "output-available",
             "input": {"command": "notes"}, "output": "ran fs__read"},
        ]},
    ]);
    serde_json::from_value(messages).unwrap_or_default()
}

/// The call the first turn showed: `forge-bash__run {"command": "ls"}` as `c1`.
fn shown() -> inference::ToolCall {
    inference::ToolCall {
        id: "c1".into(),
        name: ASKS.into(),
        input: json!({"command": "ls"}),
    }
}

/// Where [`ASKS`] leads when the first turn shows it.
fn asks_target() -> CallTarget {
    CallTarget::Mcp {
        server: "forge-bash".into(),
        server_id: String::new(),
        tool: "run".into(),
    }
}

/// A change the client made to the conversation before sending it back.
type Edit = fn(Vec<UiMessage>) -> Vec<UiMessage>;

/// What a resumed turn did: its events, the executor's calls, the provider's requests.
struct Resumed {
    events: Vec<TurnEvent>,
    executor: Arc<FakeExecutor>,
    fake: FakeLlm,
}

/// A turn over `messages` (a conversation sent back), its model then answering `reply`.
async fn resume(clock: &Clock, messages: &[UiMessage], reply: &str) -> anyhow::Result<Resumed> {
    resume_with(
        clock,
        messages,
        reply,
        FakeExecutor::with_tools(&[ASKS, READS]),
    )
    .await
}

/// [`resume`], the MCP side being `executor`.
async fn resume_with(
    clock: &Clock,
    messages: &[UiMessage],
    reply: &str,
    executor: FakeExecutor,
) -> anyhow::Result<Resumed> {
    let fake = FakeLlm::start([FakeReply::text([reply])]).await?;
    let executor = Arc::new(executor);
    let conversation = read_conversation(messages)?;
    let turn = turn(&fake, &executor, clock)?
        .with_messages(conversation.messages)
        .with_resumed_calls(conversation.resumed);
    let (events, _) = run(turn).await?;
    Ok(Resumed {
        events,
        executor,
        fake,
    })
}

#[tokio::test]
async fn a_call_that_asks_is_shown_not_run_and_the_turn_waits() -> anyhow::Result<()> {
    let clock = Clock::new();
    let fake = FakeLlm::start([FakeReply::tool_calls([
        FakeToolCall::new("c1", ASKS, [r#"{"command":"ls"}"#]),
        FakeToolCall::new("c2", READS, [r#"{"command":"notes"}"#]),
    ])])
    .await?;
    let executor = Arc::new(FakeExecutor::with_tools(&[ASKS, READS]));
    let turn = turn(&fake, &executor, &clock)?.with_messages(vec![Message::user("list the files")]);

    let (events, outcome) = run(turn).await?;

    let approval_id = events
        .iter()
        .find_map(|event| match event {
            TurnEvent::ToolApprovalRequested {
                call_id,
                approval_id,
            } if call_id == "c1" => Some(approval_id.clone()),
            _ => None,
        })
        .ok_or_else(|| anyhow::anyhow!("no approval request: {events:?}"))?;
    assert_eq!(
        clock
            .signer("forge")
            .check(&approval_id, &shown(), &asks_target()),
        Ok(())
    );
    // The other call of the step ran; the one that asks did not.
    assert_eq!(
        executor.recorded_calls(),
        vec![(READS.to_owned(), json!({"command": "notes"}))]
    );
    let tail: Vec<&TurnEvent> = events.iter().rev().take(2).collect();
    assert!(
        matches!(
            tail[0],
            TurnEvent::Finished {
                reason: FinishReason::ToolCalls,
                step_limit_reached: false,
                ..
            }
        ),
        "{tail:?}"
    );
    assert!(
        matches!(tail[1], TurnEvent::StepFinished { .. }),
        "{tail:?}"
    );
    assert_eq!(
        outcome.end,
        TurnEnd::Finished {
            reason: FinishReason::ToolCalls,
            step_limit_reached: false
        }
    );
    assert_eq!(fake.requests().len(), 1, "the model is not asked again");
    Ok(())
}

#[tokio::test]
async fn an_approved_call_runs_first_then_the_model_reads_its_result() -> anyhow::Result<()> {
    let clock = Clock::new();
    let approval_id = clock.signer("forge").issue(&shown(), &asks_target());
    clock.advance(Duration::from_secs(30));
    let messages = answered(json!({"command": "ls"}), &approval_id, true, None);
    assert_eq!(
        read_conversation(&messages)?.continues.as_deref(),
        Some("a1")
    );

    let done = resume(&clock, &messages, "Two files.").await?;

    assert_eq!(
        done.events.first(),
        Some(&TurnEvent::ToolOutputAvailable {
            call_id: "c1".into(),
            output: r#"ran forge-bash__run with {"command":"ls"}"#.into()
        })
    );
    assert_eq!(
        done.executor.recorded_calls(),
        vec![(ASKS.to_owned(), json!({"command": "ls"}))]
    );
    // The model sees both results of the step, in the step's call order.
    let body = &done.fake.requests()[0].body;
    let tool_messages: Vec<(&str, &str)> = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or(""),
                m["content"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        tool_messages,
        vec![
            ("c1", r#"ran forge-bash__run with {"command":"ls"}"#),
            ("c2", "ran fs__read")
        ]
    );
    Ok(())
}

#[tokio::test]
async fn a_denied_call_is_not_run_and_the_model_is_told_why() -> anyhow::Result<()> {
    let clock = Clock::new();
    let approval_id = clock.signer("forge").issue(&shown(), &asks_target());
    let messages = answered(
        json!({"command": "ls"}),
        &approval_id,
        false,
        Some("not now"),
    );

    let done = resume(&clock, &messages, "Understood.").await?;

    assert_eq!(
        done.events.first(),
        Some(&TurnEvent::ToolOutputDenied {
            call_id: "c1".into()
        })
    );
    assert_eq!(done.executor.recorded_calls(), vec![]);
    let told = done.fake.requests()[0].body.to_string();
    assert!(
        told.contains("the user denied this tool call; it was not run. Their reason: not now"),
        "{told}"
    );
    Ok(())
}

#[tokio::test]
async fn a_tampered_or_stale_approval_is_refused_and_nothing_runs() -> anyhow::Result<()> {
    let renamed = |mut messages: Vec<UiMessage>| {
        messages[1].parts[1]["toolName"] = json!(READS);
        messages
    };
    // (what the client sends back, how long after the request, what the model is told)
    let cases: [(Value, Duration, Edit, &str); 3] = [
        (
            json!({"command": "rm -rf ~"}),
            Duration::ZERO,
            |m| m,
            "another call",
        ),
        (
            json!({"command": "ls"}),
            TTL + Duration::from_secs(1),
            |m| m,
            "approvals last 600 s",
        ),
        // Another tool under the same id (the client renamed the part's tool).
        (
            json!({"command": "ls"}),
            Duration::ZERO,
            renamed,
            "another call",
        ),
    ];
    for (input, after, edit, why) in cases {
        let clock = Clock::new();
        let approval_id = clock.signer("forge").issue(&shown(), &asks_target());
        clock.advance(after);
        let messages = edit(answered(input.clone(), &approval_id, true, None));

        let done = resume(&clock, &messages, "ok").await?;

        assert!(
            matches!(done.events.first(), Some(TurnEvent::ToolOutputError { call_id, error }) if call_id == "c1" && error.contains(why)),
            "{input}: {:?}",
            done.events
        );
        assert_eq!(done.executor.recorded_calls(), vec![], "{input}");
        let told = done.fake.requests()[0].body.to_string();
        assert!(
            told.contains("This call was not run: its approval was refused"),
            "{told}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn an_approval_runs_its_call_once_however_often_it_is_sent() -> anyhow::Result<()> {
    let clock = Clock::new();
    let approval_id = clock.signer("forge").issue(&shown(), &asks_target());
    let messages = answered(json!({"command": "ls"}), &approval_id, true, None);

    let first = resume(&clock, &messages, "Two files.").await?;
    assert_eq!(first.executor.recorded_calls().len(), 1);

    // The same approved message again, twice (a replay within the TTL): nothing runs, and the
    // model reads why.
    for _ in 0..2 {
        let again = resume(&clock, &messages, "ok").await?;
        assert_eq!(again.executor.recorded_calls(), vec![]);
        assert!(
            matches!(again.events.first(), Some(TurnEvent::ToolOutputError { call_id, error }) if call_id == "c1" && error.contains("already used")),
            "{:?}",
            again.events
        );
        let told = again.fake.requests()[0].body.to_string();
        assert!(told.contains("an approval runs its call once"), "{told}");
    }
    Ok(())
}

#[tokio::test]
async fn an_approval_id_spelt_otherwise_is_not_another_approval() -> anyhow::Result<()> {
    let clock = Clock::new();
    let approval_id = clock.signer("forge").issue(&shown(), &asks_target());
    let first = resume(
        &clock,
        &answered(json!({"command": "ls"}), &approval_id, true, None),
        "ok",
    )
    .await?;
    assert_eq!(first.executor.recorded_calls().len(), 1);

    // The same issue time and MAC, the time written with a leading zero or a sign: the
    // ledger would see a new id, so it is not one BotCraft issued.
    for respelt in [
        approval_id.replacen("ap2.", "ap2.0", 1),
        approval_id.replacen("ap2.", "ap2.+", 1),
    ] {
        let again = resume(
            &clock,
            &answered(json!({"command": "ls"}), &respelt, true, None),
            "ok",
        )
        .await?;
        assert_eq!(again.executor.recorded_calls(), vec![], "{respelt}");
        assert!(
            matches!(again.events.first(), Some(TurnEvent::ToolOutputError { call_id, error }) if call_id == "c1" && error.contains("not one BotCraft issued")),
            "{respelt}: {:?}",
            again.events
        );
    }
    Ok(())
}

#[tokio::test]
async fn an_approved_name_that_now_leads_to_another_tool_runs_nothing() -> anyhow::Result<()> {
    let clock = Clock::new();
    let approval_id = clock.signer("forge").issue(&shown(), &asks_target());
    let messages = answered(json!({"command": "ls"}), &approval_id, true, None);
    // Between the request and the answer, the server's tools changed and the bot's name
    // `forge-bash__run` now goes to another of its tools (or another server's).
    for now in [
        CallTarget::Mcp {
            server: "forge-bash".into(),
            server_id: String::new(),
            tool: "run.v2".into(),
        },
        CallTarget::Mcp {
            server: "forge-bash__run".into(),
            server_id: String::new(),
            tool: String::new(),
        },
    ] {
        let mut executor = FakeExecutor::with_tools(&[ASKS, READS]);
        executor.retargeted.insert(ASKS.to_owned(), now.clone());

        let done = resume_with(&clock, &messages, "ok", executor).await?;

        assert_eq!(done.executor.recorded_calls(), vec![], "{now:?}");
        assert!(
            matches!(done.events.first(), Some(TurnEvent::ToolOutputError { call_id, error }) if call_id == "c1" && error.contains("now leads to another tool")),
            "{now:?}: {:?}",
            done.events
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_duplicated_approved_part_runs_once() -> anyhow::Result<()> {
    let clock = Clock::new();
    let approval_id = clock.signer("forge").issue(&shown(), &asks_target());
    let mut messages = answered(json!({"command": "ls"}), &approval_id, true, None);
    let part = messages[1].parts[1].clone();
    messages[1].parts.insert(2, part);

    let done = resume(&clock, &messages, "ok").await?;

    assert_eq!(
        done.executor.recorded_calls(),
        vec![(ASKS.to_owned(), json!({"command": "ls"}))]
    );
    assert!(
        done.events.iter().any(|event| matches!(event, TurnEvent::ToolOutputError { call_id, error } if call_id == "c1" && error.contains("already used"))),
        "{:?}",
        done.events
    );
    Ok(())
}

/// A gate that lets everything through until it has been read again twice (the step's start
/// is the first): then `fs__read` asks.
#[derive(Default)]
struct Tightening(std::sync::atomic::AtomicUsize);

impl inference::ApprovalGate for Tightening {
    fn asks(&self, name: &str) -> bool {
        name == READS && self.0.load(Ordering::SeqCst) >= 2
    }

    fn refresh(&self) -> futures::future::BoxFuture<'_, ()> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::ready(()))
    }
}

#[tokio::test]
async fn a_call_that_waited_for_a_slot_asks_the_gate_again_when_it_starts() -> anyhow::Result<()> {
    let clock = Clock::new();
    let fake = FakeLlm::start([
        FakeReply::tool_calls([
            FakeToolCall::new("c1", READS, [r#"{"path":"a"}"#]),
            FakeToolCall::new("c2", READS, [r#"{"path":"b"}"#]),
        ]),
        FakeReply::text(["done"]),
    ])
    .await?;
    let executor = Arc::new(FakeExecutor::with_tools(&[READS]));
    let approvals = Approvals {
        gate: Arc::new(Tightening::default()),
        ..approvals(&clock)
    };
    // One call at a time: the second waits for the first, and its policy tightens meanwhile.
    let turn = ChatTurn::new(provider(&fake, Wire::OpenAi, IDLE)?, model(Wire::OpenAi))
        .with_tool_executor(Arc::clone(&executor) as Arc<dyn inference::ToolExecutor>)
        .with_approvals(approvals)
        .with_config(inference::TurnConfig {
            max_parallel_calls: 1,
            ..inference::TurnConfig::default()
        })
        .with_messages(vec![Message::user("read a and b")]);

    let (events, _) = run(turn).await?;

    assert_eq!(
        executor.recorded_calls(),
        vec![(READS.to_owned(), json!({"path": "a"}))]
    );
    let refused = events.iter().find_map(|event| match event {
        TurnEvent::ToolOutputError { call_id, error } if call_id == "c2" => Some(error.clone()),
        _ => None,
    });
    assert_eq!(
        refused.as_deref(),
        Some(
            "fs__read now waits for a person's approval (its policy changed during this turn): \
             call it again to ask"
        )
    );
    Ok(())
}
