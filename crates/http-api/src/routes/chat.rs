//! `POST /api/ai/chat` — one chat turn of a bot.
//!
//! The body is `{botId, messages}` (the bot's id or name; AI SDK `UIMessage`s, other fields
//! that `useChat` sends are ignored). Everything that can be refused is refused before the
//! stream starts, as a JSON error: bad JSON (400), an unknown bot (404), messages that cannot
//! be read (400), a bot whose model cannot be used (503, e.g. its provider's key is not set).
//!
//! Then the turn runs (see `inference::ChatTurn`): the bot's system prompt plus each enabled
//! server's instructions, the native tools plus the bot's MCP tools under qualified names as
//! its loading mode offers them (`crate::tool_loading`: eager, deferred with `tool_search`,
//! auto),
//! steps up to the bot's step limit, tool calls concurrent under their server's deadlines,
//! a lease on the bot's servers for the whole turn. The answer is:
//! - by default the AI SDK UI message stream (SSE, `x-vercel-ai-ui-message-stream: v1`),
//!   ending with `[DONE]`; the `finish` chunk's `messageMetadata` carries `toolLoading`,
//!   `toolDefinitionTokens` (per step) and `eagerToolDefinitionTokens`; a provider failure
//!   ends it with an `error` chunk whose text has every configured secret redacted;
//! - with `Accept: application/json` (and not `text/event-stream`), one JSON document with
//!   the text, the tool calls and their outputs, the finish reason, usage and the same tool
//!   fields; a provider failure is a 502 JSON error.
//!
//! Each step's provider request and each `tool_search` are recorded in the metrics
//! (`crate::turn_metrics`), each MCP tool call by the executor.
//!
//! The client hanging up drops the response body, which drops the turn's event receiver:
//! the turn cancels (provider request dropped, tool calls cancelled) and the lease ends.
//!
//! Bounded: at most `BOTCRAFT_MAX_CHAT_STREAMS` turns run at once, and
//! `BOTCRAFT_MAX_CHAT_STREAMS_PER_KEY` for one key (past either: 429 `too_many_streams` with
//! `Retry-After`, `crate::chat_streams`); a client that reads slower than the model writes
//! holds at most `BOTCRAFT_CHAT_BUFFER_BYTES` of events (the turn stops reading the provider
//! meanwhile, `inference::turn_events`), and one that reads nothing for
//! `BOTCRAFT_WRITE_STALL_SECONDS` loses its connection, which cancels the turn
//! (`crate::listener`).

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use inference::ui_stream::RESPONSE_HEADERS;
use inference::{
    ApprovalSigner, Approvals, ChatTurn, NativeToolRegistry, ProviderError, TurnConfig, TurnEvent,
    UiMessage, UiMessageChunk, UiStreamEncoder, read_conversation,
};
use serde::Deserialize;
use serde_json::{Value, json};
use store::Bot;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::redact::Redactor;
use crate::state::AppState;
use crate::tool_loading::{ToolReport, TurnTools};
use crate::turn_metrics::TurnRecorder;
use chat_tools::McpToolExecutor;
use toolset::ListPolicy;

/// The request body.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatRequest {
    /// The bot's id or name.
    pub bot_id: String,
    pub messages: Vec<UiMessage>,
}

/// The bot with this id, else with this name (from the toolsets' memory while the store
/// has not changed).
pub async fn find_bot(state: &AppState, key: &str) -> Result<Bot, ApiError> {
    Ok(state.toolsets.bot(key).await?)
}

fn wants_json(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    accept.contains("application/json") && !accept.contains("text/event-stream")
}

/// A new id for the assistant message.
fn message_id() -> String {
    format!("msg-{:016x}", rand::random::<u64>())
}

