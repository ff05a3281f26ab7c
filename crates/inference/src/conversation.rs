//! The provider-neutral conversation: what a turn sends to a model and what
//! it keeps. Owns [`Message`], [`ToolCall`], [`ToolResult`], [`Usage`] and
//! [`FinishReason`]; each provider module translates these to its wire format.

use serde_json::Value;

/// One message of a conversation, in the order the model sees them.
///
/// The system prompt is not a message: it travels beside them (see
/// [`crate::StepRequest`]), because providers put it in different places.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// What the user wrote.
    User { text: String },
    /// One model step: its text (possibly empty) and the tools it called.
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    /// The results of the tool calls of the assistant message just before.
    ToolResults(Vec<ToolResult>),
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User { text: text.into() }
    }

    /// An assistant message without tool calls.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::Assistant {
            text: text.into(),
            tool_calls: Vec::new(),
        }
    }
}

/// A tool call the model made: the call id the provider assigned, the tool
/// name as the model saw it (qualified for MCP tools) and its JSON input.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// The answer to one [`ToolCall`], as the model will read it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    /// The tool name of the call (OpenAI does not need it; kept for logs and
    /// for providers that do).
    pub tool_name: String,
    pub content: String,
    /// The call failed: the content explains why, and the model is told so.
    pub is_error: bool,
    /// Images the result carried, for a model that takes them (empty otherwise: `content`
    /// describes them).
    pub images: Vec<ToolImage>,
}

/// An image from a tool result: its media type and base64 data, as MCP carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolImage {
    pub mime_type: String,
    pub data: String,
}

impl ToolImage {
    /// The image as a `data:` URL.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }
}

/// Token counts of one step or of a whole turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Adds another step's usage to this one.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// Why a model step stopped, normalised across providers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// A natural end (OpenAI `stop`, Anthropic `end_turn` / `stop_sequence`).
    Stop,
    /// The output token limit (`length`, `max_tokens`).
    Length,
    /// The model wants tool results (`tool_calls`, `tool_use`).
    ToolCalls,
    /// The provider filtered or refused the output.
    ContentFilter,
    /// Anything else, as the provider named it.
    Other(String),
}

impl FinishReason {
    /// The name the AI SDK uses for this reason (`stop`, `length`,
    /// `tool-calls`, `content-filter`, `other`).
    pub fn ai_sdk_name(&self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool-calls",
            Self::ContentFilter => "content-filter",
            Self::Other(_) => "other",
        }
    }
}
