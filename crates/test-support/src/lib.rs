//! Test helpers for BotCraft: drive real MCP server processes over stdio.
//!
//! Owns [`StdioServer`], an `rmcp` client over a spawned binary whose stderr is
//! captured line by line. Test code only; `anyhow` is fine here.

mod fake_llm;
mod fake_mcp;
mod stdio_client;
mod web_page;

pub use fake_llm::{FakeLlm, FakeReply, FakeToolCall, RecordedRequest, Wire};
pub use fake_mcp::fake_mcp_server_binary;
pub use stdio_client::{CallOutcome, StdioServer};
pub use web_page::serve_page;
