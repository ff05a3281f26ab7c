//! Lexical segment build over the captured catalog, repeated to N tools
//! (`cargo run --release -p tool-search --example build_profile -- 10000`): a
//! profiling aid for the build path.
use std::time::Instant;

use tool_search::eval::ServerCapture;
use tool_search::{Segment, ToolDoc};

fn main() {
    let size: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/eval/servers");
    let base: Vec<ToolDoc> = tool_search::eval::load_captures(std::path::Path::new(dir))
        .expect("eval/servers")
        .iter()
        .flat_map(ServerCapture::docs)
        .collect();
    let docs: Vec<ToolDoc> = (0..size)
        .map(|i| {
            let mut doc = base[i % base.len()].clone();
            doc.server = format!("{}-{}", doc.server, i / base.len());
            doc
        })
        .collect();
    for _ in 0..3 {
        let t = Instant::now();
        let segment = Segment::build(docs.clone());
        println!(
            "{} tools: {:.0} ms",
            segment.len(),
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    // Searches with 384-dimension pseudo-random vectors, to profile the query path.
    let vector = |seed: usize| -> Vec<f32> {
        (0..384)
            .map(|i| (((seed * 7919 + i * 104_729) % 1000) as f32 / 500.0) - 1.0)
            .collect()
    };
    let mut by_server: std::collections::BTreeMap<String, Vec<ToolDoc>> = Default::default();
    for doc in docs {
        by_server.entry(doc.server.clone()).or_default().push(doc);
    }
    let mut n = 0;
    let segments: Vec<_> = by_server
        .into_values()
        .map(|docs| {
            let vectors: Vec<Vec<f32>> = (n..n + docs.len()).map(vector).collect();
            n += docs.len();
            std::sync::Arc::new(Segment::build(docs).with_vectors(vectors).expect("vectors"))
        })
        .collect();
    println!("{} segments", segments.len());
    let index = tool_search::ToolIndex::from_segments(segments, tool_search::Weights::default());
    let t = Instant::now();
    for i in 0..200 {
        let query = tool_search::SearchQuery::new("take a screenshot of the current page")
            .vector(vector(i + 1_000_000));
        index.search(&query).expect("search");
    }
    println!(
        "search: {:.3} ms each",
        t.elapsed().as_secs_f64() * 1e3 / 200.0
    );
}
