//! BotCraft's HTTP surface, as a library so it can be driven without a socket:
//! [`app`] builds the axum [`Router`] over an [`AppState`].
//!
//! - `POST /api/ai/chat` ([`routes::chat`]): one chat turn of a bot, answered with the AI SDK
//!   UI message stream (SSE) or, on `Accept: application/json`, one JSON document;
//! - `GET /api/health` ([`health`]): the seed's §10.4 health document; public;
//! - the admin API under `/api/servers`, `/api/bots` and `/api/keys` ([`routes::servers`],
//!   [`routes::bots`], [`routes::keys`]) and its OpenAPI document ([`openapi`]);
//! - [`auth`]: bearer keys with roles (admin, chat, bot), configured or stored;
//!   [`origin`]: the Origin rule; [`precheck`]: the layer such checks run in (no allocation
//!   per request); [`error`]: one JSON error type;
//! - a turn's MCP tools come from `chat-tools` (the executor over the toolset, the
//!   `tool_search` indexes); the chat route holds the lease on the bot's servers;
//! - [`native_tools`]: the native tools every bot gets; [`approval_gate`]: which of a turn's
//!   calls wait for a person, by the policies as they are before each step's calls;
//! - [`tool_loading`]: eager / deferred / auto loading of a turn's tools, metered per step;
//! - `GET /api/tools/search` ([`routes::tools`]) over the cached catalogs;
//! - [`listener`]: serving over TCP with a header-read timeout and a connection cap;
//! - [`turn_metrics`]: provider requests and tool searches of a turn, into the metrics
//!   served at `GET /metrics` (public).

pub mod approval_gate;
pub mod auth;
pub mod chat_streams;
pub mod error;
pub mod health;
pub mod listener;
pub mod native_tools;
pub mod openapi;
pub mod origin;
pub mod precheck;
pub mod read_deadline;
pub mod redact;
pub mod routes;
pub mod state;
pub mod tool_loading;
pub mod turn_metrics;
pub mod write_stall;

#[cfg(test)]
mod testing;

pub use auth::{Access, ApiKeys, Caller, Role};
pub use chat_tools::McpToolExecutor;
pub use chat_tools::ToolCatalogs;
pub use error::ApiError;
pub use native_tools::default_native_tools;
pub use redact::Redactor;
pub use routes::RouteSpec;
pub use state::{
    ApiConfig, AppState, ApprovalSettings, DEFAULT_APPROVAL_TTL, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CHAT_MESSAGES, new_toolsets,
};

use axum::Router;

/// Every route over `state`.
pub fn app(state: AppState) -> Router {
    routes::app_with_routes(state).0
}
