//! Print the retrieval evaluation as a markdown table, and a small grid search
//! over field weights: `cargo run --release -p tool-search --example eval [grid]`.

use tool_search::ToolDoc;
use tool_search::Weights;
use tool_search::eval::{EvalQuery, Metrics, evaluate};

fn load() -> (Vec<ToolDoc>, Vec<EvalQuery>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/eval");
    let text = std::fs::read_to_string(format!("{dir}/catalog.json")).expect("catalog.json");
    let catalog: Vec<serde_json::Value> = serde_json::from_str(&text).expect("catalog JSON");
    let docs = catalog
        .iter()
        .map(|t| ToolDoc::from_mcp(t["server"].as_str().unwrap_or_default(), t, ""))
        .collect();
    let queries = std::fs::read_to_string(format!("{dir}/queries.jsonl"))
        .expect("queries.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("query line"))
        .collect();
    (docs, queries)
}

fn row(label: &str, m: &Metrics) {
    println!(
        "| {label} | {} | {:.3} | {:.3} | {:.3} |",
        m.queries, m.recall_at_1, m.recall_at_5, m.mrr
    );
}

fn main() {
    let (docs, queries) = load();
    let servers: std::collections::BTreeSet<&str> =
        docs.iter().map(|d| d.server.as_str()).collect();
    println!(
        "catalog: {} tools from {} servers; {} queries\n",
        docs.len(),
        servers.len(),
        queries.len()
    );
    println!("| ranking | queries | recall@1 | recall@5 | MRR |\n|---|---|---|---|---|");
    let (ours, misses) = evaluate(&docs, &queries, Weights::default()).expect("evaluate");
    let (base, _) = evaluate(&docs, &queries, Weights::plain_bm25()).expect("evaluate");
    row("BotCraft tool_search (default weights)", &ours);
    row("plain BM25 (name + description, no name tiers)", &base);
    if std::env::args().nth(1).as_deref() == Some("grid") {
        let mut best: Option<(f64, Weights)> = None;
        for name in [1.0, 2.0, 3.0, 4.0] {
            for parameters in [0.0, 0.25, 0.5, 1.0] {
                for server in [0.5, 1.0, 1.5, 2.0] {
                    for b in [0.5, 0.75, 0.9] {
                        let w = Weights {
                            name,
                            parameters,
                            server,
                            b,
                            ..Weights::default()
                        };
                        let (m, _) = evaluate(&docs, &queries, w).expect("evaluate");
                        let key = m.mrr + m.recall_at_1;
                        if best.as_ref().is_none_or(|(k, _)| key > *k) {
                            best = Some((key, w));
                        }
                    }
                }
            }
        }
        if let Some((_, w)) = best {
            let (m, _) = evaluate(&docs, &queries, w).expect("evaluate");
            println!("\nbest of grid: {w:?}");
            row("grid best", &m);
        }
    }
    eprintln!("missed at rank 1: {misses:#?}");
}
