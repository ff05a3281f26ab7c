//! Incoming AI SDK `UIMessage`s (what `useChat` posts) turned into the
//! provider-neutral [`Message`]s a turn starts from. Owns [`UiMessage`] and
//! [`to_provider_messages`].
//!
//! Rules:
//! - `system` messages are dropped: the bot's system prompt is the server's;
//! - a user message keeps its `text` parts, joined by a blank line; other
//!   parts (files, data) are not sent to the model yet;
//! - an assistant message is cut into steps, at `step-start` parts and where
//!   text follows a tool part; each step becomes an assistant message with
//!   its text and tool calls, followed by the calls' results;
//! - tool parts are `tool-{name}` or `dynamic-tool` (with `toolName`); only
//!   finished calls are kept: `output-available` (the output, a string as
//!   is, anything else as JSON), `output-error` (`errorText`, as an error
//!   result) and `output-denied` (an error result saying so, with the
//!   person's reason). Calls still streaming or waiting for input are
//!   dropped with their part: a provider refuses a call without a result;
//! - except in [`read_conversation`], for the last message when it is the
//!   assistant's: its calls that asked for approval (`approval-responded`,
//!   or `approval-requested` left unanswered) stay in their step without a
//!   result, and come back as [`ResumedCall`]s for the turn to settle first;
//! - `reasoning`, `source-*`, `file` and `data-*` parts are skipped.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::approval::ResumedCall;
use crate::conversation::{Message, ToolCall, ToolResult};

/// A message as the AI SDK client sends it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UiMessage {
    #[serde(default)]
    pub id: String,
    pub role: UiRole,
    #[serde(default)]
    pub parts: Vec<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UiRole {
    System,
    User,
    Assistant,
}

/// Most calls with an approval's answer one request may carry in its last message.
pub const MAX_ANSWERED_CALLS: usize = 256;

/// A part that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UiMessageError {
    #[error("message {message}, part {part}: no `type`")]
    MissingPartType { message: usize, part: usize },
    #[error("message {message}, part {part}: tool part without `{field}`")]
    MissingToolField {
        message: usize,
        part: usize,
        field: &'static str,
    },
    #[error("the last message answers {count} tool calls that asked; a turn settles at most {max}")]
    TooManyAnswers { count: usize, max: usize },
}

/// A conversation as a turn starts from it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conversation {
    pub messages: Vec<Message>,
    /// The last assistant message's calls that asked for approval, answered or not: their
    /// calls are in `messages` without results, for the turn to settle first.
    pub resumed: Vec<ResumedCall>,
    /// The id of the last message when it is the assistant's: the turn continues it.
    pub continues: Option<String>,
}

/// Converts the conversation a client posted.
pub fn to_provider_messages(messages: &[UiMessage]) -> Result<Vec<Message>, UiMessageError> {
    convert(messages, None)
}

/// Converts the conversation a client posted, keeping what a turn must settle first: the
/// calls of the last (assistant) message that asked for approval.
pub fn read_conversation(messages: &[UiMessage]) -> Result<Conversation, UiMessageError> {
    let mut resumed = Vec::new();
    let last_is_assistant = messages
        .last()
        .is_some_and(|message| message.role == UiRole::Assistant);
    let converted = convert(messages, last_is_assistant.then_some(&mut resumed))?;
    // A turn asks about the calls of its last step (at most 32 by default, 256 at most): a
    // client's answers past that are not the model's calls, and each would be checked and
    // logged.
    if resumed.len() > MAX_ANSWERED_CALLS {
        return Err(UiMessageError::TooManyAnswers {
            count: resumed.len(),
            max: MAX_ANSWERED_CALLS,
        });
    }
    Ok(Conversation {
        messages: converted,
        resumed,
        continues: messages
            .last()
            .filter(|_| last_is_assistant)
            .map(|message| message.id.clone())
            .filter(|id| !id.is_empty()),
    })
}

