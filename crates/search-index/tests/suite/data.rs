//! The evaluation data on disk (`crates/tool-search/eval/`) and its vectors.
//! Shared by the suite and `examples/eval.rs`.
//!
//! Vectors come from the model in `BOTCRAFT_EMBEDDING_MODEL` (`test_skip::needs`) through
//! [`SearchIndexes`], persisted in an SQLite store under `target/`, exactly as
//! `botcraft serve` persists them: the first run embeds, later runs reuse.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use search_index::SearchIndexes;
use tool_search::eval::{EvalQuery, ServerCapture, parse_queries};
use tool_search::{Segment, ToolIndex, Weights};

pub fn dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tool-search/eval"))
}

/// Which queries, and which servers they may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // `Dev` and `Fresh` are the example's; the suite reports `Test`.
pub enum Split {
    /// Tuning: dev queries over every server but the test-only ones.
    Dev,
    /// Reporting: test queries over every server but the fresh ones.
    Test,
    /// Run once: the fresh queries (`fresh.jsonl`) over every server.
    Fresh,
}

pub struct EvalData {
    pub servers: Vec<ServerCapture>,
    pub test_only: BTreeSet<String>,
    /// Captured after dev, test and the ranker: only the fresh split searches them.
    pub fresh: BTreeSet<String>,
}

#[derive(serde::Deserialize)]
struct SplitFile {
    test_only_servers: Vec<String>,
    fresh_servers: Vec<String>,
}

impl EvalData {
    pub fn load() -> Self {
        let dir = dir();
        let servers = tool_search::eval::load_captures(&dir.join("servers"))
            .unwrap_or_else(|e| panic!("{e}"));
        let split: SplitFile = serde_json::from_str(
            &std::fs::read_to_string(dir.join("split.json")).expect("split.json"),
        )
        .expect("split.json");
        Self {
            servers,
            test_only: split.test_only_servers.into_iter().collect(),
            fresh: split.fresh_servers.into_iter().collect(),
        }
    }

    /// A split's queries (read only when asked for, so tuning never loads the test split).
    pub fn queries(&self, split: Split) -> Vec<EvalQuery> {
        let name = match split {
            Split::Dev => "dev.jsonl",
            Split::Test => "test.jsonl",
            Split::Fresh => "fresh.jsonl",
        };
        parse_queries(&std::fs::read_to_string(dir().join(name)).expect(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// The servers a split searches.
    pub fn servers(&self, split: Split) -> impl Iterator<Item = &ServerCapture> {
        self.servers.iter().filter(move |s| match split {
            Split::Dev => !self.test_only.contains(&s.server) && !self.fresh.contains(&s.server),
            Split::Test => !self.fresh.contains(&s.server),
            Split::Fresh => true,
        })
    }
}

/// Hybrid indexes over the model in `dir`, with vectors persisted under `target/`.
pub async fn hybrid(dir: PathBuf) -> SearchIndexes {
    let embedder = tokio::task::spawn_blocking(move || embedding::Embedder::load(&dir))
        .await
        .expect("load task")
        .unwrap_or_else(|e| panic!("{e}"));
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target"))
        .join("tool-vectors-eval.db");
    // The tests of this binary share the file: on a fresh checkout two of them would migrate
    // it at once ("table already exists"). One connects (and migrates) at a time.
    static CONNECT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let store = {
        let _one_at_a_time = CONNECT.lock().await;
        match store::Store::connect(&store::sqlite_url(&path)).await {
            Ok(store) => store,
            // A cache written under migrations that have changed since (a branch's): made
            // again (its vectors are computed again, once).
            Err(store::StoreError::Migrate(_)) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
                store::Store::connect(&store::sqlite_url(&path))
                    .await
                    .expect("vector cache store, made again")
            }
            Err(error) => panic!("vector cache store: {error:?}"),
        }
    };
    SearchIndexes::new(Some(Arc::new(embedder)), Some(store))
}

/// One segment per server of `split`, with vectors when `indexes` has a model.
pub async fn segments(data: &EvalData, split: Split, indexes: &SearchIndexes) -> Vec<Arc<Segment>> {
    let mut out = Vec::new();
    for server in data.servers(split) {
        out.push(indexes.segment(server.docs()).await.expect("segment"));
    }
    out
}

pub fn index(segments: &[Arc<Segment>], weights: Weights) -> ToolIndex {
    ToolIndex::from_segments(segments.to_vec(), weights)
}

pub async fn query_vectors(queries: &[EvalQuery], indexes: &SearchIndexes) -> Vec<Vec<f32>> {
    let texts: Vec<String> = queries.iter().map(|q| q.q.clone()).collect();
    indexes
        .vectors(&texts)
        .await
        .expect("query vectors")
        .expect("a model is loaded")
}
