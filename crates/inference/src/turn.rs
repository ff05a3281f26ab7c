//! The turn loop: one user message answered in as many model steps as the
//! tools need. Owns [`ChatTurn`], its [`TurnConfig`], the [`TurnEvent`]s it
//! emits while it runs and the [`TurnOutcome`] it returns.
//!
//! A step streams the model's answer (text and tool calls are forwarded as
//! they arrive), then runs the step's tool calls concurrently, each under
//! its own deadline, and appends their results. A failed tool call is told
//! to the model as an error result and the turn goes on; a provider error
//! ends the turn. The turn stops at an answer without tool calls or at the
//! step limit. Cancelling drops the provider request and cancels the tool
//! calls in flight; a closed event channel counts as a cancellation.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::active_tools::{ActiveTools, EagerTools, StepContext};
use crate::approval::{Approvals, CallTarget, ResumedCall};
use crate::conversation::ToolImage;
use crate::conversation::{FinishReason, Message, ToolCall, ToolResult, Usage};
use crate::kept_text::KeptText;
use crate::mcp_tools::{ToolCallError, ToolExecutor};
use crate::native::NativeToolRegistry;
use crate::providers::{InvalidToolInput, Provider, ProviderError, ProviderEvent, StepRequest};
use crate::tool_schema::ToolDefinition;
use crate::turn_events::{DEFAULT_EVENT_BUFFER_BYTES, EventSender, TurnEvents, event_channel};
use crate::turn_spans;

mod tools;

/// Limits of one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnConfig {
    /// Model steps at most; the tool calls of the last step still run.
    pub max_steps: u32,
    /// Deadline of a tool call whose executor names none.
    pub tool_timeout: Duration,
    /// After a cancellation, how long tool calls get to wind down before
    /// they are dropped.
    pub cancel_grace: Duration,
    pub max_output_tokens: Option<u32>,
    /// The model takes images: a tool result's images reach it as images (otherwise only
    /// their description in the result's text does).
    pub vision: bool,
    /// The longest text of one tool result the model reads; the rest is cut, and the cut
    /// is said at the end of what it reads.
    pub max_tool_result_chars: usize,
    /// Bytes of events buffered for a reader that is behind ([`crate::turn_events`]).
    pub event_buffer_bytes: usize,
    /// Bytes of one step's text the turn keeps for its conversation (what the model reads
    /// back in the next step); the client gets it all as it streams, and the kept text says
    /// how much was not kept. A long answer costs this much memory, not its length.
    pub max_step_text_bytes: usize,
    /// Tool calls of one step that run (or ask); the model is told that the others were not
    /// run, so one reply cannot start hundreds of commands.
    pub max_calls_per_step: usize,
    /// Tool calls of one step that run at the same time; the others wait their turn.
    pub max_parallel_calls: usize,
}

/// Default of [`TurnConfig::max_step_text_bytes`].
pub const DEFAULT_MAX_STEP_TEXT_BYTES: usize = 16 * 1024;
/// Default of [`TurnConfig::max_calls_per_step`].
pub const DEFAULT_MAX_CALLS_PER_STEP: usize = 32;
/// Default of [`TurnConfig::max_parallel_calls`].
pub const DEFAULT_MAX_PARALLEL_CALLS: usize = 8;

impl Default for TurnConfig {
    fn default() -> Self {
        Self {
            max_steps: 10,
            tool_timeout: Duration::from_secs(60),
            cancel_grace: Duration::from_secs(5),
            max_output_tokens: None,
            vision: false,
            max_tool_result_chars: 100_000,
            event_buffer_bytes: DEFAULT_EVENT_BUFFER_BYTES,
            max_step_text_bytes: DEFAULT_MAX_STEP_TEXT_BYTES,
            max_calls_per_step: DEFAULT_MAX_CALLS_PER_STEP,
            max_parallel_calls: DEFAULT_MAX_PARALLEL_CALLS,
        }
    }
}

/// What one tool call gave: its text (capped) and its images.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct CallOutput {
    text: String,
    images: Vec<ToolImage>,
}

