//! The Anthropic Messages wire format, streamed. Owns the request body
//! ([`request_body`]), the event decoder and [`AnthropicProvider`].
//!
//! Request: `POST {base}/v1/messages` with `x-api-key`,
//! `anthropic-version: 2023-06-01`, `stream: true`, tools as
//! `{name, description, input_schema}`; tool results go back in a user
//! message as `tool_result` blocks. Response: `event: NAME` / `data: {…}`
//! pairs — `message_start`, `content_block_start` / `_delta` / `_stop`,
//! `message_delta`, `message_stop`, `ping`, `error`.

use std::collections::BTreeMap;
use std::time::Duration;

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{Value, json};

use super::openai::parse_arguments;
use super::transport::{HttpCall, StreamDecoder, stream_sse};
use super::{Provider, ProviderError, ProviderEvent, ProviderKind, ProviderStream, StepRequest};
use crate::conversation::{FinishReason, Message, Usage};

/// The default base URL (the `/v1/messages` path is appended).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version this module speaks.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Anthropic Messages API.
#[derive(Clone)]
pub struct AnthropicProvider {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    idle_timeout: Duration,
}

/// Whether the key is set, never the key; the base URL as it may be shown.
impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        super::transport::debug_endpoint(
            f,
            "AnthropicProvider",
            self.api_key.as_ref(),
            Some(&self.base_url),
        )
    }
}

impl AnthropicProvider {
    pub fn new(
        client: reqwest::Client,
        base_url: impl Into<String>,
        api_key: Option<String>,
        idle_timeout: Duration,
    ) -> Self {
        Self {
            client,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key,
            idle_timeout,
        }
    }
}

impl Provider for AnthropicProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }

    fn stream_step(&self, request: StepRequest) -> ProviderStream {
        let url = format!("{}/v1/messages", self.base_url);
        let mut builder = self
            .client
            .post(&url)
            .header("anthropic-version", API_VERSION)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(&request_body(&request));
        if let Some(key) = &self.api_key {
            builder = builder.header("x-api-key", key);
        }
        let call = HttpCall {
            provider: ProviderKind::Anthropic,
            url,
            request: builder,
            idle_timeout: self.idle_timeout,
        };
        stream_sse(call, AnthropicDecoder::default())
    }
}

/// The JSON body of a streaming Messages request.
///
/// Consecutive messages of the same role are merged (tool results followed
/// by a user message become one user message), and empty text blocks are
/// left out: the API refuses both.
pub fn request_body(request: &StepRequest) -> Value {
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::User { text } => ("user", text_block(text).into_iter().collect()),
            Message::Assistant { text, tool_calls } => {
                let mut blocks: Vec<Value> = text_block(text).into_iter().collect();
                blocks.extend(tool_calls.iter().map(|call| {
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input})
                }));
                ("assistant", blocks)
            }
            Message::ToolResults(results) => (
                "user",
                results
                    .iter()
                    .map(|result| {
                        json!({
                            "type": "tool_result",
                            "tool_use_id": result.call_id,
                            "content": tool_result_content(result),
                            "is_error": result.is_error,
                        })
                    })
                    .collect(),
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect::<Vec<_>>(),
        "stream": true,
    });
    if !request.system.is_empty() {
        body["system"] = json!(request.system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                })
            })
            .collect();
    }
    body
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

#[derive(Deserialize)]
struct MessageStart {
    message: StartedMessage,
}

#[derive(Deserialize)]
struct StartedMessage {
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Every prompt token the step consumed, cached or not.
    fn input(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }
}

