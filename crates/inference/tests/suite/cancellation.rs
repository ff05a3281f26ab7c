//! Cancelling a turn: the provider request is dropped, tool calls in flight
//! see their cancellation, the turn ends with `Aborted` and leaves no tool
//! call without a result in its messages.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use inference::{ChatTurn, Message, NativeToolRegistry, TurnEnd, TurnEvent};
use pretty_assertions::assert_eq;
use test_support::{FakeLlm, FakeReply, FakeToolCall};
use tokio_util::sync::CancellationToken;

use super::harness::{WIRES, WaitForCancel, WaitState, bounded, model, provider};

const IDLE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn cancelling_mid_stream_drops_the_provider_request() -> anyhow::Result<()> {
    for wire in WIRES {
        let fake = FakeLlm::start([FakeReply::text(["Hel"]).then_hang()]).await?;
        let cancel = CancellationToken::new();
        let turn = ChatTurn::new(provider(&fake, wire, IDLE)?, model(wire))
            .with_messages(vec![Message::user("Hi")]);
        let (mut events, handle) = turn.spawn(cancel.clone());

        let mut seen = Vec::new();
        while let Some(event) = bounded("a text delta", events.next()).await? {
            let is_text = matches!(event, TurnEvent::TextDelta(_));
            seen.push(event);
            if is_text {
                break;
            }
        }
        cancel.cancel();
        seen.extend(bounded("the turn's end", events.collect::<Vec<_>>()).await?);
        let outcome = bounded("the outcome", handle).await??;

        assert_eq!(
            seen,
            vec![
                TurnEvent::StepStarted { step: 0 },
                TurnEvent::TextDelta("Hel".into()),
                TurnEvent::Aborted,
            ],
            "{wire:?}"
        );
        assert_eq!(outcome.end, TurnEnd::Aborted, "{wire:?}");
        assert_eq!(outcome.messages, vec![], "{wire:?}");
        bounded(
            "the fake to see the client go",
            fake.wait_for_disconnects(1),
        )
        .await?;
    }
    Ok(())
}

#[tokio::test]
async fn cancelling_during_a_tool_call_cancels_the_call() -> anyhow::Result<()> {
    for wire in WIRES {
        let fake = FakeLlm::start([
            FakeReply::tool_calls([FakeToolCall::new("call_1", "wait", ["{}"])]),
            FakeReply::text(["never asked for"]),
        ])
        .await?;
        let state = Arc::new(WaitState::default());
        let mut native = NativeToolRegistry::new();
        native.register(Arc::new(WaitForCancel(Arc::clone(&state))))?;
        let cancel = CancellationToken::new();
        let turn = ChatTurn::new(provider(&fake, wire, IDLE)?, model(wire))
            .with_messages(vec![Message::user("Wait.")])
            .with_native_tools(native);
        let (events, handle) = turn.spawn(cancel.clone());

        bounded("the tool call to start", state.started.notified()).await?;
        cancel.cancel();
        let events = bounded("the turn's end", events.collect::<Vec<_>>()).await?;
        let outcome = bounded("the outcome", handle).await??;

        assert!(
            state.saw_cancel(),
            "{wire:?}: the tool never saw its cancellation"
        );
        assert_eq!(events.last(), Some(&TurnEvent::Aborted), "{wire:?}");
        assert!(
            !events
                .iter()
                .any(|event| matches!(event, TurnEvent::ToolOutputError { .. })),
            "{wire:?}: a cancelled call reports no output: {events:?}"
        );
        assert_eq!(outcome.end, TurnEnd::Aborted, "{wire:?}");
        assert_eq!(outcome.messages, vec![], "{wire:?}");
        assert_eq!(fake.requests().len(), 1, "{wire:?}");
    }
    Ok(())
}

#[tokio::test]
async fn dropping_the_event_stream_cancels_the_turn() -> anyhow::Result<()> {
    let wire = WIRES[0];
    let fake = FakeLlm::start([FakeReply::text(["Hel"]).then_hang()]).await?;
    let turn = ChatTurn::new(provider(&fake, wire, IDLE)?, model(wire))
        .with_messages(vec![Message::user("Hi")]);
    let (mut events, handle) = turn.spawn(CancellationToken::new());
    bounded("the request to arrive", fake.wait_for_requests(1)).await?;
    bounded("the first event", events.next()).await?;
    drop(events);

    let outcome = bounded("the outcome", handle).await??;

    assert_eq!(outcome.end, TurnEnd::Aborted);
    bounded(
        "the fake to see the client go",
        fake.wait_for_disconnects(1),
    )
    .await?;
    Ok(())
}