pub async fn chat(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Json<ChatRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    // A place among the turns running (in all, and for this key), held until the answer ends.
    let slot = match state.config.chat_streams.admit(caller.key, &state.metrics) {
        Ok(slot) => slot,
        Err(refusal) => return Ok(refusal.into_response()),
    };
    let Json(request) = body?;
    let limit = state.config.max_chat_messages;
    if request.messages.len() > limit {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_many_messages",
            format!(
                "{} messages in one chat request; the limit is {limit} (BOTCRAFT_MAX_CHAT_MESSAGES)",
                request.messages.len()
            ),
        ));
    }
    let bot = find_bot(&state, &request.bot_id).await?;
    caller.check_bot(&request.bot_id, &bot)?;
    let conversation = read_conversation(&request.messages)
        .map_err(|error| ApiError::bad_request("bad_messages", error.to_string()))?;
    // The request as sent (every part decoded, the ones the model never reads included) is
    // not kept for the turn: a JSON answer waits for the whole turn in this function.
    drop(request);
    let messages = conversation.messages;
    if messages.is_empty() {
        return Err(ApiError::bad_request(
            "bad_messages",
            "no user or assistant message to answer",
        ));
    }
    let selected = state
        .providers
        .for_bot(&bot.name, &bot.model)
        .map_err(|error| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "model_unavailable",
                error.to_string(),
            )
        })?;
    let toolset = state
        .toolsets
        .load(&bot.id, ListPolicy::CachedThenStart)
        .await?;
    let lease = state
        .manager
        .lease(toolset.servers.iter().map(String::as_str));
    let tools = TurnTools::plan(&state, &bot, &toolset).await;
    let report = tools.report();
    let system_prompt = toolset.system_prompt(&bot.system_prompt);
    let approvals = approvals(&state, &caller, &bot, &toolset, &tools.native);
    let executor = Arc::new(McpToolExecutor::new(
        state.toolsets.clone(),
        toolset,
        state.metrics.clone(),
    ));
    let config = TurnConfig {
        max_steps: u32::try_from(bot.step_limit.max(1)).unwrap_or(u32::MAX),
        vision: bot.vision,
        max_tool_result_chars: usize::try_from(bot.max_tool_result_chars.max(1))
            .unwrap_or(usize::MAX),
        tool_timeout: state.config.native_tool_timeout,
        cancel_grace: state.config.cancel_grace,
        max_output_tokens: state.config.max_output_tokens,
        event_buffer_bytes: state.config.chat_buffer_bytes,
        max_step_text_bytes: inference::DEFAULT_MAX_STEP_TEXT_BYTES,
        max_calls_per_step: inference::DEFAULT_MAX_CALLS_PER_STEP,
        max_parallel_calls: inference::DEFAULT_MAX_PARALLEL_CALLS,
    };
    let mut recorder = TurnRecorder::new(
        state.metrics.clone(),
        selected.provider.kind().prefix(),
        selected.model.clone(),
    );
    let turn = ChatTurn::new(selected.provider, selected.model)
        .with_system_prompt(system_prompt)
        .with_messages(messages)
        .with_native_tools(tools.native)
        .with_tool_executor(executor)
        .with_active_tools(tools.active)
        .with_approvals(approvals)
        .with_resumed_calls(conversation.resumed.clone())
        .with_config(config);
    let (events, outcome) = turn.spawn(state.shutdown.child_token());
    let events = events.inspect(move |event| recorder.observe(event));
    let bot_name = bot.name.clone();
    let logged = report.clone();
    let log_redactor = state.config.redactor.clone();
    tokio::spawn(async move {
        if let Ok(outcome) = outcome.await {
            let end = logged_end(&log_redactor, &outcome.end);
            tracing::info!(
                bot = %bot_name,
                steps = outcome.steps,
                input_tokens = outcome.usage.input_tokens,
                output_tokens = outcome.usage.output_tokens,
                tool_loading = logged.mode.as_str(),
                tool_definition_tokens = ?logged.tokens.steps(),
                eager_tool_definition_tokens = logged.eager_tokens,
                end = %end,
                "chat turn ended"
            );
        }
    });
    // Continuing the last assistant message (approvals answered): the client appends to it.
    let id = conversation.continues.unwrap_or_else(message_id);
    let redactor = state.config.redactor.clone();
    if wants_json(&headers) {
        // The lease lives until the collected answer is ready.
        // The calls this turn settles were shown by an earlier one: their records start
        // from what the client sent back, so their outcomes are reported too.
        let settled = conversation
            .resumed
            .iter()
            .map(|resumed| CallRecord {
                id: resumed.call.id.clone(),
                tool_name: resumed.call.name.clone(),
                input: resumed.call.input.clone(),
                approval_id: Some(resumed.approval_id.clone()),
                ..CallRecord::default()
            })
            .collect();
        let answer = collect_answer(id, &bot, Box::pin(events), &redactor, settled).await;
        drop((lease, slot));
        return answer.map(|mut value| {
            report.add_to(&mut value);
            Json(value).into_response()
        });
    }
    let frames = sse_frames(
        UiStreamEncoder::new(id),
        events,
        redactor,
        report,
        (lease, slot),
    );
    let mut response = Body::from_stream(frames.map(Ok::<_, Infallible>)).into_response();
    for (name, value) in RESPONSE_HEADERS {
        response
            .headers_mut()
            .insert(name, HeaderValue::from_static(value));
    }
    Ok(response)
}

