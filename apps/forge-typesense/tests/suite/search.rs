//! Searching the real Typesense, with the fixture repository indexed by
//! `forge-typesense index`: results, filters (and that a filter value cannot
//! add a clause), snippets, scores above 2^53, `get_file_summary`, and the
//! HTTP errors a real server gives.

use std::collections::BTreeSet;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::StdioServer;

use super::real_typesense::{SEARCH_COLLECTION, shared};
use super::{server_with, stderr_line_with};

async fn search_server() -> StdioServer {
    let typesense = shared();
    server_with(&[
        ("TYPESENSE_URL", &typesense.url),
        ("TYPESENSE_SEARCH_KEY", &typesense.search_key),
        ("TYPESENSE_COLLECTION", SEARCH_COLLECTION),
    ])
    .await
}

fn paths(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("Path: "))
        .map(str::to_owned)
        .collect()
}

fn scores(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("Score: "))
        .map(|score| score.parse().expect("an integer score"))
        .collect()
}

#[tokio::test]
async fn search_answers_in_the_seed_format_with_snippets_and_big_scores() {
    test_skip::need!(test_skip::needs::typesense());
    let server = search_server().await;
    let outcome = server
        .call("search_knowledge", json!({"query": "taxonomy", "limit": 3}))
        .await
        .expect("call");
    assert!(!outcome.is_error, "{}", outcome.text);
    let scores = scores(&outcome.text);
    assert_eq!(scores.len(), 3, "{}", outcome.text);
    assert!(
        scores.iter().all(|score| *score > 1 << 53),
        "text_match above 2^53 kept exact: {scores:?}"
    );
    assert!(
        scores.windows(2).all(|pair| pair[0] >= pair[1]),
        "ranked: {scores:?}"
    );
    let redacted = regex_free_redact(&outcome.text);
    insta::assert_snapshot!("real_search_taxonomy", redacted);
    server.close().await.expect("close");
}

/// Replace each `Score: N` with `Score: [text_match]`: scores depend on
/// Typesense's ranking internals; their size is asserted separately.
fn regex_free_redact(text: &str) -> String {
    text.lines()
        .map(|line| match line.split_once("Score: ") {
            Some((indent, _)) => format!("{indent}Score: [text_match]"),
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn filters_narrow_the_results_and_values_cannot_add_clauses() {
    test_skip::need!(test_skip::needs::typesense());
    let server = search_server().await;
    let roadmap = "Forge/Projects/Taxonomy/notes/roadmap.md";
    let taxonomy = "Forge/Projects/Taxonomy/README.md";
    let brief = "Marketing/Projects/Launch/brief.md";
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"query": "taxonomy"}), vec![brief, roadmap, taxonomy]),
        (
            json!({"query": "taxonomy", "department": "Forge"}),
            vec![roadmap, taxonomy],
        ),
        (
            json!({"query": "taxonomy", "visibility": "private"}),
            vec![roadmap],
        ),
        (
            json!({"query": "taxonomy", "project": "Taxonomy", "status": "draft"}),
            vec![roadmap],
        ),
        (json!({"query": "taxonomy", "owner": "bo"}), vec![brief]),
        (json!({"query": "taxonomy", "type": "brief"}), vec![brief]),
        (
            json!({"query": "*", "source": "website"}),
            vec!["Website/pricing.md"],
        ),
        (
            json!({"query": "pdf", "type": "skill"}),
            vec!["Forge/Skills/pdf-tools/SKILL.md"],
        ),
        // Unquoted, this would be `department:=Forge && visibility:=private`
        // and find the private roadmap; quoted it is one department name.
        (
            json!({"query": "taxonomy", "department": "Forge && visibility:=private"}),
            vec![],
        ),
        (
            json!({"query": "taxonomy", "department": "Forge || visibility:=private"}),
            vec![],
        ),
        (
            json!({"query": "taxonomy", "department": "[Forge,Marketing]"}),
            vec![],
        ),
        (
            json!({"query": "taxonomy", "visibility": "public", "department": ""}),
            vec![brief, taxonomy],
        ),
    ];
    for (arguments, expected) in cases {
        let mut arguments = arguments;
        arguments["limit"] = json!(50);
        let outcome = server
            .call("search_knowledge", arguments.clone())
            .await
            .expect("call");
        assert!(!outcome.is_error, "{arguments}: {}", outcome.text);
        let expected: BTreeSet<String> = expected.iter().map(|p| p.to_string()).collect();
        assert_eq!(paths(&outcome.text), expected, "for {arguments}");
        if expected.is_empty() {
            assert_eq!(outcome.text, "Found 0 result(s). Showing top 0:");
        }
    }
    server.close().await.expect("close");
}

