//! Index build and query latency at 100, 1,000 and 10,000 tools.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use tool_search::{SearchQuery, ToolDoc, ToolIndex};

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

criterion_group!(benches, bench);
criterion_main!(benches);