/// Which of this bot's tools ask before they run (the toolset's word for MCP tools, the
/// bot's `nativeToolApproval` for native ones; `tool_search` never asks; read again before
/// each step's calls: [`crate::approval_gate::LiveGate`]), and the signer of this bot's
/// approval ids.
fn approvals(
    state: &AppState,
    caller: &Caller,
    bot: &Bot,
    toolset: &Arc<toolset::BotToolset>,
    native: &NativeToolRegistry,
) -> Approvals {
    let gate = crate::approval_gate::LiveGate::new(
        state.toolsets.clone(),
        Arc::clone(toolset),
        native,
        &bot.native_tool_approval,
    );
    let settings = &state.config.approvals;
    Approvals {
        gate: Arc::new(gate),
        // Bound to the key whose turn asks: another key's turn (another front end of the bot)
        // cannot answer it.
        signer: ApprovalSigner::new(
            settings.key,
            bot.id.clone(),
            caller.key.to_hex(),
            settings.ttl,
            inference::approval::system_clock(),
        ),
        ledger: Arc::new(StoreLedger(state.store.clone())),
    }
}

/// The store as the ledger of used approval ids: one table every replica shares, so an
/// approval runs its call once in the whole deployment.
struct StoreLedger(store::Store);

impl inference::ApprovalLedger for StoreLedger {
    fn consume<'a>(
        &'a self,
        approval_id: &'a str,
        bot: &'a str,
        expires_at_ms: i64,
    ) -> futures::future::BoxFuture<'a, Result<bool, inference::LedgerError>> {
        Box::pin(async move {
            self.0
                .consume_approval(approval_id, bot, expires_at_ms)
                .await
                .map_err(|error| {
                    tracing::error!(%error, "could not record an approval as used");
                    inference::LedgerError("the store could not be written".to_owned())
                })
        })
    }
}

/// The SSE body: `start`, the chunks of each event (error texts redacted, the tool report
/// added to the `finish` chunk's metadata), `[DONE]`. `guard` (the lease) is dropped with
/// the stream, whether it ends or the client hangs up.
fn sse_frames<E, G>(
    encoder: UiStreamEncoder,
    events: E,
    redactor: Redactor,
    report: ToolReport,
    guard: G,
) -> impl Stream<Item = String> + Send + use<E, G>
where
    E: Stream<Item = TurnEvent> + Send + 'static,
    G: Send + 'static,
{
    encoder.into_sse_with(events, move |chunk| {
        let _held = &guard;
        match chunk {
            UiMessageChunk::Error { error_text } => UiMessageChunk::Error {
                error_text: redactor.redact(&error_text),
            },
            UiMessageChunk::Finish { message_metadata } => {
                let mut metadata = message_metadata.unwrap_or_else(|| json!({}));
                report.add_to(&mut metadata);
                UiMessageChunk::Finish {
                    message_metadata: Some(metadata),
                }
            }
            other => other,
        }
    })
}

/// How a turn ended, for the log: a provider's error body can echo the key it was sent, so
/// every secret BotCraft knows is redacted from it.
fn logged_end(redactor: &Redactor, end: &inference::TurnEnd) -> String {
    redactor.redact(&format!("{end:?}"))
}

