//! The retrieval evaluation as tables, and the tuning grid:
//!
//! ```sh
//! export BOTCRAFT_EMBEDDING_MODEL="$(scripts/embedding-model-setup.sh)"
//! cargo run --release -p search-index --example eval -- dev          # every ranking on dev
//! cargo run --release -p search-index --example eval -- dev grid     # tune (dev only)
//! cargo run --release -p search-index --example eval -- dev misses   # what the shipped ranking misses
//! cargo run --release -p search-index --example eval -- dev dump F   # dev's vectors, for ../tool-search/eval/candidates.py
//! cargo run --release -p search-index --example eval -- test         # the held-out figures
//! cargo run --release -p search-index --example eval -- fresh        # the fresh split, once
//! ```
//!
//! Tuning reads dev only; `test` and `fresh` print figures and nothing query by query.

#[path = "../tests/suite/data.rs"]
#[allow(dead_code)]
mod data;

use data::{EvalData, Split, hybrid, index, query_vectors, segments};
use search_index::SearchIndexes;
use tool_search::eval::{Report, evaluate};
use tool_search::{Ranking, Weights};

/// The table's header: success@k is "a right tool in the first k"; recall@5 and nDCG@10
/// count every right tool (and are told apart for the queries with several).
const HEADER: &str = "| ranking | queries | success@1 | success@5 | MRR@10 | recall@5 | nDCG@10 | paraphrase success@5 | task success@5 | several right: recall@5, nDCG@10 |\n|---|---|---|---|---|---|---|---|---|---|";

