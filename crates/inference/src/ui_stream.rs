//! The AI SDK UI message stream (v5/v6, header
//! `x-vercel-ai-ui-message-stream: v1`): what `useChat` reads. Owns the
//! chunk vocabulary [`UiMessageChunk`] (field names as the SDK's
//! `uiMessageChunkSchema` spells them), the [`UiStreamEncoder`] that turns
//! [`TurnEvent`]s into chunks, and the SSE framing: one `data: {json}\n\n`
//! per chunk, closed by `data: [DONE]\n\n`.
//!
//! Choices made here:
//! - text parts get ids `text-0`, `text-1`, … in order; a text part is
//!   closed before a tool part starts and at the end of a step;
//! - tool chunks carry `dynamic: true` by default: BotCraft's tools are not
//!   known to the client at build time, so the client keeps them as
//!   `dynamic-tool` parts (as the SDK does for MCP tools);
//! - a call that waits for a person is `tool-input-available` then `tool-approval-request`
//!   (AI SDK 6), and the turn ends there; a call the person denied is `tool-output-denied`;
//! - a turn that continues the conversation's last assistant message (approvals answered)
//!   starts with that message's id, so the client appends to it;
//! - the finish reason and usage travel in `finish.messageMetadata`
//!   (`finishReason`, `usage.inputTokens` / `outputTokens` / `totalTokens`,
//!   `stepLimitReached`), never as fields the v5 schema does not know.

use futures::{Stream, StreamExt, stream};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::turn::TurnEvent;

/// The header that names the protocol, and its value.
pub const PROTOCOL_HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");
/// Headers of a UI message stream response.
pub const RESPONSE_HEADERS: [(&str, &str); 5] = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("connection", "keep-alive"),
    PROTOCOL_HEADER,
    ("x-accel-buffering", "no"),
];
/// The last frame of every stream.
pub const DONE_FRAME: &str = "data: [DONE]\n\n";

