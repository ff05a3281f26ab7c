//! What every forge MCP server shares.
//!
//! A forge server implements [`Toolbox`] (its identity, its tools, and how to
//! call them) and hands it to [`run`]. This crate owns:
//!
//! - the stdio runner: `--help`, `--version`, `--manifest`, logging to stderr
//!   only (stdout is the protocol), and serving until stdin closes;
//! - the reason-coded tool failures of "starting with nothing"
//!   ([`ReasonCode`], [`ToolFailure`]): a failed call is a tool result with
//!   `isError: true` that states the cause, plus one stderr line carrying the
//!   reason code;
//! - tool declarations from typed parameter structs ([`tool_spec`]);
//! - reading a server's settings with one rule for unset and empty ([`settings`]);
//! - markdown helpers the knowledge servers share ([`markdown`]);
//! - the tool manifest and the drift check that keeps a committed manifest
//!   equal to what `tools/list` answers ([`manifest`]).
//!
//! It is built on `rmcp` and hides it behind this small surface, so a change
//! in the SDK lands here once.

mod handler;
pub mod manifest;
pub mod markdown;
mod reason;
mod runner;
pub mod settings;
mod toolbox;

pub use handler::KitServer;
pub use reason::{ReasonCode, STDERR_MESSAGE_CHARS, ToolFailure, one_line, one_word};
pub use runner::{RunOptions, init_logging, run, run_with, serve};
pub use settings::{PathSetting, SettingError, Settings};
pub use toolbox::{Identity, ToolCall, ToolOutput, Toolbox, empty_schema, tool_spec};

/// Re-exported so servers name the same `rmcp` types the kit uses.
pub use rmcp;
pub use rmcp::model::{JsonObject, Tool, ToolAnnotations};
pub use tokio_util::sync::CancellationToken;