/// One tool call of a JSON answer.
#[derive(Debug, Default)]
struct CallRecord {
    id: String,
    tool_name: String,
    input: Value,
    output: Option<String>,
    error: Option<String>,
    approval_id: Option<String>,
    denied: bool,
}

/// The whole turn as one JSON document; `settled`: the calls of an earlier turn this one
/// settles (approvals answered), reported first.
async fn collect_answer<E>(
    id: String,
    bot: &Bot,
    mut events: E,
    redactor: &Redactor,
    settled: Vec<CallRecord>,
) -> Result<Value, ApiError>
where
    E: Stream<Item = TurnEvent> + Unpin,
{
    let mut text = String::new();
    let mut calls: Vec<CallRecord> = settled;
    let mut steps = 0;
    while let Some(event) = events.next().await {
        match event {
            TurnEvent::StepStarted { .. } => steps += 1,
            TurnEvent::TextDelta(delta) => text.push_str(&delta),
            TurnEvent::ToolInputAvailable {
                call_id,
                tool_name,
                input,
            } => calls.push(CallRecord {
                id: call_id,
                tool_name,
                input,
                ..CallRecord::default()
            }),
            TurnEvent::ToolOutputAvailable { call_id, output } => {
                if let Some(call) = calls.iter_mut().find(|call| call.id == call_id) {
                    call.output = Some(output);
                }
            }
            TurnEvent::ToolOutputError { call_id, error } => {
                if let Some(call) = calls.iter_mut().find(|call| call.id == call_id) {
                    call.error = Some(error);
                }
            }
            TurnEvent::ToolApprovalRequested {
                call_id,
                approval_id,
            } => {
                if let Some(call) = calls.iter_mut().find(|call| call.id == call_id) {
                    call.approval_id = Some(approval_id);
                }
            }
            TurnEvent::ToolOutputDenied { call_id } => {
                if let Some(call) = calls.iter_mut().find(|call| call.id == call_id) {
                    call.denied = true;
                } else {
                    calls.push(CallRecord {
                        id: call_id,
                        denied: true,
                        ..CallRecord::default()
                    });
                }
            }
            TurnEvent::ToolInputStarted { .. }
            | TurnEvent::ToolInputDelta { .. }
            | TurnEvent::ToolImages { .. }
            | TurnEvent::StepFinished { .. } => {}
            TurnEvent::Finished {
                reason,
                usage,
                step_limit_reached,
            } => {
                let tool_calls: Vec<Value> = calls
                    .into_iter()
                    .map(|call| {
                        json!({
                            "toolCallId": call.id,
                            "toolName": call.tool_name,
                            "input": call.input,
                            "output": call.output,
                            "error": call.error,
                            "approvalId": call.approval_id,
                            "denied": call.denied,
                        })
                    })
                    .collect();
                return Ok(json!({
                    "id": id,
                    "botId": bot.id,
                    "text": text,
                    "toolCalls": tool_calls,
                    "steps": steps,
                    "finishReason": reason.ai_sdk_name(),
                    "stepLimitReached": step_limit_reached,
                    "usage": {
                        "inputTokens": usage.input_tokens,
                        "outputTokens": usage.output_tokens,
                        "totalTokens": usage.total_tokens(),
                    },
                }));
            }
            TurnEvent::Failed { error } => return Err(provider_failure(&error, redactor)),
            TurnEvent::Aborted => break,
        }
    }
    Err(ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "aborted",
        "the turn was cancelled (BotCraft is shutting down)",
    ))
}

fn provider_failure(error: &ProviderError, redactor: &Redactor) -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        "provider_error",
        redactor.redact(&error.to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use inference::providers::{ProviderError, ProviderKind};

    #[test]
    fn a_provider_error_is_logged_without_the_key_it_echoed() {
        let key = "sk-logged-key-8f1e";
        let end = inference::TurnEnd::Failed(ProviderError::Http {
            provider: ProviderKind::OpenAi,
            status: 401,
            body_excerpt: format!("bad key {key}"),
        });
        let logged = logged_end(&Redactor::new([key.to_owned()]), &end);
        assert!(!logged.contains(key), "{logged}");
        assert!(logged.contains("bad key [redacted]"), "{logged}");
    }
}
