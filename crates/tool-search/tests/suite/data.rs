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
    let split: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("split.json")).expect("split.json"),
    )
    .expect("JSON");
    split["test_only_servers"]
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
}

#[test]
fn queries_are_well_formed_and_dev_never_sees_a_test_only_server() {
    let docs: Vec<ToolDoc> = servers().iter().flat_map(ServerCapture::docs).collect();
    let test_only = test_only();
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