/// `text` cut to `max` characters, with a notice of the cut at its end.
fn cap_text(text: String, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text;
    }
    let end = text
        .char_indices()
        .nth(max)
        .map_or(text.len(), |(at, _)| at);
    let mut kept = text;
    kept.truncate(end);
    kept.push_str(&format!(
        "\n[BotCraft cut this tool result: it had {total} characters and this bot reads at most {max} (maxToolResultChars); ask for a smaller part]"
    ));
    kept
}

/// What happens during a turn, in order. An HTTP layer forwards these (see
/// [`crate::ui_stream`]).
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    StepStarted {
        step: u32,
    },
    TextDelta(String),
    ToolInputStarted {
        call_id: String,
        tool_name: String,
    },
    ToolInputDelta {
        call_id: String,
        delta: String,
    },
    /// The call's input is complete. Input that was not a JSON object is
    /// passed as the raw string, and an error output follows.
    ToolInputAvailable {
        call_id: String,
        tool_name: String,
        input: Value,
    },
    ToolOutputAvailable {
        call_id: String,
        output: String,
    },
    ToolOutputError {
        call_id: String,
        error: String,
    },
    /// The call waits for a person: the turn ends after this step without running it, and
    /// a later turn runs it once the client sends the conversation back with the answer.
    ToolApprovalRequested {
        call_id: String,
        approval_id: String,
    },
    /// The person denied the call: it was not run, and the model is told so.
    ToolOutputDenied {
        call_id: String,
    },
    /// The images of a tool result, after its [`TurnEvent::ToolOutputAvailable`].
    ToolImages {
        call_id: String,
        images: Vec<ToolImage>,
    },
    /// The step's model output and tool results are complete.
    StepFinished {
        step: u32,
        reason: FinishReason,
        usage: Usage,
    },
    /// The last event of a turn that ended normally.
    Finished {
        reason: FinishReason,
        usage: Usage,
        step_limit_reached: bool,
    },
    /// The last event of a turn the provider failed.
    Failed {
        error: ProviderError,
    },
    /// The last event of a cancelled turn.
    Aborted,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEnd {
    Finished {
        reason: FinishReason,
        step_limit_reached: bool,
    },
    Failed(ProviderError),
    Aborted,
}

/// What a turn leaves behind.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    /// The messages this turn added to the conversation (complete steps
    /// only: a step cut short by an error or a cancellation is left out).
    pub messages: Vec<Message>,
    pub usage: Usage,
    /// Model steps started.
    pub steps: u32,
    pub end: TurnEnd,
}

/// One chat turn, configured then run once.
pub struct ChatTurn {
    provider: Arc<dyn Provider>,
    model: String,
    system_prompt: String,
    messages: Vec<Message>,
    native: NativeToolRegistry,
    executor: Option<Arc<dyn ToolExecutor>>,
    active_tools: Option<Arc<dyn ActiveTools>>,
    config: TurnConfig,
    approvals: Option<Approvals>,
    resumed: Vec<ResumedCall>,
}

