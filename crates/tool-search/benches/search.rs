//! Index build and query latency at 100, 1,000 and 10,000 tools, and the
//! hybrid search (BM25F + dense, one segment per server, as `search-index`
//! builds it) at 1,000, 10,000 and 100,000 tools. The hybrid catalogs carry
//! pseudo-random unit vectors of 384 dimensions (MiniLM's): the cost of a
//! search does not depend on what the vectors say, and a real 100,000-tool
//! catalog would take most of an hour to embed. The query's own embedding
//! is measured apart (`cargo bench -p embedding --bench query`).

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use tool_search::{SearchQuery, Segment, ToolDoc, ToolIndex, Weights};

const DIMENSIONS: usize = 384;

const VERBS: &[&str] = &[
    "read", "write", "list", "search", "create", "delete", "update", "get", "send", "fetch",
    "navigate", "click", "query", "index", "move", "copy",
];
const NOUNS: &[&str] = &[
    "file",
    "directory",
    "issue",
    "page",
    "message",
    "record",
    "screenshot",
    "commit",
    "branch",
    "table",
    "user",
    "event",
    "document",
    "image",
    "note",
    "task",
];

fn catalog(size: usize) -> Vec<ToolDoc> {
    (0..size)
        .map(|i| {
            let verb = VERBS[i % VERBS.len()];
            let noun = NOUNS[(i / VERBS.len()) % NOUNS.len()];
            let server = format!("server-{}", i % 97);
            let tool = json!({
                "name": format!("{verb}_{noun}_{i}"),
                "description": format!("{verb} a {noun} in the {server} system; returns the {noun} as text with metadata number {i}"),
                "inputSchema": {"type": "object", "properties": {
                    "id": {"type": "string", "description": format!("the {noun} identifier")},
                    "limit": {"type": "number", "description": "maximum results"}
                }, "required": ["id"]}
            });
            ToolDoc::from_mcp(&server, &tool, "")
        })
        .collect()
}

/// Unit vectors from a fixed xorshift sequence.
fn unit_vectors(count: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed.max(1);
    (0..count)
        .map(|_| {
            let mut v: Vec<f32> = (0..DIMENSIONS)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                })
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            v
        })
        .collect()
}

/// The catalog cut into one segment per server, each with vectors.
fn hybrid_index(size: usize) -> ToolIndex {
    let mut by_server: std::collections::BTreeMap<String, Vec<ToolDoc>> = Default::default();
    for doc in catalog(size) {
        by_server.entry(doc.server.clone()).or_default().push(doc);
    }
    let segments = by_server
        .into_values()
        .enumerate()
        .map(|(i, docs)| {
            let vectors = unit_vectors(docs.len(), 1 + i as u64);
            Arc::new(
                Segment::build(docs)
                    .with_vectors(vectors)
                    .expect("vectors fit"),
            )
        })
        .collect();
    ToolIndex::from_segments(segments, Weights::default())
}

/// The captured real tools, repeated under numbered server names until there are `size`,
/// grouped by server (what `search-index` builds one segment from).
fn real_servers(size: usize) -> Vec<Vec<ToolDoc>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/servers");
    let captures = tool_search::eval::load_captures(&dir).expect("eval/servers");
    let mut servers = Vec::new();
    let (mut total, mut copy) = (0, 0);
    while total < size {
        for capture in &captures {
            let mut docs: Vec<ToolDoc> = capture.docs();
            docs.truncate(size - total);
            if docs.is_empty() {
                break;
            }
            for doc in &mut docs {
                doc.server = format!("{}-{copy}", capture.server);
            }
            total += docs.len();
            servers.push(docs);
        }
        copy += 1;
    }
    servers
}

fn bench_real_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("tool_search_real");
    group.sample_size(10);
    let servers = real_servers(10_000);
    group.bench_function("build_segments/10000", |b| {
        b.iter(|| {
            Segment::build_all(servers.clone())
                .iter()
                .map(Segment::len)
                .sum::<usize>()
        })
    });
    // The hybrid search alone over the real tools (at 100,000 the 726 repeated under
    // numbered servers, as `search-index`'s hybrid bench does), with synthetic vectors, for
    // the dev split's first 50 queries in turn (speed only: nothing is ranked against them).
    let dev = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/dev.jsonl");
    let queries: Vec<SearchQuery> =
        tool_search::eval::parse_queries(&std::fs::read_to_string(dev).expect("dev.jsonl"))
            .expect("queries")
            .into_iter()
            .take(50)
            .zip(unit_vectors(50, 999))
            .map(|(q, vector)| SearchQuery::new(q.q).max_results(5).vector(vector))
            .collect();
    for size in [10_000, 100_000] {
        let servers = if size == 10_000 {
            servers.clone()
        } else {
            real_servers(size)
        };
        let segments: Vec<Arc<Segment>> = Segment::build_all(servers)
            .into_iter()
            .enumerate()
            .map(|(i, segment)| {
                let vectors = unit_vectors(segment.len(), 100 + i as u64);
                Arc::new(segment.with_vectors(vectors).expect("vectors fit"))
            })
            .collect();
        // Making the index over built segments: at 20,000 tools and more that includes the
        // directory of its words.
        group.bench_function(format!("from_segments/{size}"), |b| {
            b.iter(|| ToolIndex::from_segments(segments.clone(), Weights::default()).len())
        });
        let index = ToolIndex::from_segments(segments, Weights::default());
        println!(
            "hybrid index of {size} real tools: {:.1} MiB on the heap ({:.1} MiB of it vectors)",
            index.heap_bytes() as f64 / (1 << 20) as f64,
            (size * 384 * 5 + size * 8) as f64 / (1 << 20) as f64
        );
        let mut next = 0;
        group.bench_function(format!("query/{size}"), |b| {
            b.iter(|| {
                next = (next + 1) % queries.len();
                index.search(&queries[next]).map(|r| r.hits.len())
            })
        });
    }
    group.finish();
}

fn bench_hybrid(c: &mut Criterion) {
    let mut group = c.benchmark_group("tool_search_hybrid");
    let vector = unit_vectors(1, 4242).remove(0);
    for size in [1_000usize, 10_000, 100_000] {
        let index = hybrid_index(size);
        println!(
            "hybrid index of {size} synthetic tools: {:.1} MiB on the heap",
            index.heap_bytes() as f64 / (1 << 20) as f64
        );
        let query = SearchQuery::new("take a screenshot of the page")
            .max_results(5)
            .vector(vector.clone());
        group.bench_with_input(BenchmarkId::new("query", size), &index, |b, index| {
            b.iter(|| index.search(&query).map(|r| r.hits.len()))
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("tool_search");
    for size in [100usize, 1_000, 10_000] {
        let docs = catalog(size);
        group.bench_with_input(BenchmarkId::new("build", size), &docs, |b, docs| {
            b.iter(|| ToolIndex::build(docs.clone()))
        });
        let index = ToolIndex::build(docs);
        let query = SearchQuery::new("take a screenshot of the page").max_results(5);
        group.bench_with_input(BenchmarkId::new("query", size), &index, |b, index| {
            b.iter(|| index.search(&query).map(|r| r.hits.len()))
        });
        let exact = SearchQuery::new("navigate_page_42");
        group.bench_with_input(
            BenchmarkId::new("query_exact_name", size),
            &index,
            |b, index| b.iter(|| index.search(&exact).map(|r| r.hits.len())),
        );
    }
    group.finish();
}

criterion_group!(benches, bench, bench_hybrid, bench_real_build);
criterion_main!(benches);
