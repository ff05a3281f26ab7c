//! The `tool_search` indexes BotCraft's services keep.
//!
//! Owns: turning a set of tool documents into a [`ToolIndex`] made of one
//! [`Segment`] per server (a segment is reused while that server's documents
//! are the same, so one server's change rebuilds one segment), the vectors of
//! the dense signal (computed once per (model id, text hash), kept in the
//! store's `"ToolVector"` table, so neither a restart nor a server's restart
//! re-embeds an unchanged tool; and each server's vectors kept again as one
//! set in `"ToolVectorSet"` ([`vector_set_key`]), so a restart reads one row
//! per server instead of one per tool; rows no live index has used for a retention are
//! deleted: [`SearchIndexes::keep_vectors`]), the progress of a build's embedding
//! ([`SearchIndexes::build_progress`], [`SearchIndexes::with_progress`]: a cold
//! build is about 13 ms per tool text on 2 cores), and the query's embedding, the
//! only model work on the request path.
//!
//! Without a model ([`SearchIndexes::lexical`]) every index is BM25F only and
//! [`SearchMode::Bm25`] says so; `tool_search` works the same.

mod indexes;

pub use indexes::{
    BuildProgress, IndexError, KeptVectors, ProgressObserver, SearchIndexes, SearchMode,
    TOUCH_EVERY, in_steps, vector_set_key,
};
pub use tool_search::{Segment, ToolIndex};
