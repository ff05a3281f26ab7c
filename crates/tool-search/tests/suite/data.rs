//! The evaluation data itself (`eval/`), checked without ranking anything:
//! big enough, split as `split.json` says, and every query well formed.

use std::collections::BTreeSet;

use tool_search::ToolDoc;
use tool_search::eval::{QueryKind, ServerCapture, parse_queries, shares_no_word};

fn dir() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/eval"))
}

fn servers() -> Vec<ServerCapture> {
    tool_search::eval::load_captures(&dir().join("servers")).unwrap_or_else(|e| panic!("{e}"))
}

fn test_only() -> BTreeSet<String> {
    split_list("test_only_servers")
}

/// Servers captured after dev, test and the ranker (only `fresh.jsonl` is about them).
fn fresh() -> BTreeSet<String> {
    split_list("fresh_servers")
}

fn split_list(key: &str) -> BTreeSet<String> {
    let split: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("split.json")).expect("split.json"),
    )
    .expect("JSON");
    split[key]
        .as_array()
        .expect("list")
        .iter()
        .map(|s| s.as_str().expect("name").to_owned())
        .collect()
}

#[test]
fn the_catalog_is_real_and_big_enough() {
    let servers = servers();
    let tools: usize = servers.iter().map(|s| s.tools.len()).sum();
    assert!(servers.len() >= 30, "{} servers", servers.len());
    assert!(tools >= 400, "{tools} tools");
    for server in &servers {
        assert!(!server.package.name.is_empty() && !server.package.version.is_empty());
        let names: BTreeSet<&str> = server
            .tools
            .iter()
            .map(|t| t["name"].as_str().expect("name"))
            .collect();
        assert_eq!(
            names.len(),
            server.tools.len(),
            "{}: duplicate names",
            server.server
        );
    }
    let known: BTreeSet<String> = servers.iter().map(|s| s.server.clone()).collect();
    assert!(test_only().is_subset(&known));
    assert!(fresh().len() >= 20 && fresh().is_subset(&known));
    assert!(test_only().is_disjoint(&fresh()));
}

#[test]
fn queries_are_well_formed_and_dev_never_sees_a_test_only_server() {
    let docs: Vec<ToolDoc> = servers().iter().flat_map(ServerCapture::docs).collect();
    let test_only = test_only();
    let fresh = fresh();
    for (file, is_dev) in [("dev.jsonl", true), ("test.jsonl", false)] {
        let text = std::fs::read_to_string(dir().join(file)).expect(file);
        let queries = parse_queries(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(queries.len() >= 300, "{file}: {}", queries.len());
        for q in &queries {
            let relevant: Vec<&ToolDoc> = q
                .relevant
                .iter()
                .map(|r| {
                    docs.iter()
                        .find(|d| d.server == r.server && d.name == r.tool)
                        .unwrap_or_else(|| panic!("{file}: {:?}: no {r:?}", q.q))
                })
                .collect();
            assert!(
                q.relevant.iter().all(|r| !fresh.contains(&r.server)),
                "{file}: {:?} names a fresh server",
                q.q
            );
            if is_dev {
                assert!(
                    q.relevant.iter().all(|r| !test_only.contains(&r.server)),
                    "{file}: {:?} names a test-only server",
                    q.q
                );
            }
            match q.kind {
                QueryKind::Paraphrase => {
                    assert!(shares_no_word(&q.q, &relevant), "{file}: {:?}", q.q)
                }
                QueryKind::Task => assert!(q.relevant.len() >= 2, "{file}: {:?}", q.q),
                QueryKind::Direct => {}
            }
        }
    }
}

/// The fresh split: about the fresh servers, every relevant tool real.
#[test]
fn fresh_queries_are_about_the_fresh_servers() {
    let docs: Vec<ToolDoc> = servers().iter().flat_map(ServerCapture::docs).collect();
    let fresh = fresh();
    let text = std::fs::read_to_string(dir().join("fresh.jsonl")).expect("fresh.jsonl");
    let queries = parse_queries(&text).unwrap_or_else(|e| panic!("fresh.jsonl: {e}"));
    assert!(queries.len() >= 200, "{}", queries.len());
    for q in &queries {
        for r in &q.relevant {
            assert!(
                docs.iter()
                    .any(|d| d.server == r.server && d.name == r.tool),
                "{:?}: no {r:?}",
                q.q
            );
        }
        assert!(
            q.relevant.iter().any(|r| fresh.contains(&r.server)),
            "{:?} is about no fresh server",
            q.q
        );
    }
}

/// Lower-case words (runs of letters and digits).
fn words(query: &str) -> BTreeSet<String> {
    query
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

#[test]
fn no_dev_query_copies_a_held_out_one() {
    let read = |file: &str| {
        parse_queries(&std::fs::read_to_string(dir().join(file)).expect(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    let held_out: Vec<BTreeSet<String>> = read("test.jsonl")
        .iter()
        .chain(&read("fresh.jsonl"))
        .map(|q| words(&q.q))
        .collect();
    let copies: Vec<String> = read("dev.jsonl")
        .into_iter()
        .filter(|q| {
            let mine = words(&q.q);
            held_out.iter().any(|other| jaccard(&mine, other) >= 0.8)
        })
        .map(|q| q.q)
        .collect();
    assert_eq!(copies, Vec::<String>::new());
    assert_eq!(
        jaccard(&words("open a new tab"), &words("Open a NEW tab!")),
        1.0
    );
}
