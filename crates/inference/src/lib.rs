//! BotCraft's chat inference: a model answers a chat turn, using tools.
//!
//! This crate owns:
//! - the provider abstraction and its two wire formats, OpenAI-compatible
//!   chat completions and Anthropic Messages ([`providers`]), chosen from a
//!   bot's model string (`openai:…`, `anthropic:…`) with settings the edge
//!   parses once;
//! - the conversation model every provider translates ([`conversation`]);
//! - native tools ([`native`]) and the trait through which MCP tools are
//!   called ([`mcp_tools`]); their qualified names are the `toolset` crate's;
//! - the turn loop [`ChatTurn`] ([`turn`]) and its per-step tool hook for
//!   deferred loading ([`active_tools`]);
//! - deferred tool discovery: `tool_search` over the bot's catalog
//!   ([`tool_search`]), loading modes eager/deferred/auto ([`loading`]) and
//!   tool-definition token accounting ([`tokens`]);
//! - the AI SDK UI message stream, out ([`ui_stream`]) and in
//!   ([`ui_message`]);
//! - tools that ask first ([`approval`]): which calls wait for a person, and the keyed id
//!   that binds an approval to one call, stateless across requests.
//!
//! It knows nothing of the MCP manager, the store or HTTP serving: those
//! meet it through [`ToolExecutor`], plain values and event streams.

pub mod active_tools;
pub mod approval;
pub mod conversation;
mod kept_text;
pub mod loading;
pub mod mcp_tools;
pub mod native;
pub mod providers;
pub mod tokens;
pub mod tool_schema;
pub mod tool_search;
pub mod turn;
pub mod turn_events;
pub mod turn_spans;
pub mod ui_message;
pub mod ui_stream;

pub use active_tools::{ActiveTools, EagerTools, StepContext};
pub use approval::{
    ApprovalError, ApprovalGate, ApprovalLedger, ApprovalSigner, Approvals, CallTarget,
    LedgerError, MemoryLedger, ResumedCall,
};
pub use conversation::{FinishReason, Message, ToolCall, ToolImage, ToolResult, Usage};
pub use loading::{
    DEFAULT_AUTO_THRESHOLD_TOKENS, DeferredTools, ToolLoading, ToolPlan, eager_tokens, plan_tools,
    plan_tools_counted,
};
pub use mcp_tools::{ToolCallError, ToolExecutor, ToolResultContent};
pub use native::{NativeTool, NativeToolError, NativeToolRegistry, NativeToolResult};
pub use providers::{
    ModelError, ModelSpec, Provider, ProviderError, ProviderEvent, ProviderKind, ProviderSettings,
    Providers, SelectedModel, StepRequest,
};
pub use tokens::{MeteredTools, ToolTokenLog, definition_tokens};
pub use tool_schema::{ToolDefinition, normalize_schema};
pub use tool_search::{
    CatalogEntry, FoundTool, QueryEmbedder, TOOL_SEARCH, ToolCatalog, ToolSearchTool,
};
pub use turn::{
    ChatTurn, DEFAULT_MAX_CALLS_PER_STEP, DEFAULT_MAX_PARALLEL_CALLS, DEFAULT_MAX_STEP_TEXT_BYTES,
    TurnConfig, TurnEnd, TurnEvent, TurnOutcome,
};
pub use turn_events::{DEFAULT_EVENT_BUFFER_BYTES, TurnEvents};
pub use ui_message::{Conversation, UiMessage, read_conversation, to_provider_messages};
pub use ui_stream::{UiMessageChunk, UiStreamEncoder};
