//! Hybrid `tool_search` cost at N tools (whole process, one run; figures in
//! docs/benchmarks.md):
//!
//! ```sh
//! export BOTCRAFT_EMBEDDING_MODEL="$(scripts/embedding-model-setup.sh)"
//! cargo bench -p search-index --bench hybrid -- 1000 10000
//! ```
//!
//! The catalog is the 726 captured real tools, repeated under numbered server
//! names until it has N tools (the server name is part of the embedded text,
//! so every copy is a distinct text to embed). For each N it reports:
//! - cold build: an empty vector store, every tool embedded and stored;
//! - warm build: a new process's view (a fresh `SearchIndexes` over the same
//!   store file): segments rebuilt, vectors read from the store; the median of
//!   three, and the store's read alone (every vector, no segment built), as
//!   one row per server (what a warm build reads) and one row per tool;
//! - BM25F-only build, for comparison;
//! - query p50/p99 over the test split's 360 queries, the query embedding
//!   included, and without it (search alone);
//! - the process's peak RSS (VmHWM) at the end, with the model loaded.
//!
//! `HYBRID_STORE=DIR` keeps the vector store in DIR, so a second run's
//! "cold" build reads instead of embedding (for profiling the warm build).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use search_index::SearchIndexes;
use tool_search::eval::{ServerCapture, parse_queries};
use tool_search::{SearchQuery, ToolDoc};

fn eval_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tool-search/eval"))
}

fn catalog(size: usize) -> Vec<ToolDoc> {
    let base: Vec<(String, ServerCapture)> =
        tool_search::eval::load_captures(&eval_dir().join("servers"))
            .expect("eval/servers")
            .into_iter()
            .map(|capture| (capture.server.clone(), capture))
            .collect();
    let mut docs = Vec::with_capacity(size);
    let mut copy = 0;
    while docs.len() < size {
        for (name, capture) in &base {
            let server = if copy == 0 {
                name.clone()
            } else {
                format!("{name}-{copy}")
            };
            for mut doc in capture.docs() {
                if docs.len() == size {
                    break;
                }
                doc.server = server.clone();
                docs.push(doc);
            }
        }
        copy += 1;
    }
    docs
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

#[tokio::main]
async fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() { vec![1000] } else { sizes };
    let model = std::env::var_os("BOTCRAFT_EMBEDDING_MODEL").expect("BOTCRAFT_EMBEDDING_MODEL");
    let started = Instant::now();
    let embedder =
        Arc::new(embedding::Embedder::load(std::path::Path::new(&model)).expect("model loads"));
    println!("model load {:.0} ms", started.elapsed().as_secs_f64() * 1e3);
    let queries: Vec<String> =
        parse_queries(&std::fs::read_to_string(eval_dir().join("test.jsonl")).expect("test.jsonl"))
            .expect("queries")
            .into_iter()
            .map(|q| q.q)
            .collect();
    for size in sizes {
        let docs = catalog(size);
        let dir = tempfile::tempdir().expect("tempdir");
        // `HYBRID_STORE=DIR` keeps the vectors in DIR across runs (profiling the warm build
        // without embedding everything again); its "cold build" then embeds only what is new.
        let kept = std::env::var_os("HYBRID_STORE").map(PathBuf::from);
        if let Some(kept) = &kept {
            println!(
                "vectors kept in {} (the cold build is not cold)",
                kept.display()
            );
            std::fs::create_dir_all(kept).expect("HYBRID_STORE folder");
        }
        let folder = kept.as_deref().unwrap_or(dir.path());
        let url = store::sqlite_url(&folder.join(format!("vectors-{size}.db")));
        let store = store::Store::connect(&url).await.expect("store");

        let cold = SearchIndexes::new(Some(Arc::clone(&embedder)), Some(store.clone()));
        let t = Instant::now();
        let index = cold.index(docs.clone()).await.expect("cold build");
        let cold_ms = t.elapsed().as_secs_f64() * 1e3;
        drop(index);

        // Three warm builds, each a new process's view; the median is reported.
        let mut warm_runs = Vec::new();
        let mut kept = None;
        for _ in 0..3 {
            let warm = SearchIndexes::new(Some(Arc::clone(&embedder)), Some(store.clone()));
            let t = Instant::now();
            let index = warm.index(docs.clone()).await.expect("warm build");
            warm_runs.push(t.elapsed().as_secs_f64() * 1e3);
            kept = Some((warm, index));
        }
        let (warm, index) = kept.expect("three runs");
        warm_runs.sort_by(f64::total_cmp);
        let warm_ms = warm_runs[1];
        // The part of a warm build that reads the vectors, alone: one row per server (what a
        // warm build reads), and one row per tool (what it read before the sets).
        let mut servers: Vec<(String, Vec<String>)> = Vec::new();
        for doc in &docs {
            match servers.last_mut() {
                Some((server, texts)) if *server == doc.server => texts.push(doc.embedding_text()),
                _ => servers.push((doc.server.clone(), vec![doc.embedding_text()])),
            }
        }
        let keys: Vec<String> = servers
            .iter()
            .map(|(_, texts)| search_index::vector_set_key(texts))
            .collect();
        let t = Instant::now();
        let sets = store
            .tool_vector_sets(embedder.model_id(), &keys)
            .await
            .expect("read the sets");
        let sets_ms = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(sets.len(), keys.len(), "every server's set is stored");
        let texts: Vec<String> = docs.iter().map(ToolDoc::embedding_text).collect();
        let reader = SearchIndexes::new(Some(Arc::clone(&embedder)), Some(store.clone()));
        let t = Instant::now();
        let read = reader.vectors(&texts).await.expect("read").expect("model");
        let read_ms = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(read.len(), texts.len());

        let lexical = SearchIndexes::lexical();
        let t = Instant::now();
        let lexical_index = lexical.index(docs.clone()).await.expect("lexical build");
        let lexical_ms = t.elapsed().as_secs_f64() * 1e3;
        drop(lexical_index);

        let mut with_embedding = Vec::with_capacity(queries.len());
        let mut search_only = Vec::with_capacity(queries.len());
        for q in &queries {
            let t = Instant::now();
            let vector = warm.query_vector(q).await.expect("embed").expect("model");
            let embedded = t.elapsed();
            let query = SearchQuery::new(q.clone()).vector(vector);
            let s = Instant::now();
            let hits = index.search(&query).expect("search").hits.len();
            let searched = s.elapsed();
            assert!(hits <= 5);
            with_embedding.push((embedded + searched).as_secs_f64() * 1e3);
            search_only.push(searched.as_secs_f64() * 1e3);
        }
        with_embedding.sort_by(f64::total_cmp);
        search_only.sort_by(f64::total_cmp);
        println!(
            "tools {size}: cold build {cold_ms:.0} ms ({:.1} ms/tool), warm build {warm_ms:.0} ms \
             (median of {warm_runs:.0?}; reading the vectors alone: {sets_ms:.0} ms as one row \
             per server, {read_ms:.0} ms as one row per tool), \
             BM25F-only build {lexical_ms:.0} ms; query with embedding p50 {:.2} ms p99 {:.2} ms; \
             search alone p50 {:.3} ms p99 {:.3} ms; peak RSS {:.1} MiB",
            cold_ms / size as f64,
            percentile(&with_embedding, 0.5),
            percentile(&with_embedding, 0.99),
            percentile(&search_only, 0.5),
            percentile(&search_only, 0.99),
            peak_rss_mib(),
        );
        store.close().await;
    }
}
