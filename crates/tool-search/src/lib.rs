//! The tool catalog index behind `tool_search` (seed 000 §9).
//!
//! Owns: turning MCP tool definitions into searchable documents
//! ([`ToolDoc`]), tokenising identifiers and prose the way agents phrase
//! queries ([`tokenize`]), and ranking ([`ToolIndex`]): an exact or
//! near-exact tool-name match always first, then BM25F over the chosen fields
//! (name, description, parameters) with the server's name and instructions as
//! low-weight context, server filters, and deterministic tie-breaks.
//!
//! Pure: no I/O, no clock, no global state. The caller decides when to build
//! (the catalog's [`catalog_hash`] changes) and what to do with the hits.

mod doc;
pub mod eval;
mod index;
mod query;
pub mod report;
pub mod tokenize;

pub use doc::{ParamDoc, ToolDoc, catalog_hash};
pub use index::{Hit, SearchResult, ToolIndex, Weights};
pub use query::{Field, MAX_QUERY_CHARS, SearchError, SearchQuery};