fn row(label: &str, r: &Report) {
    println!(
        "| {label} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} ({}) | {:.3} ({}) | {:.3}, {:.3} ({}) |",
        r.all.queries,
        r.all.success_at_1,
        r.all.success_at_5,
        r.all.mrr_at_10,
        r.all.recall_at_5,
        r.all.ndcg_at_10,
        r.paraphrase.success_at_5,
        r.paraphrase.queries,
        r.task.success_at_5,
        r.task.queries,
        r.multi.recall_at_5,
        r.multi.ndcg_at_10,
        r.multi.queries,
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = match args.first().map(String::as_str) {
        Some("test") => Split::Test,
        Some("fresh") => Split::Fresh,
        _ => Split::Dev,
    };
    let mode = args.get(1).map(String::as_str).unwrap_or("table");
    let data = EvalData::load();
    let model = test_skip::needs::embedding_model().unwrap_or_else(|why| {
        eprintln!("eval: {why}");
        std::process::exit(2)
    });
    let indexes = hybrid(model).await;
    let queries = &data.queries(split);
    let lexical = segments(&data, split, &SearchIndexes::lexical()).await;
    let hybrid = segments(&data, split, &indexes).await;
    let vectors = query_vectors(queries, &indexes).await;
    let tools: usize = lexical.iter().map(|s| s.len()).sum();
    println!(
        "{split:?}: {} queries over {tools} tools from {} servers; {:?}\n",
        queries.len(),
        lexical.len(),
        indexes.mode()
    );
    let run = |weights: Weights, with_vectors: bool| {
        let segs = if with_vectors { &hybrid } else { &lexical };
        let v = with_vectors.then_some(vectors.as_slice());
        evaluate(&index(segs, weights), queries, v).expect("evaluate")
    };
    match mode {
        "grid" => {
            assert_eq!(split, Split::Dev, "tuning runs on dev only");
            grid(&run);
        }
        "server" => {
            assert_eq!(split, Split::Dev, "tuning runs on dev only");
            println!("{HEADER}");
            for server_dense in [0.0f32, 0.1, 0.2, 0.3, 0.5, 1.0] {
                for dense in [0.6f32, 0.7, 0.8, 1.0] {
                    let ranking = if dense >= 1.0 {
                        Ranking::Dense
                    } else {
                        Ranking::Blend { dense }
                    };
                    let w = Weights {
                        server_dense,
                        ..Weights::default()
                    }
                    .ranking(ranking);
                    row(&format!("server {server_dense} {ranking:?}"), &run(w, true));
                }
            }
        }
        "dump" => {
            assert_eq!(split, Split::Dev, "dumps are made of dev only");
            let path = args.get(2).expect("dump PATH");
            dump(path, &lexical, &hybrid, queries, &vectors, &indexes).await;
        }
        "misses" => {
            assert_eq!(split, Split::Dev, "misses are shown for dev only");
            for miss in run(Weights::default(), true).misses {
                println!(
                    "{:<70} rank {:?}  top {:?}",
                    miss.query, miss.rank, miss.top
                );
            }
        }
        _ => {
            println!("{HEADER}");
            row("shipped (hybrid)", &run(Weights::default(), true));
            row(
                "dense only",
                &run(Weights::default().ranking(Ranking::Dense), true),
            );
            row(
                "BM25F only (name tiers)",
                &run(Weights::default().ranking(Ranking::Lexical), false),
            );
            row("plain BM25", &run(Weights::plain_bm25(), false));
        }
    }
}

/// Dev's tools with the vectors of their parts, and each query's vector and lexical hits,
/// as JSON at `path`: the input of candidate rankings tried outside this binary.
async fn dump(
    path: &str,
    lexical: &[std::sync::Arc<tool_search::Segment>],
    hybrid: &[std::sync::Arc<tool_search::Segment>],
    queries: &[tool_search::eval::EvalQuery],
    vectors: &[Vec<f32>],
    indexes: &SearchIndexes,
) {
    use tool_search::tokenize::split_words;
    let lex = index(lexical, Weights::default().ranking(Ranking::Lexical));
    let shipped = index(hybrid, Weights::default());
    let docs: Vec<tool_search::ToolDoc> = lex.docs().cloned().collect();
    let words = |t: &str| split_words(t).join(" ");
    let mut texts: Vec<String> = Vec::new();
    for d in &docs {
        texts.push(d.embedding_text());
        texts.push(words(&d.name));
        texts.push(d.description.trim().to_owned());
        let params: Vec<String> = d
            .parameters
            .iter()
            .map(|p| format!("{}: {}", words(&p.name), p.description))
            .collect();
        texts.push(params.join("; "));
        texts.push(format!(
            "{}: {}",
            words(&d.server),
            d.server_context.chars().take(400).collect::<String>()
        ));
    }
    let embedded = indexes
        .vectors(&texts)
        .await
        .expect("vectors")
        .expect("model");
    let tools: Vec<serde_json::Value> = docs
        .iter()
        .zip(embedded.chunks(5))
        .map(|(d, v)| {
            serde_json::json!({
                "server": d.server, "name": d.name, "description": d.description,
                "full": v[0], "name_v": v[1], "desc_v": v[2], "params_v": v[3], "server_v": v[4],
                "params": d.parameters.len(),
            })
        })
        .collect();
    let mut out_queries = Vec::new();
    for (q, v) in queries.iter().zip(vectors) {
        let hits = lex
            .search(&tool_search::SearchQuery::new(q.q.clone()).max_results(50))
            .expect("search");
        let relevant: Vec<usize> = docs
            .iter()
            .enumerate()
            .filter(|(_, d)| {
                q.relevant
                    .iter()
                    .any(|r| r.server == d.server && r.tool == d.name)
            })
            .map(|(i, _)| i)
            .collect();
        let ship = shipped
            .search(
                &tool_search::SearchQuery::new(q.q.clone())
                    .max_results(50)
                    .vector(v.clone()),
            )
            .expect("search");
        out_queries.push(serde_json::json!({
            "shipped": ship.hits.iter().map(|h| (h.doc, h.score, h.tier, h.signals.lexical, h.signals.dense)).collect::<Vec<_>>(),
            "q": q.q, "kind": format!("{:?}", q.kind), "relevant": relevant, "vec": v,
            "lex": hits.hits.iter().map(|h| (h.doc, h.score, h.tier)).collect::<Vec<_>>(),
        }));
    }
    let body = serde_json::json!({"tools": tools, "queries": out_queries});
    std::fs::write(path, serde_json::to_vec(&body).expect("json")).expect("write dump");
    println!(
        "dumped {} tools and {} queries to {path}",
        docs.len(),
        queries.len()
    );
}

fn grid(run: &dyn Fn(Weights, bool) -> Report) {
    let score = |r: &Report| r.all.mrr_at_10 + r.all.success_at_5;
    let mut best_lexical = (f64::MIN, Weights::default());
    for name in [1.0, 2.0, 3.0, 4.0] {
        {
            let parameters = Weights::default().parameters;
            for server in [0.5, 1.0, 2.0] {
                for b in [0.5, 0.75] {
                    let w = Weights {
                        name,
                        parameters,
                        server,
                        b,
                        ..Weights::default()
                    }
                    .ranking(Ranking::Lexical);
                    let s = score(&run(w, false));
                    if s > best_lexical.0 {
                        best_lexical = (s, w);
                    }
                }
            }
        }
    }
    println!("best lexical: {:?}", best_lexical.1);
    row("best lexical", &run(best_lexical.1, false));
    let base = best_lexical.1;
    let mut rankings = vec![Ranking::Dense];
    for k in [5.0, 10.0, 20.0, 40.0, 60.0] {
        rankings.push(Ranking::Rrf { k });
    }
    for dense in [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9] {
        rankings.push(Ranking::Blend { dense });
    }
    let mut best = (f64::MIN, base);
    for ranking in rankings {
        for candidates in [10usize, 20, 50] {
            let w = Weights {
                dense_candidates: candidates,
                ..base
            }
            .ranking(ranking);
            let r = run(w, true);
            row(&format!("{ranking:?} c={candidates}"), &r);
            if score(&r) > best.0 {
                best = (score(&r), w);
            }
        }
    }
    println!("\nbest of grid: {:?}", best.1);
    row("grid best", &run(best.1, true));
}