impl ChatTurn {
    pub fn new(provider: Arc<dyn Provider>, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            system_prompt: String::new(),
            messages: Vec::new(),
            native: NativeToolRegistry::new(),
            executor: None,
            active_tools: None,
            config: TurnConfig::default(),
            approvals: None,
            resumed: Vec::new(),
        }
    }

    /// Calls the gate names wait for a person: the turn asks and ends instead of running
    /// them (see [`crate::approval`]). Without this, every call runs.
    pub fn with_approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// The calls that asked in the previous turn, as the client answered them: settled
    /// (run, or told to the model as denied or refused) before the first model step. Their
    /// calls are in the messages, without results.
    pub fn with_resumed_calls(mut self, resumed: Vec<ResumedCall>) -> Self {
        self.resumed = resumed;
        self
    }

    /// The whole system prompt (the bot's, with its servers' instructions: see
    /// `toolset::BotToolset::system_prompt`); none when empty.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// The conversation so far, ending with the user's new message.
    pub fn with_messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = messages;
        self
    }

    pub fn with_native_tools(mut self, native: NativeToolRegistry) -> Self {
        self.native = native;
        self
    }

    pub fn with_tool_executor(mut self, executor: Arc<dyn ToolExecutor>) -> Self {
        self.executor = Some(executor);
        self
    }

    /// Replaces [`EagerTools`] as the chooser of each step's tools.
    pub fn with_active_tools(mut self, active_tools: Arc<dyn ActiveTools>) -> Self {
        self.active_tools = Some(active_tools);
        self
    }

    pub fn with_config(mut self, config: TurnConfig) -> Self {
        self.config = config;
        self
    }

    /// Runs the turn on a new task; events arrive on the stream, the outcome
    /// on the handle. Dropping the stream cancels the turn.
    /// The stream buffers at most [`TurnConfig::event_buffer_bytes`] (and 64 events): past
    /// that the turn waits for the reader, and reads nothing more from the provider meanwhile.
    pub fn spawn(
        self,
        cancel: CancellationToken,
    ) -> (TurnEvents, tokio::task::JoinHandle<TurnOutcome>) {
        let (sender, events) = event_channel(self.config.event_buffer_bytes);
        // The turn's spans are children of the caller's (the HTTP request's).
        let handle = tokio::spawn(self.run(sender, cancel).in_current_span());
        (events, handle)
    }

    /// Runs the turn, sending events to `events` as they happen.
    async fn run(self, events: EventSender, cancel: CancellationToken) -> TurnOutcome {
        let cancel = cancel.child_token();
        let emitter = Emitter {
            sender: events,
            cancel: cancel.clone(),
        };
        let active_tools: Arc<dyn ActiveTools> = match &self.active_tools {
            Some(active) => Arc::clone(active),
            None => Arc::new(EagerTools::new(self.native.clone(), self.executor.clone())),
        };
        let system = self.system_prompt.trim().to_owned();
        let mut history = self.messages.clone();
        let first_new = history.len();
        let mut usage = Usage::default();
        let mut last_reason = FinishReason::Stop;
        let mut steps = 0;
        let outcome = |history: Vec<Message>, usage, steps, end| TurnOutcome {
            messages: history[first_new..].to_vec(),
            usage,
            steps,
            end,
        };

        if !self.resumed.is_empty() {
            let offered: BTreeSet<String> = active_tools
                .tools_unoffered(&StepContext {
                    step: 0,
                    messages: &history,
                })
                .into_iter()
                .map(|tool| tool.name)
                .collect();
            let Some(results) = self.settle(&offered, &emitter).await else {
                emitter.last(TurnEvent::Aborted).await;
                return outcome(history, usage, steps, TurnEnd::Aborted);
            };
            attach_results(&mut history, results);
        }
        for step in 0..self.config.max_steps {
            if cancel.is_cancelled() {
                emitter.last(TurnEvent::Aborted).await;
                return outcome(history, usage, steps, TurnEnd::Aborted);
            }
            let tools = unique_by_name(active_tools.tools_for_step(&StepContext {
                step,
                messages: &history,
            }));
            let offered: BTreeSet<String> = tools.iter().map(|tool| tool.name.clone()).collect();
            steps += 1;
            emitter.send(TurnEvent::StepStarted { step }).await;
            let request = StepRequest {
                model: self.model.clone(),
                system: system.clone(),
                messages: history.clone(),
                tools,
                max_output_tokens: self.config.max_output_tokens,
            };
            let streamed = match self.stream_step(request, &emitter).await {
                StepStream::Done(streamed) => streamed,
                StepStream::Failed(error) => {
                    emitter
                        .last(TurnEvent::Failed {
                            error: error.clone(),
                        })
                        .await;
                    return outcome(history, usage, steps, TurnEnd::Failed(error));
                }
                StepStream::Aborted => {
                    emitter.last(TurnEvent::Aborted).await;
                    return outcome(history, usage, steps, TurnEnd::Aborted);
                }
            };
            usage.add(streamed.usage);
            last_reason = streamed.reason.clone();
            history.push(Message::Assistant {
                text: streamed.text.clone(),
                tool_calls: streamed
                    .calls
                    .iter()
                    .map(PendingCall::to_tool_call)
                    .collect(),
            });
            if streamed.calls.is_empty() {
                emitter
                    .send(TurnEvent::StepFinished {
                        step,
                        reason: streamed.reason.clone(),
                        usage: streamed.usage,
                    })
                    .await;
                let end = finish(&emitter, streamed.reason, usage, false).await;
                return outcome(history, usage, steps, end);
            }
            // Past the step's cap, calls are refused; of the others, those that wait for a
            // person are shown and not run, and the rest run.
            let kept = streamed.calls.len().min(self.config.max_calls_per_step);
            if let Some(approvals) = &self.approvals {
                approvals.gate.refresh().await;
            }
            let (asking, running): (Vec<PendingCall>, Vec<PendingCall>) = streamed.calls[..kept]
                .iter()
                .cloned()
                .partition(|call| self.asks(call, &offered));
            self.ask_approval(&asking, &emitter).await;
            let ran = if running.is_empty() {
                Some(Vec::new())
            } else {
                self.run_tools(&running, &offered, &emitter, true).await
            };
            let ran = match ran {
                Some(mut results) => {
                    let over = &streamed.calls[kept..];
                    results.extend(
                        self.refuse_over_cap(over, streamed.calls.len(), &emitter)
                            .await,
                    );
                    Some(results)
                }
                None => None,
            };
            let Some(results) = ran else {
                // Leave no tool call without its result in the history.
                history.pop();
                emitter.last(TurnEvent::Aborted).await;
                return outcome(history, usage, steps, TurnEnd::Aborted);
            };
            forget_earlier_images(&mut history);
            let mut results = results;
            bound_step_images(&mut results);
            if !results.is_empty() {
                history.push(Message::ToolResults(results));
            }
            emitter
                .send(TurnEvent::StepFinished {
                    step,
                    reason: streamed.reason.clone(),
                    usage: streamed.usage,
                })
                .await;
            if !asking.is_empty() {
                // The turn waits for the person: the client sends the conversation back with
                // the answers, and the next turn settles them first.
                let end = finish(&emitter, FinishReason::ToolCalls, usage, false).await;
                return outcome(history, usage, steps, end);
            }
        }
        let end = finish(&emitter, last_reason, usage, true).await;
        outcome(history, usage, steps, end)
    }

    /// Show each call that waits for a person (with its approval id when approvals are set).
    async fn ask_approval(&self, asking: &[PendingCall], emitter: &Emitter) {
        for call in asking {
            turn_spans::approval_asked(&call.name, &call.id);
            if let Some(approvals) = &self.approvals {
                emitter
                    .send(TurnEvent::ToolApprovalRequested {
                        call_id: call.id.clone(),
                        approval_id: approvals
                            .signer
                            .issue(&call.to_tool_call(), &self.target(&call.name)),
                    })
                    .await;
            }
        }
    }

    /// One model call, in its `chat {model}` span.
    async fn stream_step(&self, request: StepRequest, emitter: &Emitter) -> StepStream {
        let span = turn_spans::model_call(
            self.provider.kind(),
            &request.model,
            request.max_output_tokens,
            &request.messages,
        );
        let streamed = self
            .stream_step_in_span(request, emitter)
            .instrument(span.clone())
            .await;
        match &streamed {
            StepStream::Done(step) => {
                turn_spans::model_answered(&span, step.usage, &step.reason, &step.text);
            }
            StepStream::Failed(error) => turn_spans::model_failed(&span, error),
            StepStream::Aborted => {}
        }
        streamed
    }

    async fn stream_step_in_span(&self, request: StepRequest, emitter: &Emitter) -> StepStream {
        let mut stream = self.provider.stream_step(request);
        let mut text = KeptText::new(self.config.max_step_text_bytes);
        let mut calls = Vec::new();
        loop {
            let item = tokio::select! {
                biased;
                () = emitter.stopped() => return StepStream::Aborted,
                item = stream.next() => item,
            };
            let event = match item {
                Some(Ok(event)) => event,
                Some(Err(error)) => return StepStream::Failed(error),
                None => {
                    return StepStream::Failed(ProviderError::Truncated {
                        provider: self.provider.kind(),
                    });
                }
            };
            match event {
                ProviderEvent::TextDelta(delta) => {
                    text.push(&delta);
                    emitter.send(TurnEvent::TextDelta(delta)).await;
                }
                ProviderEvent::ToolCallStart { id, name } => {
                    emitter
                        .send(TurnEvent::ToolInputStarted {
                            call_id: id,
                            tool_name: name,
                        })
                        .await;
                }
                ProviderEvent::ToolCallDelta { id, delta } => {
                    emitter
                        .send(TurnEvent::ToolInputDelta { call_id: id, delta })
                        .await;
                }
                ProviderEvent::ToolCallComplete { id, name, input } => {
                    let shown = match &input {
                        Ok(value) => value.clone(),
                        Err(invalid) => Value::String(invalid.raw.clone()),
                    };
                    emitter
                        .send(TurnEvent::ToolInputAvailable {
                            call_id: id.clone(),
                            tool_name: name.clone(),
                            input: shown,
                        })
                        .await;
                    calls.push(PendingCall { id, name, input });
                }
                ProviderEvent::Finish { reason, usage } => {
                    return StepStream::Done(StreamedStep {
                        text: text.finish(),
                        calls,
                        reason,
                        usage,
                    });
                }
            }
        }
    }
}

