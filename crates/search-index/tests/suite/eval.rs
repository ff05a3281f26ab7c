//! The retrieval evaluation as a floor, on the held-out test split
//! (`crates/tool-search/eval/test.jsonl`, frozen at commit 96cf5aa before any
//! tuning). The floors are the figures measured on that split when the
//! ranking was chosen on dev, less a stated margin, set once: 0.03 for
//! recall@1 and MRR@10, 0.03 for recall@5, 0.04 for paraphrase recall@5.
//! A regression below them fails the suite; tuning never reads this split.

use tool_search::eval::evaluate;
use tool_search::{Ranking, Weights};

use super::data::{EvalData, Split, hybrid, index, query_vectors, segments};

/// Measured on test at the shipped defaults: 0.592, 0.783, 0.675, 0.458 (131 queries).
const RECALL_AT_1: f64 = 0.56;
const RECALL_AT_5: f64 = 0.75;
const MRR_AT_10: f64 = 0.64;
const PARAPHRASE_RECALL_AT_5: f64 = 0.42;

#[tokio::test]
async fn hybrid_ranking_holds_its_floor_on_the_test_split_and_beats_bm25() {
    let data = EvalData::load();
    let queries = data.queries(Split::Test);
    let indexes = hybrid(test_skip::need!(test_skip::needs::embedding_model())).await;
    let hybrid_segments = segments(&data, Split::Test, &indexes).await;
    let vectors = query_vectors(&queries, &indexes).await;
    let shipped = evaluate(
        &index(&hybrid_segments, Weights::default()),
        &queries,
        Some(&vectors),
    )
    .expect("evaluate");
    let lexical = segments(&data, Split::Test, &search_index::SearchIndexes::lexical()).await;
    let plain =
        evaluate(&index(&lexical, Weights::plain_bm25()), &queries, None).expect("evaluate");
    let bm25f = evaluate(
        &index(&lexical, Weights::default().ranking(Ranking::Lexical)),
        &queries,
        None,
    )
    .expect("evaluate");
    eprintln!(
        "test split, {} queries:\n  shipped {:?}\n  paraphrase {:?}\n  BM25F {:?}\n  plain BM25 {:?}",
        queries.len(),
        shipped.all,
        shipped.paraphrase,
        bm25f.all,
        plain.all
    );
    assert!(queries.len() >= 300);
    assert!(shipped.all.success_at_1 >= RECALL_AT_1, "{:?}", shipped.all);
    assert!(shipped.all.success_at_5 >= RECALL_AT_5, "{:?}", shipped.all);
    assert!(shipped.all.mrr_at_10 >= MRR_AT_10, "{:?}", shipped.all);
    assert!(
        shipped.paraphrase.success_at_5 >= PARAPHRASE_RECALL_AT_5,
        "{:?}",
        shipped.paraphrase
    );
    for baseline in [&plain.all, &bm25f.all] {
        assert!(shipped.all.success_at_1 > baseline.success_at_1);
        assert!(shipped.all.success_at_5 > baseline.success_at_5);
        assert!(shipped.all.mrr_at_10 > baseline.mrr_at_10);
    }
}

#[tokio::test]
async fn a_query_naming_a_tool_still_puts_it_first() {
    let data = EvalData::load();
    let indexes = hybrid(test_skip::need!(test_skip::needs::embedding_model())).await;
    let segments = segments(&data, Split::Test, &indexes).await;
    let index = index(&segments, Weights::default());
    for (query, server, tool) in [
        (
            "browser_take_screenshot",
            "playwright",
            "browser_take_screenshot",
        ),
        ("read_text_file", "filesystem", "read_text_file"),
        ("then call git_status on the repo", "git", "git_status"),
    ] {
        let vector = indexes
            .query_vector(query)
            .await
            .expect("embed")
            .expect("model");
        let hits = index
            .search(&tool_search::SearchQuery::new(query).vector(vector))
            .expect("search")
            .hits;
        let first = index.doc(hits[0].doc);
        assert_eq!(hits[0].tier, 2, "{query}");
        assert_eq!(first.name, tool, "{query}");
        assert!(
            hits.iter()
                .take_while(|h| h.tier == 2)
                .any(|h| index.doc(h.doc).server == server),
            "{query}"
        );
    }
}
