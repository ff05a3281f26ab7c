//! Snapshots of the exact SSE text the encoder writes, and round trips of
//! the chunk vocabulary.

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::conversation::{FinishReason, Usage};
use crate::providers::{ProviderError, ProviderKind};

async fn body(events: Vec<TurnEvent>, encoder: UiStreamEncoder) -> String {
    encoder
        .into_sse(futures::stream::iter(events))
        .collect::<Vec<_>>()
        .await
        .concat()
}

fn tool_step() -> Vec<TurnEvent> {
    vec![
        TurnEvent::StepStarted { step: 0 },
        TurnEvent::TextDelta("Let me ".into()),
        TurnEvent::TextDelta("check.".into()),
        TurnEvent::ToolInputStarted {
            call_id: "call_1".into(),
            tool_name: "forge-bash__run".into(),
        },
        TurnEvent::ToolInputDelta {
            call_id: "call_1".into(),
            delta: "{\"command\":".into(),
        },
        TurnEvent::ToolInputDelta {
            call_id: "call_1".into(),
            delta: "\"ls\"}".into(),
        },
        TurnEvent::ToolInputAvailable {
            call_id: "call_1".into(),
            tool_name: "forge-bash__run".into(),
            input: json!({"command": "ls"}),
        },
        TurnEvent::ToolInputStarted {
            call_id: "call_2".into(),
            tool_name: "clock".into(),
        },
        TurnEvent::ToolInputAvailable {
            call_id: "call_2".into(),
            tool_name: "clock".into(),
            input: json!({}),
        },
        TurnEvent::ToolOutputError {
            call_id: "call_2".into(),
            error: "the tool call timed out after 1s".into(),
        },
        TurnEvent::ToolOutputAvailable {
            call_id: "call_1".into(),
            output: "README.md\nsrc".into(),
        },
        TurnEvent::StepFinished {
            step: 0,
            reason: FinishReason::ToolCalls,
            usage: Usage {
                input_tokens: 100,
                output_tokens: 20,
            },
        },
    ]
}

#[tokio::test]
async fn tool_using_turn_encodes_to_the_documented_chunks() {
    let mut events = tool_step();
    events.extend([
        TurnEvent::StepStarted { step: 1 },
        TurnEvent::TextDelta("Two entries: README.md and src.".into()),
        TurnEvent::StepFinished {
            step: 1,
            reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: 140,
                output_tokens: 9,
            },
        },
        TurnEvent::Finished {
            reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: 240,
                output_tokens: 29,
            },
            step_limit_reached: false,
        },
    ]);
    insta::assert_snapshot!(body(events, UiStreamEncoder::new("msg-1")).await);
}

#[tokio::test]
async fn provider_failure_closes_the_text_part_then_reports_the_error() {
    let events = vec![
        TurnEvent::StepStarted { step: 0 },
        TurnEvent::TextDelta("Partial".into()),
        TurnEvent::Failed {
            error: ProviderError::Http {
                provider: ProviderKind::Anthropic,
                status: 529,
                body_excerpt: "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"
                    .into(),
            },
        },
    ];
    insta::assert_snapshot!(body(events, UiStreamEncoder::new("msg-2")).await);
}

#[tokio::test]
async fn aborted_turn_ends_with_abort_and_static_tools_omit_dynamic() {
    let mut events = tool_step();
    events.truncate(7);
    events.push(TurnEvent::Aborted);
    let encoder = UiStreamEncoder::new("msg-3").with_dynamic_tools(false);
    insta::assert_snapshot!(body(events, encoder).await);
}

#[test]
fn chunks_use_the_sdk_field_names() {
    let cases = [
        (
            UiMessageChunk::Start {
                message_id: Some("m".into()),
            },
            json!({"type": "start", "messageId": "m"}),
        ),
        (UiMessageChunk::StartStep, json!({"type": "start-step"})),
        (
            UiMessageChunk::TextDelta {
                id: "t".into(),
                delta: "d".into(),
            },
            json!({"type": "text-delta", "id": "t", "delta": "d"}),
        ),
        (
            UiMessageChunk::ToolInputStart {
                tool_call_id: "c".into(),
                tool_name: "n".into(),
                dynamic: None,
            },
            json!({"type": "tool-input-start", "toolCallId": "c", "toolName": "n"}),
        ),
        (
            UiMessageChunk::ToolInputDelta {
                tool_call_id: "c".into(),
                input_text_delta: "{".into(),
            },
            json!({"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": "{"}),
        ),
        (
            UiMessageChunk::ToolInputAvailable {
                tool_call_id: "c".into(),
                tool_name: "n".into(),
                input: json!({"a": 1}),
                dynamic: Some(true),
            },
            json!({"type": "tool-input-available", "toolCallId": "c", "toolName": "n",
                   "input": {"a": 1}, "dynamic": true}),
        ),
        (
            UiMessageChunk::ToolOutputAvailable {
                tool_call_id: "c".into(),
                output: json!("ok"),
                dynamic: None,
            },
            json!({"type": "tool-output-available", "toolCallId": "c", "output": "ok"}),
        ),
        (
            UiMessageChunk::ToolOutputError {
                tool_call_id: "c".into(),
                error_text: "bad".into(),
                dynamic: None,
            },
            json!({"type": "tool-output-error", "toolCallId": "c", "errorText": "bad"}),
        ),
        (
            UiMessageChunk::File {
                url: "data:image/png;base64,AAAA".into(),
                media_type: "image/png".into(),
            },
            json!({"type": "file", "url": "data:image/png;base64,AAAA", "mediaType": "image/png"}),
        ),
        (UiMessageChunk::FinishStep, json!({"type": "finish-step"})),
        (
            UiMessageChunk::Finish {
                message_metadata: None,
            },
            json!({"type": "finish"}),
        ),
        (
            UiMessageChunk::Error {
                error_text: "e".into(),
            },
            json!({"type": "error", "errorText": "e"}),
        ),
        (UiMessageChunk::Abort, json!({"type": "abort"})),
    ];
    for (chunk, expected) in cases {
        let encoded = serde_json::to_value(&chunk).expect("serialises");
        assert_eq!(encoded, expected);
        let decoded: UiMessageChunk = serde_json::from_value(expected).expect("deserialises");
        assert_eq!(decoded, chunk);
    }
}

#[tokio::test]
async fn a_tool_result_s_images_follow_its_output_as_file_parts() {
    let events = vec![
        TurnEvent::StepStarted { step: 0 },
        TurnEvent::ToolOutputAvailable {
            call_id: "call_1".into(),
            output: "[image image/png, 4 base64 characters]".into(),
        },
        TurnEvent::ToolImages {
            call_id: "call_1".into(),
            images: vec![crate::ToolImage {
                mime_type: "image/png".into(),
                data: "AAAA".into(),
            }],
        },
    ];
    let text = body(events, UiStreamEncoder::new("msg-4")).await;
    let output = text.find("tool-output-available").expect("the output");
    let file = text
        .find(r#"{"type":"file","url":"data:image/png;base64,AAAA","mediaType":"image/png"}"#)
        .expect("a file part");
    assert!(output < file, "{text}");
}