/// Puts `results` after the assistant step whose calls they answer, beside the results that
/// step already has, in the step's call order.
fn attach_results(history: &mut Vec<Message>, results: Vec<ToolResult>) {
    let Some(first) = results.first() else {
        return;
    };
    let Some(at) = history.iter().rposition(|message| {
        matches!(message, Message::Assistant { tool_calls, .. }
            if tool_calls.iter().any(|call| call.id == first.call_id))
    }) else {
        return;
    };
    let order: Vec<String> = match &history[at] {
        Message::Assistant { tool_calls, .. } => {
            tool_calls.iter().map(|call| call.id.clone()).collect()
        }
        _ => Vec::new(),
    };
    if !matches!(history.get(at + 1), Some(Message::ToolResults(_))) {
        history.insert(at + 1, Message::ToolResults(Vec::new()));
    }
    if let Some(Message::ToolResults(existing)) = history.get_mut(at + 1) {
        existing.extend(results);
        existing.sort_by_key(|result| order.iter().position(|id| *id == result.call_id));
    }
}

/// Keeps the first definition of each name.
fn unique_by_name(tools: Vec<ToolDefinition>) -> Vec<ToolDefinition> {
    let mut seen = BTreeSet::new();
    tools
        .into_iter()
        .filter(|tool| {
            let fresh = seen.insert(tool.name.clone());
            if !fresh {
                tracing::warn!(tool = %tool.name, "tool offered twice in one step; keeping the first");
            }
            fresh
        })
        .collect()
}

