//! A bot's MCP tools in a chat turn, between `toolset` (which tools, their names, the calls)
//! and `inference` (the turn loop): what the model is offered and what `tool_search` indexes
//! ([`executor::definitions`], [`executor::catalog_entries`]), the [`McpToolExecutor`] that
//! runs the model's calls through the toolset and flattens their results for the model, and
//! the tool-search indexes kept between requests ([`ToolCatalogs`]). No HTTP here: the
//! routes of `http-api` use it.

pub mod catalogs;
pub mod executor;

pub use catalogs::{SearchAnswer, SearchIndex, SearchState, ToolCatalogs};
pub use executor::McpToolExecutor;
