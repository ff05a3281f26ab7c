//! A real turn against the fake provider, encoded as the AI SDK UI message
//! stream: the exact SSE body an HTTP layer would send.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use inference::{ChatTurn, Message, NativeToolRegistry, UiStreamEncoder};
use test_support::{FakeLlm, FakeReply, FakeToolCall};
use tokio_util::sync::CancellationToken;

use super::harness::{Adder, WIRES, bounded, model, provider};

#[tokio::test]
async fn tool_using_turn_streams_as_ui_message_chunks() -> anyhow::Result<()> {
    for wire in WIRES {
        let fake = FakeLlm::start([
            FakeReply::tool_calls([FakeToolCall::new(
                "call_1",
                "add",
                ["{\"a\":40,", "\"b\":2}"],
            )])
            .with_text(["Let me add."]),
            FakeReply::text(["It is ", "42."]),
        ])
        .await?;
        let mut native = NativeToolRegistry::new();
        native.register(Arc::new(Adder))?;
        let turn = ChatTurn::new(provider(&fake, wire, Duration::from_secs(30))?, model(wire))
            .with_messages(vec![Message::user("40 + 2?")])
            .with_native_tools(native);
        let (events, handle) = turn.spawn(CancellationToken::new());

        let body = UiStreamEncoder::new("msg-1").into_sse(events);
        let body = bounded("the stream's end", body.collect::<Vec<_>>())
            .await?
            .concat();
        bounded("the outcome", handle).await??;

        // Both wire formats stream the same UI chunks.
        insta::assert_snapshot!("tool_using_turn_ui_stream", body);
    }
    Ok(())
}
