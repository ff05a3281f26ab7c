//! The tool catalog index behind `tool_search` (seed 000 §9).
//!
//! Owns: turning MCP tool definitions into searchable documents
//! ([`ToolDoc`]), tokenising identifiers and prose the way agents phrase
//! queries ([`tokenize`]), and ranking ([`ToolIndex`] over shared
//! [`Segment`]s): an exact or near-exact tool-name match always first, then
//! BM25F over the chosen fields (name, description, parameters) with the
//! server's name and instructions as low-weight context, fused with the
//! cosine similarity of precomputed vectors when the segments carry them
//! ([`Ranking`]; the nearest vectors are found over 8-bit copies and scored
//! again exactly, `dense`), server filters, and deterministic tie-breaks; and
//! the retrieval evaluation's data types and metrics ([`eval`]).
//!
//! Pure: no I/O, no clock, no model, and no global state but the random key
//! its word tables hash with (`keys`: one per process, so a query word is
//! hashed once for every segment). The caller builds segments (and computes
//! vectors) and decides when to rebuild.

mod dense;
mod doc;
pub mod eval;
mod index;
mod keys;
mod query;
pub mod report;
mod segment;
pub mod tokenize;
mod weights;

pub use doc::{ParamDoc, ToolDoc, catalog_hash, text_key};
pub use index::{Hit, Ranking, SearchResult, Signals, ToolIndex, Weights};
pub use query::{Field, MAX_QUERY_CHARS, MAX_SERVERS, SearchError, SearchQuery};
pub use segment::{Segment, VectorError};