#[derive(Deserialize)]
struct BlockStart {
    index: usize,
    content_block: ContentBlock,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum ContentBlock {
    #[serde(rename = "tool_use")]
    ToolUse { id: String, name: String },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct BlockDelta {
    index: usize,
    delta: DeltaBody,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum DeltaBody {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct BlockStop {
    index: usize,
}

#[derive(Deserialize)]
struct MessageDelta {
    delta: MessageDeltaBody,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct ErrorEvent {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    message: String,
}

struct ToolBlock {
    id: String,
    name: String,
    json: String,
}

/// Decodes Messages stream events.
#[derive(Default)]
pub(crate) struct AnthropicDecoder {
    tool_blocks: BTreeMap<usize, ToolBlock>,
    usage: Usage,
    stop_reason: Option<FinishReason>,
    finished: bool,
}

fn parse<'a, T: Deserialize<'a>>(event: &'a Event) -> Result<T, ProviderError> {
    serde_json::from_str(&event.data).map_err(|error| ProviderError::Malformed {
        provider: ProviderKind::Anthropic,
        detail: format!("`{}` event: {error}", event.event),
    })
}

impl StreamDecoder for AnthropicDecoder {
    fn feed(&mut self, event: &Event) -> Result<Vec<ProviderEvent>, ProviderError> {
        let mut out = Vec::new();
        match event.event.as_str() {
            "message_start" => {
                let start: MessageStart = parse(event)?;
                if let Some(input) = start.message.usage.input() {
                    self.usage.input_tokens = input;
                }
                if let Some(output) = start.message.usage.output_tokens {
                    self.usage.output_tokens = output;
                }
            }
            "content_block_start" => {
                let start: BlockStart = parse(event)?;
                if let ContentBlock::ToolUse { id, name } = start.content_block {
                    out.push(ProviderEvent::ToolCallStart {
                        id: id.clone(),
                        name: name.clone(),
                    });
                    self.tool_blocks.insert(
                        start.index,
                        ToolBlock {
                            id,
                            name,
                            json: String::new(),
                        },
                    );
                }
            }
            "content_block_delta" => {
                let delta: BlockDelta = parse(event)?;
                match delta.delta {
                    DeltaBody::Text { text } if !text.is_empty() => {
                        out.push(ProviderEvent::TextDelta(text));
                    }
                    DeltaBody::InputJson { partial_json } if !partial_json.is_empty() => {
                        if let Some(block) = self.tool_blocks.get_mut(&delta.index) {
                            block.json.push_str(&partial_json);
                            out.push(ProviderEvent::ToolCallDelta {
                                id: block.id.clone(),
                                delta: partial_json,
                            });
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let stop: BlockStop = parse(event)?;
                if let Some(block) = self.tool_blocks.remove(&stop.index) {
                    out.push(ProviderEvent::ToolCallComplete {
                        input: parse_arguments(&block.json),
                        id: block.id,
                        name: block.name,
                    });
                }
            }
            "message_delta" => {
                let delta: MessageDelta = parse(event)?;
                if let Some(reason) = delta.delta.stop_reason {
                    self.stop_reason = Some(stop_reason(&reason));
                }
                if let Some(input) = delta.usage.input() {
                    self.usage.input_tokens = input;
                }
                if let Some(output) = delta.usage.output_tokens {
                    self.usage.output_tokens = output;
                }
            }
            "message_stop" => {
                self.finished = true;
                out.push(ProviderEvent::Finish {
                    reason: self.stop_reason.clone().unwrap_or(FinishReason::Stop),
                    usage: self.usage,
                });
            }
            "error" => {
                let error: ErrorEvent = parse(event)?;
                return Err(ProviderError::Remote {
                    provider: ProviderKind::Anthropic,
                    kind: error.error.kind,
                    message: error.error.message,
                });
            }
            // `ping`, and event types added later: the API asks clients to
            // ignore what they do not know.
            _ => {}
        }
        Ok(out)
    }

    fn end(&mut self) -> Result<Vec<ProviderEvent>, ProviderError> {
        if self.finished {
            Ok(Vec::new())
        } else {
            Err(ProviderError::Truncated {
                provider: ProviderKind::Anthropic,
            })
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}

fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;

/// A `tool_result`'s content: its text, or, when it carries images, a text block followed
/// by one base64 `image` block per image.
fn tool_result_content(result: &crate::ToolResult) -> Value {
    if result.images.is_empty() {
        return Value::String(result.content.clone());
    }
    // Anthropic refuses an empty text block: none when there is no text.
    let mut blocks: Vec<Value> = text_block(&result.content).into_iter().collect();
    blocks.extend(result.images.iter().map(|image| {
        json!({
            "type": "image",
            "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
        })
    }));
    Value::Array(blocks)
}
