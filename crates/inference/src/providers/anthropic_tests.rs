//! Decoder and request-body tests for the Anthropic wire format, against
//! fixture streams cut at every byte.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::conversation::{ToolCall, ToolResult};
use crate::providers::transport::testing::{cuttings, decode_pieces};
use crate::tool_schema::ToolDefinition;

const TEXT: &str = include_str!("../../fixtures/anthropic_text.sse");
const TOOL_USE: &str = include_str!("../../fixtures/anthropic_tool_use.sse");
const ERROR: &str = include_str!("../../fixtures/anthropic_error.sse");

async fn decode_every_way(fixture: &str, expected: &[Result<ProviderEvent, ProviderError>]) {
    for pieces in cuttings(fixture) {
        let boundaries: Vec<usize> = pieces.iter().map(Vec::len).collect();
        let got = decode_pieces(pieces, AnthropicDecoder::default(), ProviderKind::Anthropic).await;
        assert_eq!(got, expected, "pieces of sizes {boundaries:?}");
    }
}

#[tokio::test]
async fn text_stream_yields_deltas_then_finish_with_usage() {
    decode_every_way(
        TEXT,
        &[
            Ok(ProviderEvent::TextDelta("Hello".into())),
            Ok(ProviderEvent::TextDelta("! Grüße 🙂".into())),
            Ok(ProviderEvent::Finish {
                reason: FinishReason::Stop,
                usage: Usage {
                    input_tokens: 25,
                    output_tokens: 15,
                },
            }),
        ],
    )
    .await;
}

#[tokio::test]
async fn tool_use_blocks_stream_json_and_complete_at_block_stop() {
    decode_every_way(
        TOOL_USE,
        &[
            Ok(ProviderEvent::TextDelta("Okay, let's check".into())),
            Ok(ProviderEvent::ToolCallStart {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "get_weather".into(),
            }),
            Ok(ProviderEvent::ToolCallDelta {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                delta: "{\"location\":".into(),
            }),
            Ok(ProviderEvent::ToolCallDelta {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                delta: " \"San Francisco, CA\"}".into(),
            }),
            Ok(ProviderEvent::ToolCallComplete {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "get_weather".into(),
                input: Ok(json!({"location": "San Francisco, CA"})),
            }),
            Ok(ProviderEvent::ToolCallStart {
                id: "toolu_02".into(),
                name: "get_time".into(),
            }),
            Ok(ProviderEvent::ToolCallComplete {
                id: "toolu_02".into(),
                name: "get_time".into(),
                input: Ok(json!({})),
            }),
            Ok(ProviderEvent::Finish {
                reason: FinishReason::ToolCalls,
                usage: Usage {
                    input_tokens: 487,
                    output_tokens: 89,
                },
            }),
        ],
    )
    .await;
}

#[tokio::test]
async fn error_event_is_a_remote_error() {
    decode_every_way(
        ERROR,
        &[Err(ProviderError::Remote {
            provider: ProviderKind::Anthropic,
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
        })],
    )
    .await;
}

#[tokio::test]
async fn stream_closed_before_message_stop_is_truncated() {
    let cut = TEXT
        .split("event: message_delta")
        .next()
        .unwrap_or_default()
        .to_owned();
    let got = decode_pieces(
        vec![cut.into_bytes()],
        AnthropicDecoder::default(),
        ProviderKind::Anthropic,
    )
    .await;
    assert_eq!(
        got.last(),
        Some(&Err(ProviderError::Truncated {
            provider: ProviderKind::Anthropic
        }))
    );
}

#[test]
fn request_body_merges_tool_results_into_user_turns_and_skips_empty_text() {
    let request = StepRequest {
        model: "claude-sonnet-4-5".into(),
        system: "Be brief.".into(),
        messages: vec![
            Message::user("Weather in Paris?"),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "toolu_1".into(),
                    name: "weather__current".into(),
                    input: json!({"city": "Paris"}),
                }],
            },
            Message::ToolResults(vec![ToolResult {
                call_id: "toolu_1".into(),
                tool_name: "weather__current".into(),
                content: "upstream down".into(),
                is_error: true,
                images: Vec::new(),
            }]),
            Message::user("Try again?"),
        ],
        tools: vec![ToolDefinition::new(
            "weather__current",
            "Current weather",
            json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        )],
        max_output_tokens: Some(1000),
    };
    assert_eq!(
        request_body(&request),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1000,
            "system": "Be brief.",
            "stream": true,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "weather__current", "input": {"city": "Paris"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "upstream down", "is_error": true},
                    {"type": "text", "text": "Try again?"},
                ]},
            ],
            "tools": [{
                "name": "weather__current",
                "description": "Current weather",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }],
        })
    );
}

#[test]
fn a_tool_result_with_images_carries_them_as_image_blocks() {
    let request = StepRequest {
        model: "claude-sonnet-4-5".into(),
        system: String::new(),
        messages: vec![
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "toolu_1".into(),
                    name: "playwright__browser_take_screenshot".into(),
                    input: json!({}),
                }],
            },
            Message::ToolResults(vec![ToolResult {
                call_id: "toolu_1".into(),
                tool_name: "playwright__browser_take_screenshot".into(),
                content: "[image image/png, 8 base64 characters]".into(),
                is_error: false,
                images: vec![crate::ToolImage {
                    mime_type: "image/png".into(),
                    data: "iVBORw0K".into(),
                }],
            }]),
        ],
        tools: Vec::new(),
        max_output_tokens: Some(10),
    };
    assert_eq!(
        request_body(&request)["messages"][1],
        json!({"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [
                {"type": "text", "text": "[image image/png, 8 base64 characters]"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}},
            ],
            "is_error": false,
        }]})
    );
}