fn convert(
    messages: &[UiMessage],
    mut resume: Option<&mut Vec<ResumedCall>>,
) -> Result<Vec<Message>, UiMessageError> {
    let mut out = Vec::new();
    let last = messages.len().saturating_sub(1);
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            UiRole::System => {}
            UiRole::User => {
                let texts: Vec<&str> = message
                    .parts
                    .iter()
                    .filter(|part| part_type(part) == Some("text"))
                    .filter_map(|part| part.get("text").and_then(Value::as_str))
                    .filter(|text| !text.is_empty())
                    .collect();
                if !texts.is_empty() {
                    out.push(Message::user(texts.join("\n\n")));
                }
            }
            UiRole::Assistant => {
                let resume = if index == last {
                    resume.as_deref_mut()
                } else {
                    None
                };
                assistant_steps(index, &message.parts, &mut out, resume)?;
            }
        }
    }
    Ok(out)
}

#[derive(Default)]
struct Step {
    text: String,
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
}

impl Step {
    fn flush(&mut self, out: &mut Vec<Message>) {
        let step = std::mem::take(self);
        if step.text.is_empty() && step.calls.is_empty() {
            return;
        }
        out.push(Message::Assistant {
            text: step.text,
            tool_calls: step.calls,
        });
        if !step.results.is_empty() {
            out.push(Message::ToolResults(step.results));
        }
    }
}

fn assistant_steps(
    message: usize,
    parts: &[Value],
    out: &mut Vec<Message>,
    mut resume: Option<&mut Vec<ResumedCall>>,
) -> Result<(), UiMessageError> {
    let mut step = Step::default();
    for (part_index, part) in parts.iter().enumerate() {
        let kind = part_type(part).ok_or(UiMessageError::MissingPartType {
            message,
            part: part_index,
        })?;
        if kind == "step-start" {
            step.flush(out);
        } else if kind == "text" {
            let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
            if text.is_empty() {
                continue;
            }
            if !step.calls.is_empty() {
                step.flush(out);
            }
            step.text.push_str(text);
        } else if let Some(name) = tool_name(kind, part) {
            let field = |field: &'static str| UiMessageError::MissingToolField {
                message,
                part: part_index,
                field,
            };
            let name = name.ok_or_else(|| field("toolName"))?;
            let call_id = part
                .get("toolCallId")
                .and_then(Value::as_str)
                .ok_or_else(|| field("toolCallId"))?;
            let input = match part.get("input") {
                Some(input @ Value::Object(_)) => input.clone(),
                _ => Value::Object(Map::new()),
            };
            let call = ToolCall {
                id: call_id.to_owned(),
                name: name.to_owned(),
                input,
            };
            let Some((content, is_error)) = finished_output(part) else {
                if let (Some(resumed), Some(answer)) = (resume.as_deref_mut(), asked(part)) {
                    step.calls.push(call.clone());
                    resumed.push(ResumedCall {
                        call,
                        approval_id: answer.0,
                        approved: answer.1,
                        reason: answer.2,
                    });
                }
                continue;
            };
            step.calls.push(call);
            step.results.push(ToolResult {
                call_id: call_id.to_owned(),
                tool_name: name.to_owned(),
                content,
                is_error,
                images: Vec::new(),
            });
        }
    }
    step.flush(out);
    Ok(())
}

fn part_type(part: &Value) -> Option<&str> {
    part.get("type").and_then(Value::as_str)
}

/// `Some` for a tool part: `Some(name)` when the name is known.
fn tool_name<'a>(kind: &'a str, part: &'a Value) -> Option<Option<&'a str>> {
    if kind == "dynamic-tool" {
        return Some(part.get("toolName").and_then(Value::as_str));
    }
    kind.strip_prefix("tool-").map(Some)
}

