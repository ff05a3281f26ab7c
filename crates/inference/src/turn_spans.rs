//! The trace spans of a chat turn, after OpenTelemetry's GenAI semantic conventions:
//!
//! - each model call is `chat {model}` (client kind): `gen_ai.operation.name`,
//!   `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.request.max_tokens`,
//!   `gen_ai.usage.input_tokens` and `output_tokens`, `gen_ai.response.finish_reasons`,
//!   `error.type`;
//! - each tool call is `execute_tool {name}`: `gen_ai.tool.name`, `gen_ai.tool.call.id`,
//!   `gen_ai.tool.type` (`function` for BotCraft's own tools, `extension` for MCP tools, whose
//!   MCP client span `tools/call NAME` is its child), `error.type`; `tool_search` adds its
//!   `botcraft.tool_search.mode` and `hits` and the names found;
//! - an approval asked for, or answered, is an event on the turn's span.
//!
//! Tool arguments and results, the user's last message and the model's text are recorded
//! only when content recording is on ([`observability::traced_content`]: redacted, cut).

use tracing::field::Empty;
use tracing::{Level, Span};

use observability::{TRACE_TARGET, traced_content};

use crate::conversation::{FinishReason, Message, Usage};
use crate::providers::{ProviderError, ProviderKind};

/// The span of one model call.
pub(crate) fn model_call(
    provider: ProviderKind,
    model: &str,
    max_tokens: Option<u32>,
    messages: &[Message],
) -> Span {
    let span = tracing::span!(
        target: TRACE_TARGET,
        Level::TRACE,
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider.prefix(),
        gen_ai.request.model = model,
        gen_ai.request.max_tokens = max_tokens,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        error.type = Empty,
    );
    if !span.is_disabled() {
        let last_user = messages.iter().rev().find_map(|message| match message {
            Message::User { text } => Some(text.as_str()),
            _ => None,
        });
        if let Some(text) = last_user.and_then(traced_content) {
            let recorded = serde_json::json!([
                {"role": "user", "parts": [{"type": "text", "content": text}]}
            ]);
            span.record("gen_ai.input.messages", recorded.to_string());
        }
    }
    span
}

/// What the model call gave: its usage, finish reason and (content recording on) text.
pub(crate) fn model_answered(span: &Span, usage: Usage, reason: &FinishReason, text: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("gen_ai.usage.input_tokens", usage.input_tokens);
    span.record("gen_ai.usage.output_tokens", usage.output_tokens);
    span.record(
        "gen_ai.response.finish_reasons",
        format!("[\"{}\"]", reason.ai_sdk_name()),
    );
    if let Some(text) = traced_content(text) {
        let recorded = serde_json::json!([
            {"role": "assistant", "parts": [{"type": "text", "content": text}]}
        ]);
        span.record("gen_ai.output.messages", recorded.to_string());
    }
}

/// The model call failed.
pub(crate) fn model_failed(span: &Span, error: &ProviderError) {
    failed(span, error.kind());
}

/// The span of one tool call; `native` for BotCraft's own tools.
pub(crate) fn tool_call(name: &str, call_id: &str, native: bool) -> Span {
    tracing::span!(
        target: TRACE_TARGET,
        Level::TRACE,
        "execute_tool",
        otel.name = %format_args!("execute_tool {name}"),
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.type = if native { "function" } else { "extension" },
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        botcraft.tool_search.query = Empty,
        botcraft.tool_search.mode = Empty,
        botcraft.tool_search.hits = Empty,
        botcraft.tool_search.found = Empty,
        error.type = Empty,
    )
}

/// The call's arguments, when content recording is on.
pub(crate) fn tool_arguments(span: &Span, input: &serde_json::Value) {
    if span.is_disabled() {
        return;
    }
    if let Some(text) = traced_content(&input.to_string()) {
        span.record("gen_ai.tool.call.arguments", text);
    }
}

/// How the call ended: its result (content recording on), or the failure's kind.
pub(crate) fn tool_ended(span: &Span, outcome: Result<&str, &'static str>) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(text) => {
            if let Some(text) = traced_content(text) {
                span.record("gen_ai.tool.call.result", text);
            }
        }
        Err(kind) => failed(span, kind),
    }
}

fn failed(span: &Span, kind: &str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "ERROR");
}

/// A call waits for a person's approval.
pub(crate) fn approval_asked(tool: &str, call_id: &str) {
    tracing::event!(
        target: TRACE_TARGET,
        Level::TRACE,
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        "approval asked"
    );
}

/// A person answered an approval: `approved`, `denied`, `unanswered` or `refused` (an
/// approval id that does not hold).
pub(crate) fn approval_answered(tool: &str, call_id: &str, answer: &'static str) {
    tracing::event!(
        target: TRACE_TARGET,
        Level::TRACE,
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        botcraft.approval.answer = answer,
        "approval answered"
    );
}

/// What `tool_search` did, on the current tool call's span: `mode` (`hybrid`, `bm25f`) and
/// the names found (tool names; the query only with content recording on).
pub fn record_search(query: &str, mode: &'static str, found: &[String]) {
    let span = Span::current();
    if span.is_disabled() {
        return;
    }
    span.record("botcraft.tool_search.mode", mode);
    span.record("botcraft.tool_search.hits", found.len());
    span.record("botcraft.tool_search.found", found.join(","));
    if let Some(query) = traced_content(query) {
        span.record("botcraft.tool_search.query", query);
    }
}
