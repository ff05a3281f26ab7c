//! Test helpers for BotCraft: drive real MCP server processes over stdio.
//!
//! Owns [`StdioServer`], an `rmcp` client over a spawned binary whose stderr is
//! captured line by line; the fakes (an MCP server, an LLM provider); and the MCP conformance
//! fixture ([`conformance_fixture`]), and a fake OAuth authorization server in front of it
//! ([`oauth_server`]); an OTLP/HTTP receiver ([`otlp`]); the forge servers' manifest-drift checks ([`manifest_drift`]); [`Served`], a program run as a network service. Test code only; `anyhow` is fine here.

pub mod conformance_fixture;
mod fake_llm;
mod fake_mcp;
pub mod manifest_drift;
pub mod oauth_server;
pub mod otlp;
mod served;
mod stdio_client;
mod web_page;

pub use fake_llm::{FakeLlm, FakeReply, FakeToolCall, RecordedRequest, Wire};
pub use fake_mcp::{
    conformance_fixture_binary, conformance_fixture_over_http, fake_mcp_server_binary,
};
pub use served::{HANDED_FD, Served, free_port, loopback_listener, loopback_port};
pub use stdio_client::{CallOutcome, StdioServer};
pub use web_page::serve_page;
