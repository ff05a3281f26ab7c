//! The provider abstraction: one streamed model step. Owns the [`Provider`]
//! trait, its input [`StepRequest`], its output [`ProviderEvent`] and the
//! typed [`ProviderError`]. The wire formats live in [`openai`] and
//! [`anthropic`]; the HTTP and SSE plumbing they share in `transport`; model
//! strings and provider settings in `selection`.

pub mod anthropic;
pub mod openai;
mod selection;
mod transport;

use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use futures::Stream;
use serde_json::Value;

use crate::conversation::{FinishReason, Message, Usage};
use crate::tool_schema::ToolDefinition;

pub use selection::{
    AnthropicSettings, HttpTimeouts, ModelError, ModelSpec, OpenAiSettings, ProviderSettings,
    ProviderSetupError, Providers, SelectedModel,
};

/// The events of one streamed step, ending with [`ProviderEvent::Finish`] or
/// an error item.
pub type ProviderStream = Pin<Box<dyn Stream<Item = Result<ProviderEvent, ProviderError>> + Send>>;

/// Streams one model step. Dropping the returned stream drops the HTTP
/// request: that is how a turn cancels a step.
pub trait Provider: Send + Sync {
    fn kind(&self) -> ProviderKind;

    /// Starts the step. The request is sent when the stream is first polled.
    fn stream_step(&self, request: StepRequest) -> ProviderStream;
}

/// Everything a provider needs for one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRequest {
    pub model: String,
    /// The whole system prompt (bot prompt plus server instructions); empty
    /// for none.
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDefinition>,
    /// Output token cap. Anthropic requires one and uses 4096 when `None`;
    /// OpenAI-compatible servers get none unless set.
    pub max_output_tokens: Option<u32>,
}

/// What a provider reports while a step streams.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    TextDelta(String),
    /// The model started a tool call.
    ToolCallStart {
        id: String,
        name: String,
    },
    /// A fragment of the call's JSON arguments, as the model wrote it.
    ToolCallDelta {
        id: String,
        delta: String,
    },
    /// The call's arguments are complete.
    ToolCallComplete {
        id: String,
        name: String,
        input: Result<Value, InvalidToolInput>,
    },
    /// The step is over. Always the last event of a successful stream.
    Finish {
        reason: FinishReason,
        usage: Usage,
    },
}

/// Arguments the model wrote that are not a JSON object. The turn tells the
/// model so, as the call's error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidToolInput {
    pub raw: String,
    pub reason: String,
}

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// OpenAI chat completions, and every server that copies it (vLLM,
    /// llama.cpp, Ollama).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl ProviderKind {
    /// The prefix of a model string (`openai:gpt-4o`).
    pub fn prefix(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// The environment variable an operator sets for this provider's key;
    /// named in errors only, never read here.
    pub fn api_key_variable(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix())
    }
}

/// Why a step failed. Transport causes are kept as text so the error can be
/// cloned into events and compared in tests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The provider answered with a non-2xx status.
    #[error("{provider} returned HTTP {status}: {body_excerpt}")]
    Http {
        provider: ProviderKind,
        status: u16,
        /// The start of the error body (at most [`ERROR_BODY_LIMIT`] bytes).
        body_excerpt: String,
    },
    /// No connection, or the request could not be sent.
    #[error("could not reach {provider} at {url}: {detail}")]
    Connect {
        provider: ProviderKind,
        url: String,
        detail: String,
    },
    /// Nothing arrived for the idle timeout, before or during the stream.
    #[error("{provider} stalled: nothing received for {idle:?}")]
    Stalled {
        provider: ProviderKind,
        idle: Duration,
    },
    /// The connection broke while the stream was being read.
    #[error("{provider} stream broke: {detail}")]
    Transport {
        provider: ProviderKind,
        detail: String,
    },
    /// The stream carried something that is not the documented format.
    #[error("{provider} sent a malformed stream: {detail}")]
    Malformed {
        provider: ProviderKind,
        detail: String,
    },
    /// The provider reported an error inside the stream (Anthropic `error`
    /// event, OpenAI `{"error": …}` chunk).
    #[error("{provider} reported {kind}: {message}")]
    Remote {
        provider: ProviderKind,
        kind: String,
        message: String,
    },
    /// The stream ended before the step finished.
    #[error("{provider} stream ended before the step finished")]
    Truncated { provider: ProviderKind },
}

impl ProviderError {
    pub fn provider(&self) -> ProviderKind {
        match self {
            Self::Http { provider, .. }
            | Self::Connect { provider, .. }
            | Self::Stalled { provider, .. }
            | Self::Transport { provider, .. }
            | Self::Malformed { provider, .. }
            | Self::Remote { provider, .. }
            | Self::Truncated { provider } => *provider,
        }
    }

    /// A short stable word for the kind of failure (a trace span's `error.type`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Http { .. } => "http_status",
            Self::Connect { .. } => "connect",
            Self::Stalled { .. } => "stalled",
            Self::Transport { .. } => "transport",
            Self::Malformed { .. } => "malformed",
            Self::Remote { .. } => "provider_error",
            Self::Truncated { .. } => "truncated",
        }
    }
}

/// How much of an error body an [`ProviderError::Http`] keeps.
pub const ERROR_BODY_LIMIT: usize = 2048;

/// The largest server-sent event a provider may send: a longer one ends the step with
/// [`ProviderError::Malformed`] instead of growing a buffer without end. Providers stream in
/// small deltas; this is far above any real event.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;
