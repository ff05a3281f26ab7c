//! BotCraft as an MCP server.
//!
//! - **The gateway** ([`gateway`], [`service`], [`auth`]): one bot's allowed tools over
//!   streamable HTTP at `/mcp`, under their qualified names (`server__tool`, [`exposed`]),
//!   calls routed through a [`GatewayBackend`] ([`backend`]; the real one over the bots'
//!   toolsets is [`adapter::ToolsetBackend`]: listing starts no server). The bot comes from the
//!   bearer key ([`BotKeys`]); a key for one bot never lists or calls another's tools.
//!   Servers' `instructions` are combined into the gateway's; tool-list changes reach
//!   connected sessions as `notifications/tools/list_changed`. `/mcp/{server}` is one of the
//!   bot's servers under its own names. Everything else the protocol carries — resources,
//!   prompts, completion, logging, progress, cancellation, sampling, elicitation, list
//!   changes — is relayed on both faces ([`relay`], `gateway/relayed.rs`).
//! - **The stdio bridge** ([`bridge`]): `botcraft mcp-stdio --bot NAME`, which starts with
//!   nothing: `initialize` and `tools/list` come from a bot manifest ([`manifest`]) on disk,
//!   `tools/call` is forwarded to BotCraft's `/mcp`, and every failure of a call is that
//!   call's, with a `stdio.*` reason code on stderr. `--server S` relays `/mcp/S`;
//!   `--local` serves the gateway's own server on stdio over a backend in the same process
//!   ([`bridge::local`]).
//! - **Traces** ([`traced`]): a server span for each tool, resource, prompt and completion
//!   request received, continuing the client's trace context (`_meta.traceparent`, or the
//!   HTTP header).
//! - **Speed**: [`direct`] serves a session's plain `tools/call` on `/mcp` from the HTTP layer,
//!   past rmcp's session machinery, and answers it as plain JSON; [`coalesce`] sends a
//!   session's ended event-stream answer in one write.

pub mod adapter;
pub mod auth;
pub mod backend;
pub mod bridge;
pub mod coalesce;
pub mod direct;
pub mod exposed;
pub mod gateway;
pub mod manifest;
pub mod relay;
pub mod service;
pub mod traced;

pub use adapter::ToolsetBackend;
pub use auth::{AuthenticatedBot, BOT_KEYS_ENV, BotKeys, BotKeysError, GatewayAuth, KeyPolicy};
pub use backend::{BackendError, BotTools, ExposedTool, GatewayBackend, ServerInstructions};
pub use exposed::ExposedTools;
pub use gateway::GatewayServer;
pub use manifest::BotManifest;
pub use service::{
    DEFAULT_MAX_SESSIONS_PER_BOT, GatewayConfig, MCP_PATH, McpService, mcp_router, mcp_service,
};