/// The result of a finished call: its text and whether it failed.
fn finished_output(part: &Value) -> Option<(String, bool)> {
    match part.get("state").and_then(Value::as_str)? {
        "output-available" => {
            let output = match part.get("output") {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            Some((output, false))
        }
        "output-error" => {
            let error = part
                .get("errorText")
                .and_then(Value::as_str)
                .unwrap_or("the tool call failed");
            Some((error.to_owned(), true))
        }
        "output-denied" => {
            let reason = part
                .get("approval")
                .and_then(|approval| approval.get("reason"))
                .and_then(Value::as_str)
                .filter(|reason| !reason.trim().is_empty());
            Some((denied_text(reason), true))
        }
        _ => None,
    }
}

/// What the model reads for a call the person denied.
pub fn denied_text(reason: Option<&str>) -> String {
    match reason {
        Some(reason) => {
            format!("the user denied this tool call; it was not run. Their reason: {reason}")
        }
        None => "the user denied this tool call; it was not run".to_owned(),
    }
}

/// A part that asked for approval: its approval id, the answer (`None`: none yet) and the
/// reason given.
fn asked(part: &Value) -> Option<(String, Option<bool>, Option<String>)> {
    let state = part.get("state").and_then(Value::as_str)?;
    if state != "approval-responded" && state != "approval-requested" {
        return None;
    }
    let approval = part.get("approval")?;
    let id = approval.get("id").and_then(Value::as_str)?.to_owned();
    let approved = match state {
        "approval-responded" => {
            Some(approval.get("approved").and_then(Value::as_bool) == Some(true))
        }
        _ => None,
    };
    let reason = approval
        .get("reason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Some((id, approved, reason))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn decode(messages: Value) -> Result<Vec<Message>, UiMessageError> {
        let messages: Vec<UiMessage> = serde_json::from_value(messages).expect("UIMessage JSON");
        to_provider_messages(&messages)
    }

    #[test]
    fn calls_that_asked_come_back_only_from_the_last_assistant_message() {
        let asked = |id: &str, state: &str, approval: Value| {
            json!({"type": "dynamic-tool", "toolName": "forge-bash__run", "toolCallId": id,
                   "state": state, "input": {"command": id}, "approval": approval})
        };
        let messages: Vec<UiMessage> = serde_json::from_value(json!([
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]},
            {"id": "a1", "role": "assistant", "parts": [
                asked("old", "approval-responded", json!({"id": "ap-old", "approved": true})),
            ]},
            {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "again"}]},
            {"id": "a2", "role": "assistant", "parts": [
                asked("yes", "approval-responded", json!({"id": "ap-yes", "approved": true})),
                asked("no", "approval-responded", json!({"id": "ap-no", "approved": false, "reason": "too risky"})),
                asked("open", "approval-requested", json!({"id": "ap-open"})),
            ]},
        ]))
        .expect("UIMessage JSON");
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "forge-bash__run".into(),
            input: json!({"command": id}),
        };
        let resumed = |id: &str, approval: &str, approved, reason: Option<&str>| ResumedCall {
            call: call(id),
            approval_id: approval.into(),
            approved,
            reason: reason.map(str::to_owned),
        };
        assert_eq!(
            read_conversation(&messages),
            Ok(Conversation {
                // The earlier message's unfinished call is dropped; the last one's calls stay,
                // without results, for the turn to settle.
                messages: vec![
                    Message::user("go"),
                    Message::user("again"),
                    Message::Assistant {
                        text: String::new(),
                        tool_calls: vec![call("yes"), call("no"), call("open")],
                    },
                ],
                resumed: vec![
                    resumed("yes", "ap-yes", Some(true), None),
                    resumed("no", "ap-no", Some(false), Some("too risky")),
                    resumed("open", "ap-open", None, None),
                ],
                continues: Some("a2".into()),
            })
        );
        // Without resuming, as before: nothing unfinished reaches the model.
        assert_eq!(
            to_provider_messages(&messages),
            Ok(vec![Message::user("go"), Message::user("again")])
        );
    }

    #[test]
    fn a_last_message_answering_more_calls_than_a_turn_asks_is_refused() {
        let answered = |count: usize| -> Vec<UiMessage> {
            let parts: Vec<Value> = (0..count)
                .map(|i| {
                    json!({"type": "dynamic-tool", "toolName": "t", "toolCallId": format!("c{i}"),
                           "state": "approval-responded", "input": {},
                           "approval": {"id": format!("ap{i}"), "approved": true}})
                })
                .collect();
            serde_json::from_value(json!([
                {"id": "u", "role": "user", "parts": [{"type": "text", "text": "go"}]},
                {"id": "a", "role": "assistant", "parts": parts},
            ]))
            .expect("UIMessage JSON")
        };
        let settled = read_conversation(&answered(MAX_ANSWERED_CALLS)).expect("at the cap");
        assert_eq!(settled.resumed.len(), MAX_ANSWERED_CALLS);
        assert_eq!(
            read_conversation(&answered(MAX_ANSWERED_CALLS + 1)).map(|c| c.resumed.len()),
            Err(UiMessageError::TooManyAnswers {
                count: MAX_ANSWERED_CALLS + 1,
                max: MAX_ANSWERED_CALLS
            })
        );
    }

    #[test]
    fn multi_step_assistant_message_becomes_calls_results_and_answer() {
        let got = decode(json!([
            {"id": "s", "role": "system", "parts": [{"type": "text", "text": "ignored"}]},
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "List files"}]},
            {"id": "a1", "role": "assistant", "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "Checking.", "state": "done"},
                {"type": "dynamic-tool", "toolName": "forge-bash__run", "toolCallId": "c1",
                 "state": "output-available", "input": {"command": "ls"}, "output": "a\nb"},
                {"type": "tool-clock", "toolCallId": "c2", "state": "output-error",
                 "input": {}, "errorText": "timed out"},
                {"type": "step-start"},
                {"type": "reasoning", "text": "hmm"},
                {"type": "text", "text": "Two files."},
            ]},
            {"id": "u2", "role": "user", "parts": [
                {"type": "text", "text": "Thanks."},
                {"type": "file", "mediaType": "image/png", "url": "data:,"},
                {"type": "text", "text": "And now?"},
            ]},
        ]));
        assert_eq!(
            got,
            Ok(vec![
                Message::user("List files"),
                Message::Assistant {
                    text: "Checking.".into(),
                    tool_calls: vec![
                        ToolCall {
                            id: "c1".into(),
                            name: "forge-bash__run".into(),
                            input: json!({"command": "ls"}),
                        },
                        ToolCall {
                            id: "c2".into(),
                            name: "clock".into(),
                            input: json!({}),
                        },
                    ],
                },
                Message::ToolResults(vec![
                    ToolResult {
                        call_id: "c1".into(),
                        tool_name: "forge-bash__run".into(),
                        content: "a\nb".into(),
                        is_error: false,
                        images: Vec::new(),
                    },
                    ToolResult {
                        call_id: "c2".into(),
                        tool_name: "clock".into(),
                        content: "timed out".into(),
                        is_error: true,
                        images: Vec::new(),
                    },
                ]),
                Message::assistant("Two files."),
                Message::user("Thanks.\n\nAnd now?"),
            ])
        );
    }

    #[test]
    fn text_after_a_tool_part_starts_a_new_step_without_step_start() {
        let got = decode(json!([
            {"role": "assistant", "parts": [
                {"type": "tool-search", "toolCallId": "c1", "state": "output-available",
                 "input": {"q": "x"}, "output": {"hits": 2}},
                {"type": "text", "text": "Found two."},
            ]},
        ]));
        assert_eq!(
            got,
            Ok(vec![
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "search".into(),
                        input: json!({"q": "x"}),
                    }],
                },
                Message::ToolResults(vec![ToolResult {
                    call_id: "c1".into(),
                    tool_name: "search".into(),
                    content: "{\"hits\":2}".into(),
                    is_error: false,
                    images: Vec::new(),
                }]),
                Message::assistant("Found two."),
            ])
        );
    }

    #[test]
    fn unfinished_tool_calls_are_dropped() {
        let got = decode(json!([
            {"role": "assistant", "parts": [
                {"type": "text", "text": "Running"},
                {"type": "dynamic-tool", "toolName": "t", "toolCallId": "c1",
                 "state": "input-available", "input": {}},
            ]},
        ]));
        assert_eq!(got, Ok(vec![Message::assistant("Running")]));
    }

    #[test]
    fn malformed_parts_are_errors() {
        assert_eq!(
            decode(json!([{"role": "assistant", "parts": [{"text": "no type"}]}])),
            Err(UiMessageError::MissingPartType {
                message: 0,
                part: 0
            })
        );
        assert_eq!(
            decode(json!([{"role": "assistant", "parts": [
                {"type": "dynamic-tool", "toolCallId": "c", "state": "output-available"}
            ]}])),
            Err(UiMessageError::MissingToolField {
                message: 0,
                part: 0,
                field: "toolName"
            })
        );
    }
}
