//! `find`: fuzzy, ranked, with the kind of each hit.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{fixture_repo, server_over};

#[tokio::test]
async fn find_ranks_typos_and_partial_words() {
    let repo = fixture_repo();
    let server = server_over(&repo.root).await;
    // (query, the first result line without its score)
    let cases = [
        (
            "taxonomy",
            "1. [project] Taxonomy (Forge/Projects/Taxonomy)",
        ),
        ("taxnomy", "1. [project] Taxonomy (Forge/Projects/Taxonomy)"),
        ("Taxo", "1. [project] Taxonomy (Forge/Projects/Taxonomy)"),
        ("markting", "1. [department] Marketing (Marketing)"),
        ("forge", "1. [department] Forge (Forge)"),
        (
            "brand refresh",
            "1. [project] BrandRefresh (Marketing/Projects/BrandRefresh)",
        ),
        (
            "brandrefesh",
            "1. [project] BrandRefresh (Marketing/Projects/BrandRefresh)",
        ),
        ("pdf", "1. [skill] pdf-tools (Forge/Skills/pdf-tools)"),
        (
            "tables pdf",
            "1. [skill] pdf-tools (Forge/Skills/pdf-tools)",
        ),
        (
            "tagging",
            "1. [skill] taxonomy-tagging (Forge/Skills/taxonomy-tagging)",
        ),
        ("websit", "1. [project] Website (Forge/Projects/Website)"),
    ];
    let mut actual = Vec::new();
    for (query, _) in cases {
        let outcome = server
            .call("find", json!({"query": query}))
            .await
            .expect("call");
        assert!(!outcome.is_error, "{query}: {}", outcome.text);
        let first = outcome
            .text
            .lines()
            .nth(2)
            .and_then(|line| line.rsplit_once(" score "))
            .map(|(hit, _)| hit.to_owned())
            .unwrap_or_else(|| outcome.text.clone());
        actual.push((query, first));
    }
    let expected: Vec<(&str, String)> = cases
        .iter()
        .map(|(query, line)| (*query, line.to_string()))
        .collect();
    assert_eq!(actual, expected);
    server.close().await.expect("close");
}

#[tokio::test]
async fn find_skips_hidden_and_build_folders() {
    let repo = fixture_repo();
    let server = server_over(&repo.root).await;
    for query in ["trash", "obsidian", "dist", "node modules", "old skill"] {
        let outcome = server
            .call("find", json!({"query": query}))
            .await
            .expect("call");
        assert!(
            outcome.text.starts_with("No matches for"),
            "{query}: {}",
            outcome.text
        );
    }
    server.close().await.expect("close");
}
