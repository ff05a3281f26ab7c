//! The retrieval evaluation as a floor: a catalog captured from real MCP
//! servers (`scripts/capture-catalog.sh`) and natural queries with their
//! right tools (`eval/queries.jsonl`). Fails when quality regresses.

use tool_search::eval::{EvalQuery, evaluate};
use tool_search::{ToolDoc, Weights};

pub fn load() -> (Vec<ToolDoc>, Vec<EvalQuery>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/eval");
    let catalog: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(format!("{dir}/catalog.json")).expect("catalog.json"),
    )
    .expect("catalog is JSON");
    let docs = catalog
        .iter()
        .map(|t| ToolDoc::from_mcp(t["server"].as_str().expect("server"), t, ""))
        .collect();
    let queries = std::fs::read_to_string(format!("{dir}/queries.jsonl"))
        .expect("queries.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("query line"))
        .collect();
    (docs, queries)
}

#[test]
fn catalog_and_queries_are_big_enough() {
    let (docs, queries) = load();
    let servers: std::collections::BTreeSet<&str> =
        docs.iter().map(|d| d.server.as_str()).collect();
    assert!(servers.len() >= 8, "servers: {servers:?}");
    assert!(queries.len() >= 150, "{} queries", queries.len());
}

#[test]
fn ranking_beats_the_plain_bm25_baseline_and_holds_its_floor() {
    let (docs, queries) = load();
    let (ours, misses) = evaluate(&docs, &queries, Weights::default()).expect("evaluate");
    let (baseline, _) = evaluate(&docs, &queries, Weights::plain_bm25()).expect("baseline");
    eprintln!("ours {ours:?}\nbaseline {baseline:?}\nmissed at 1: {misses:#?}");
    assert!(ours.recall_at_1 >= 0.72, "recall@1 {:.3}", ours.recall_at_1);
    assert!(ours.recall_at_5 >= 0.92, "recall@5 {:.3}", ours.recall_at_5);
    assert!(ours.mrr >= 0.80, "MRR {:.3}", ours.mrr);
    assert!(
        ours.mrr > baseline.mrr,
        "ours {ours:?} vs baseline {baseline:?}"
    );
    assert!(ours.recall_at_1 > baseline.recall_at_1);
    assert!(ours.recall_at_5 > baseline.recall_at_5);
}