#[derive(Clone)]
struct PendingCall {
    id: String,
    name: String,
    input: Result<Value, InvalidToolInput>,
}

impl PendingCall {
    /// The call as the history keeps it: input that was not an object is
    /// kept as an empty object (providers require one).
    fn to_tool_call(&self) -> ToolCall {
        ToolCall {
            id: self.id.clone(),
            name: self.name.clone(),
            input: self
                .input
                .clone()
                .unwrap_or_else(|_| Value::Object(Default::default())),
        }
    }
}

struct StreamedStep {
    text: String,
    calls: Vec<PendingCall>,
    reason: FinishReason,
    usage: Usage,
}

enum StepStream {
    Done(StreamedStep),
    Failed(ProviderError),
    Aborted,
}

/// Sends events; a receiver that went away cancels the turn.
struct Emitter {
    sender: EventSender,
    cancel: CancellationToken,
}

impl Emitter {
    async fn send(&self, event: TurnEvent) {
        tokio::select! {
            sent = self.sender.send(event) => {
                if sent.is_err() {
                    self.cancel.cancel();
                }
            }
            () = self.cancel.cancelled() => {}
        }
    }

    /// Resolves when the turn is cancelled or nobody listens any more (and
    /// then cancels it).
    async fn stopped(&self) {
        tokio::select! {
            () = self.cancel.cancelled() => {}
            () = self.sender.closed() => self.cancel.cancel(),
        }
    }

    /// The final event: nobody to cancel any more.
    async fn last(&self, event: TurnEvent) {
        let _ = self.sender.send(event).await;
    }
}