/// One chunk of the UI message stream. Serialises as
/// `{"type": "kebab-case-name", camelCaseFields…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum UiMessageChunk {
    Start {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    StartStep,
    TextStart {
        id: String,
    },
    TextDelta {
        id: String,
        delta: String,
    },
    TextEnd {
        id: String,
    },
    ToolInputStart {
        tool_call_id: String,
        tool_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
    ToolInputDelta {
        tool_call_id: String,
        input_text_delta: String,
    },
    ToolInputAvailable {
        tool_call_id: String,
        tool_name: String,
        input: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
    ToolOutputAvailable {
        tool_call_id: String,
        output: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
    ToolOutputError {
        tool_call_id: String,
        error_text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
    /// A call waits for a person's approval (AI SDK 6): the client shows it and answers with
    /// an `approval-responded` tool part carrying this `approvalId`.
    ToolApprovalRequest {
        approval_id: String,
        tool_call_id: String,
    },
    /// A call the person denied (AI SDK 6): it was not run.
    ToolOutputDenied {
        tool_call_id: String,
    },
    /// A file of the message (an image from a tool result), as a `data:` URL.
    File {
        url: String,
        media_type: String,
    },
    FinishStep,
    Finish {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    Error {
        error_text: String,
    },
    Abort,
}

impl UiMessageChunk {
    /// The chunk as one SSE frame: `data: {json}\n\n`.
    pub fn to_sse(&self) -> String {
        // A derived Serialize of strings and JSON values cannot fail.
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("data: {json}\n\n")
    }
}

/// Turns the events of one turn into UI message chunks for one assistant
/// message.
#[derive(Debug, Clone)]
pub struct UiStreamEncoder {
    message_id: String,
    dynamic_tools: bool,
    open_text: Option<String>,
    next_text: u32,
}

impl UiStreamEncoder {
    pub fn new(message_id: impl Into<String>) -> Self {
        Self {
            message_id: message_id.into(),
            dynamic_tools: true,
            open_text: None,
            next_text: 0,
        }
    }

    /// Whether tool chunks say `dynamic: true` (the default). Off, the
    /// client builds `tool-{name}` parts.
    pub fn with_dynamic_tools(mut self, dynamic: bool) -> Self {
        self.dynamic_tools = dynamic;
        self
    }

    /// The first chunk of the stream.
    pub fn start(&self) -> UiMessageChunk {
        UiMessageChunk::Start {
            message_id: Some(self.message_id.clone()),
        }
    }

    /// The chunks one event becomes (possibly none).
    pub fn encode(&mut self, event: &TurnEvent) -> Vec<UiMessageChunk> {
        let dynamic = self.dynamic_tools.then_some(true);
        let mut chunks = Vec::new();
        match event {
            TurnEvent::StepStarted { .. } => chunks.push(UiMessageChunk::StartStep),
            TurnEvent::TextDelta(delta) => {
                let id = match &self.open_text {
                    Some(id) => id.clone(),
                    None => {
                        let id = format!("text-{}", self.next_text);
                        self.next_text += 1;
                        self.open_text = Some(id.clone());
                        chunks.push(UiMessageChunk::TextStart { id: id.clone() });
                        id
                    }
                };
                chunks.push(UiMessageChunk::TextDelta {
                    id,
                    delta: delta.clone(),
                });
            }
            TurnEvent::ToolInputStarted { call_id, tool_name } => {
                self.close_text(&mut chunks);
                chunks.push(UiMessageChunk::ToolInputStart {
                    tool_call_id: call_id.clone(),
                    tool_name: tool_name.clone(),
                    dynamic,
                });
            }
            TurnEvent::ToolInputDelta { call_id, delta } => {
                chunks.push(UiMessageChunk::ToolInputDelta {
                    tool_call_id: call_id.clone(),
                    input_text_delta: delta.clone(),
                });
            }
            TurnEvent::ToolInputAvailable {
                call_id,
                tool_name,
                input,
            } => {
                self.close_text(&mut chunks);
                chunks.push(UiMessageChunk::ToolInputAvailable {
                    tool_call_id: call_id.clone(),
                    tool_name: tool_name.clone(),
                    input: input.clone(),
                    dynamic,
                });
            }
            TurnEvent::ToolOutputAvailable { call_id, output } => {
                chunks.push(UiMessageChunk::ToolOutputAvailable {
                    tool_call_id: call_id.clone(),
                    output: Value::String(output.clone()),
                    dynamic,
                });
            }
            TurnEvent::ToolOutputError { call_id, error } => {
                chunks.push(UiMessageChunk::ToolOutputError {
                    tool_call_id: call_id.clone(),
                    error_text: error.clone(),
                    dynamic,
                });
            }
            TurnEvent::ToolApprovalRequested {
                call_id,
                approval_id,
            } => {
                chunks.push(UiMessageChunk::ToolApprovalRequest {
                    approval_id: approval_id.clone(),
                    tool_call_id: call_id.clone(),
                });
            }
            TurnEvent::ToolOutputDenied { call_id } => {
                chunks.push(UiMessageChunk::ToolOutputDenied {
                    tool_call_id: call_id.clone(),
                });
            }
            TurnEvent::ToolImages { images, .. } => {
                chunks.extend(images.iter().map(|image| UiMessageChunk::File {
                    url: image.data_url(),
                    media_type: image.mime_type.clone(),
                }));
            }
            TurnEvent::StepFinished { .. } => {
                self.close_text(&mut chunks);
                chunks.push(UiMessageChunk::FinishStep);
            }
            TurnEvent::Finished {
                reason,
                usage,
                step_limit_reached,
            } => {
                self.close_text(&mut chunks);
                chunks.push(UiMessageChunk::Finish {
                    message_metadata: Some(json!({
                        "finishReason": reason.ai_sdk_name(),
                        "stepLimitReached": step_limit_reached,
                        "usage": {
                            "inputTokens": usage.input_tokens,
                            "outputTokens": usage.output_tokens,
                            "totalTokens": usage.total_tokens(),
                        },
                    })),
                });
            }
            TurnEvent::Failed { error } => {
                self.close_text(&mut chunks);
                chunks.push(UiMessageChunk::Error {
                    error_text: error.to_string(),
                });
            }
            TurnEvent::Aborted => {
                self.close_text(&mut chunks);
                chunks.push(UiMessageChunk::Abort);
            }
        }
        chunks
    }

    fn close_text(&mut self, chunks: &mut Vec<UiMessageChunk>) {
        if let Some(id) = self.open_text.take() {
            chunks.push(UiMessageChunk::TextEnd { id });
        }
    }

    /// The whole response body: `start`, the chunks of every event, then
    /// `[DONE]`, one SSE frame per item.
    pub fn into_sse<S>(self, events: S) -> impl Stream<Item = String> + Send + use<S>
    where
        S: Stream<Item = TurnEvent> + Send + 'static,
    {
        self.into_sse_with(events, |chunk| chunk)
    }

    /// [`Self::into_sse`] with every chunk passed through `rewrite` before it is framed
    /// (the host redacts error texts and adds its report to `finish` there). The one SSE
    /// framing of the chat stream: production and tests both go through it.
    pub fn into_sse_with<S, F>(
        mut self,
        events: S,
        mut rewrite: F,
    ) -> impl Stream<Item = String> + Send + use<S, F>
    where
        S: Stream<Item = TurnEvent> + Send + 'static,
        F: FnMut(UiMessageChunk) -> UiMessageChunk + Send + 'static,
    {
        let start = stream::iter([rewrite(self.start()).to_sse()]);
        let body = events.flat_map(move |event| {
            let frames: Vec<String> = self
                .encode(&event)
                .into_iter()
                .map(|chunk| rewrite(chunk).to_sse())
                .collect();
            stream::iter(frames)
        });
        start
            .chain(body)
            .chain(stream::iter([DONE_FRAME.to_owned()]))
    }
}

#[cfg(test)]
#[path = "ui_stream_tests.rs"]
mod tests;