#[tokio::test]
async fn limit_caps_the_hits_but_not_found() {
    test_skip::need!(test_skip::needs::typesense());
    let server = search_server().await;
    let outcome = server
        .call("search_knowledge", json!({"query": "taxonomy", "limit": 1}))
        .await
        .expect("call");
    assert!(
        outcome
            .text
            .starts_with("Found 3 result(s). Showing top 1:\n\n1. "),
        "{}",
        outcome.text
    );
    assert_eq!(outcome.text.matches("   Path: ").count(), 1);
    server.close().await.expect("close");
}

#[tokio::test]
async fn file_summaries_come_from_the_index() {
    test_skip::need!(test_skip::needs::typesense());
    let server = search_server().await;
    let cases = [
        (
            "Forge/Projects/Taxonomy/README.md",
            "Title: Taxonomy project\nPath: Forge/Projects/Taxonomy/README.md\nSummary: Classify every document by department, project and type.",
        ),
        (
            "./README.md",
            "Title: uvilo-os\nPath: README.md\nSummary: The company's operating system: departments, their projects and the skills everyone shares.",
        ),
        (
            "Marketing/headings-only.md",
            "Title: Headings only\nPath: Marketing/headings-only.md\nSummary: none stored. Re-index the repository with `forge-typesense index` to store one (it comes from the file's `summary:` frontmatter or its first paragraph).",
        ),
    ];
    for (path, expected) in cases {
        let outcome = server
            .call("get_file_summary", json!({"path": path}))
            .await
            .expect("call");
        assert_eq!(
            (outcome.is_error, outcome.text.as_str()),
            (false, expected),
            "{path}"
        );
    }
    let missing = server
        .call("get_file_summary", json!({"path": "Forge/README"}))
        .await
        .expect("call");
    let expected = "No document with path \"Forge/README\" in the Typesense collection \"knowledge\". Paths are relative to the repository root (e.g. Forge/README.md). If the file is new, re-index with `forge-typesense index`.";
    assert_eq!((missing.is_error, missing.text.as_str()), (true, expected));
    let line = stderr_line_with(&server, "reason=").await;
    assert_eq!(
        line,
        format!("forge-typesense: reason=stdio.tool_error tool=get_file_summary {expected}")
    );
    server.close().await.expect("close");
}

#[tokio::test]
async fn a_wrong_key_and_a_missing_collection_are_http_errors() {
    test_skip::need!(test_skip::needs::typesense());
    let typesense = shared();
    let wrong_key = "not-the-key-5c1e";
    let cases = [
        (
            vec![
                ("TYPESENSE_URL", typesense.url.as_str()),
                ("TYPESENSE_SEARCH_KEY", wrong_key),
            ],
            "Typesense HTTP 401: {\"message\": \"Forbidden - a valid `x-typesense-api-key` header must be sent.\"}".to_owned(),
        ),
        (
            vec![
                ("TYPESENSE_URL", typesense.url.as_str()),
                ("TYPESENSE_SEARCH_KEY", typesense.search_key.as_str()),
                ("TYPESENSE_COLLECTION", "no_such_collection"),
            ],
            "Typesense could not run the search on collection \"no_such_collection\": Not found. (code 404). Does the collection exist? Create and fill it with `forge-typesense index` (TYPESENSE_COLLECTION is \"no_such_collection\").".to_owned(),
        ),
    ];
    for (vars, expected) in cases {
        let server = server_with(&vars).await;
        let outcome = server
            .call("search_knowledge", json!({"query": "taxonomy"}))
            .await
            .expect("call");
        assert_eq!(
            (outcome.is_error, outcome.text.as_str()),
            (true, expected.as_str())
        );
        let line = stderr_line_with(&server, "reason=").await;
        assert_eq!(
            line,
            format!(
                "forge-typesense: reason=stdio.upstream_http_error tool=search_knowledge {expected}"
            )
        );
        for line in server.stderr_lines() {
            assert!(!line.contains(wrong_key) && !line.contains(&typesense.search_key));
        }
        server.close().await.expect("close");
    }
}