/// The turn's last event, `Finished`, and its end.
async fn finish(
    emitter: &Emitter,
    reason: FinishReason,
    usage: Usage,
    step_limit_reached: bool,
) -> TurnEnd {
    emitter
        .last(TurnEvent::Finished {
            reason: reason.clone(),
            usage,
            step_limit_reached,
        })
        .await;
    TurnEnd::Finished {
        reason,
        step_limit_reached,
    }
}

/// Most images one step's results pass to the model (providers refuse requests of many:
/// Anthropic takes at most 100, and a step may run 32 calls of 8 images each).
pub const MAX_STEP_IMAGES: usize = 20;

/// Most bytes (base64) of images one step's results pass to the model.
pub const MAX_STEP_IMAGE_BYTES: usize = 20 * 1024 * 1024;

/// The step's images past [`MAX_STEP_IMAGES`] or [`MAX_STEP_IMAGE_BYTES`], in call order, are
/// not passed to the model; each result that loses some says so (its text describes them).
fn bound_step_images(results: &mut [ToolResult]) {
    let (mut count, mut bytes) = (0usize, 0usize);
    for result in results {
        let before = result.images.len();
        result.images.retain(|image| {
            let fits = count < MAX_STEP_IMAGES && bytes + image.data.len() <= MAX_STEP_IMAGE_BYTES;
            if fits {
                count += 1;
                bytes += image.data.len();
            }
            fits
        });
        let left = before - result.images.len();
        if left > 0 {
            result.content.push_str(&format!(
                "\n[{left} images of this result not passed to the model: one step passes at most {MAX_STEP_IMAGES} images and {} MiB of them]",
                MAX_STEP_IMAGE_BYTES / (1024 * 1024)
            ));
        }
    }
}

/// Only the latest step's images go to the model again: earlier ones keep their description,
/// so screenshots do not pile up in every later request.
fn forget_earlier_images(history: &mut [Message]) {
    for message in history {
        if let Message::ToolResults(earlier) = message {
            for result in earlier {
                result.images.clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_steps_images_are_bounded_in_number_and_bytes() {
        let image = |bytes: usize| ToolImage {
            mime_type: "image/png".into(),
            data: "A".repeat(bytes),
        };
        let result = |images: Vec<ToolImage>| ToolResult {
            call_id: "c".into(),
            tool_name: "t".into(),
            content: "text".into(),
            is_error: false,
            images,
        };
        let note = |left: usize| {
            format!(
                "text\n[{left} images of this result not passed to the model: one step passes at most 20 images and 20 MiB of them]"
            )
        };
        // Three results of 8 small images: the first two whole, four of the third.
        let mut results: Vec<ToolResult> = (0..3).map(|_| result(vec![image(10); 8])).collect();
        bound_step_images(&mut results);
        let kept: Vec<(usize, &str)> = results
            .iter()
            .map(|r| (r.images.len(), r.content.as_str()))
            .collect();
        assert_eq!(kept, vec![(8, "text"), (8, "text"), (4, note(4).as_str())]);
        // By bytes: a 15 MiB image, then one of 6 MiB (over), then a small one (fits).
        let mut results = vec![
            result(vec![image(15 << 20)]),
            result(vec![image(6 << 20), image(10)]),
        ];
        bound_step_images(&mut results);
        assert_eq!(results[0].images.len(), 1);
        assert_eq!(results[1].images, vec![image(10)]);
        assert_eq!(results[1].content, note(1));
    }

    #[test]
    fn results_are_cut_at_a_character_boundary_with_the_cut_said() {
        let notice = |total: usize, max: usize| {
            format!(
                "\n[BotCraft cut this tool result: it had {total} characters and this bot reads at most {max} (maxToolResultChars); ask for a smaller part]"
            )
        };
        let cases = [
            ("short", 10, "short".to_owned()),
            ("exactly10!", 10, "exactly10!".to_owned()),
            ("eleven char", 10, format!("eleven cha{}", notice(11, 10))),
            ("ééééé", 2, format!("éé{}", notice(5, 2))),
            ("", 1, String::new()),
        ];
        for (text, max, expected) in cases {
            assert_eq!(
                cap_text(text.to_owned(), max),
                expected,
                "{text:?} at {max}"
            );
        }
    }
}
