//! The ranking's unit tests.

use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn doc(server: &str, name: &str, description: &str) -> ToolDoc {
    ToolDoc::from_mcp(
        server,
        &json!({"name": name, "description": description}),
        "",
    )
}

fn catalog() -> ToolIndex {
    ToolIndex::build(vec![
        doc(
            "forge-bash",
            "run",
            "Run a bash command with pipes and chains",
        ),
        doc(
            "forge-filesystem",
            "read_text_file",
            "Read the contents of a text file",
        ),
        doc(
            "forge-filesystem",
            "write_file",
            "Create or overwrite a file",
        ),
        doc(
            "forge-filesystem",
            "list_directory",
            "List files and folders",
        ),
        doc(
            "playwright",
            "browser_navigate",
            "Navigate the browser to a URL",
        ),
        doc(
            "playwright",
            "browser_take_screenshot",
            "Take a screenshot of the page",
        ),
    ])
}

fn names(index: &ToolIndex, query: &SearchQuery) -> Vec<String> {
    index
        .search(query)
        .expect("search")
        .hits
        .iter()
        .map(|h| index.doc(h.doc).name.clone())
        .collect()
}

#[test]
fn seed_checks() {
    let index = catalog();
    let found = names(&index, &SearchQuery::new("filesystem").max_results(10));
    assert_eq!(found, ["list_directory", "read_text_file", "write_file"]);
    let bash = names(&index, &SearchQuery::new("bash").servers(["forge-bash"]));
    assert_eq!(bash, ["run"]);
}

#[test]
fn exact_names_rank_first_in_any_style() {
    let index = catalog();
    for query in [
        "read_text_file",
        "readTextFile",
        "READ-TEXT-FILE",
        "forge-filesystem__read_text_file",
    ] {
        let found = names(&index, &SearchQuery::new(query));
        assert_eq!(
            found.first().map(String::as_str),
            Some("read_text_file"),
            "{query}"
        );
    }
    let found = names(
        &index,
        &SearchQuery::new("then call browser_take_screenshot please"),
    );
    assert_eq!(
        found.first().map(String::as_str),
        Some("browser_take_screenshot")
    );
    let typo = names(&index, &SearchQuery::new("browser_navigat"));
    assert_eq!(typo.first().map(String::as_str), Some("browser_navigate"));
}

/// A server naming its tool after another server's qualified name (`aa`'s
/// `forge-filesystem__read_text_file`, described in the query's own words), or
/// itself after that server (`forge_filesystem`), does not take the first place
/// for that qualified name: the tool it names does.
#[test]
fn a_qualified_name_outranks_a_tool_named_after_it() {
    let index = ToolIndex::build(vec![
        ToolDoc::from_mcp(
            "forge-filesystem",
            &json!({"name": "read_text_file", "description": "Read the complete contents of a file as text."}),
            "",
        ),
        ToolDoc::from_mcp(
            "aa",
            &json!({"name": "forge-filesystem__read_text_file", "description": "forge filesystem read text file"}),
            "",
        ),
        ToolDoc::from_mcp(
            "forge_filesystem",
            &json!({"name": "read_text_file", "description": "forge filesystem read text file"}),
            "",
        ),
    ]);
    for query in [
        "forge-filesystem__read_text_file",
        "please call forge-filesystem__read_text_file on README.md",
    ] {
        let result = index.search(&SearchQuery::new(query)).expect("search");
        let tiers: Vec<(&str, u8)> = result
            .hits
            .iter()
            .map(|hit| (index.doc(hit.doc).server.as_str(), hit.tier))
            .collect();
        assert_eq!(tiers.len(), 3, "{query}: {tiers:?}");
        assert_eq!(tiers[0], ("forge-filesystem", 3), "{query}: {tiers:?}");
        // The tool named exactly so is named; the server named alike is not.
        let tier_of = |server: &str| tiers.iter().find(|(s, _)| *s == server).map(|(_, t)| *t);
        assert_eq!(
            (tier_of("aa"), tier_of("forge_filesystem")),
            (Some(2), Some(0)),
            "{query}: {tiers:?}"
        );
    }
}

/// Only text written as an identifier names a tool: a sentence whose letters spell a
/// hostile tool's name ("run a shell command" and `run_shell_command`), a plain word
/// (`bash`) and a prose word that splits (`forge-bash`, `GitHub`, `s3`) give no tier, so the
/// ranking decides; `run_shell_command` and `readTextFile` written as such name their tools.
#[test]
fn prose_never_names_a_tool_and_identifiers_do() {
    let tool = |server: &str, name: &str, description: &str| {
        ToolDoc::from_mcp(
            server,
            &json!({"name": name, "description": description}),
            "",
        )
    };
    let index = ToolIndex::build(vec![
        tool("forge-bash", "run", "Run a bash command in the workspace."),
        tool("evil", "run_shell_command", "x"),
        tool("evil", "bash", "x"),
        tool("evil", "forge_bash", "x"),
        tool("evil", "github", "x"),
        tool("evil", "s3", "x"),
        tool("evil", "mac_os", "x"),
        tool("evil", "i_phone", "x"),
        tool("evil", "package_json", "x"),
        tool("fs", "read_text_file", "Read a file as text."),
    ]);
    let tiers = |query: &str| -> Vec<(String, u8)> {
        let result = index
            .search(&SearchQuery::new(query).max_results(10))
            .expect("search");
        result
            .hits
            .iter()
            .filter(|hit| hit.tier > 0)
            .map(|hit| (index.doc(hit.doc).name.clone(), hit.tier))
            .collect()
    };
    for prose in [
        "run a shell command",
        "run shell command",
        "bash",
        "use forge-bash to list files",
        "search GitHub issues",
        "upload to s3",
        "is it on macOS or an iPhone",
        "edit package.json",
    ] {
        assert_eq!(tiers(prose), vec![], "{prose}");
    }
    assert_eq!(
        tiers("run_shell_command"),
        vec![("run_shell_command".to_owned(), 2)]
    );
    assert_eq!(
        tiers("call readTextFile"),
        vec![("read_text_file".to_owned(), 2)]
    );
}

#[test]
fn errors_and_limits() {
    let index = catalog();
    assert_eq!(
        index.search(&SearchQuery::new("  ")),
        Err(SearchError::EmptyQuery)
    );
    assert_eq!(
        index.search(&SearchQuery::new("x").max_results(0)),
        Err(SearchError::MaxResults(0))
    );
    assert_eq!(
        index.search(&SearchQuery::new("x").fields([])),
        Err(SearchError::NoFields)
    );
    let many: Vec<String> = (0..65).map(|i| format!("s{i}")).collect();
    assert_eq!(
        index.search(&SearchQuery::new("x").servers(many)),
        Err(SearchError::TooManyServers(65))
    );
    let long = "screenshot ".repeat(200);
    let result = index.search(&SearchQuery::new(long)).expect("long query");
    assert!(result.truncated_query);
    assert_eq!(
        index.doc(result.hits[0].doc).name,
        "browser_take_screenshot"
    );
    let none = index
        .search(&SearchQuery::new("kubernetes"))
        .expect("search");
    assert_eq!(none.hits, vec![]);
}

#[test]
fn one_edit_apart_matches_levenshtein_one() {
    let words = [
        "", "a", "ab", "abc", "abd", "acb", "abcd", "xbc", "bc", "abcc", "navigate",
    ];
    for a in words {
        for b in words {
            assert_eq!(
                one_edit_apart(a, b),
                strsim::levenshtein(a, b) == 1,
                "{a:?} {b:?}"
            );
        }
    }
}

#[test]
fn ties_break_by_server_then_name() {
    let index = ToolIndex::build(vec![
        doc("b", "same", "identical text"),
        doc("a", "same", "identical text"),
        doc("a", "also", "identical text"),
    ]);
    let hits = index
        .search(&SearchQuery::new("identical"))
        .expect("search")
        .hits;
    let order: Vec<(String, String)> = hits
        .iter()
        .map(|h| {
            (
                index.doc(h.doc).server.clone(),
                index.doc(h.doc).name.clone(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("a".into(), "also".into()),
            ("a".into(), "same".into()),
            ("b".into(), "same".into())
        ]
    );
}

#[test]
fn parameters_field_is_opt_in() {
    let tool = json!({"name": "fetch", "description": "Get a page",
        "inputSchema": {"type": "object", "properties": {"url": {"type": "string", "description": "The address"}}}});
    let index = ToolIndex::build(vec![ToolDoc::from_mcp("web", &tool, "")]);
    assert!(
        index
            .search(&SearchQuery::new("address"))
            .expect("search")
            .hits
            .is_empty()
    );
    let with_params = SearchQuery::new("address").fields([Field::Name, Field::Parameters]);
    assert_eq!(index.search(&with_params).expect("search").hits.len(), 1);
}

/// The dense scan beside the lexical pass (large indexes) and after it give the same
/// result, whole, for queries with and without a server filter, by name and by identifier.
#[test]
fn the_scan_beside_the_lexical_pass_changes_nothing() {
    let words = [
        "read", "write", "file", "page", "browser", "command", "search", "issue", "query", "table",
        "image", "mail",
    ];
    let mut state = 7u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let dim = 16;
    let unit = |next: &mut dyn FnMut() -> u64| -> Vec<f32> {
        let row: Vec<f32> = (0..dim)
            .map(|_| (next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
            .collect();
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        row.iter().map(|x| x / norm).collect()
    };
    let segments: Vec<Arc<Segment>> = (0..30)
        .map(|server| {
            let docs: Vec<ToolDoc> = (0..8)
                .map(|tool| {
                    let text: Vec<&str> = (0..4)
                        .map(|_| words[next() as usize % words.len()])
                        .collect();
                    doc(
                        &format!("s{server}"),
                        &format!("t{tool}_{}", text[0]),
                        &text.join(" "),
                    )
                })
                .collect();
            let vectors = (0..docs.len()).map(|_| unit(&mut next)).collect();
            Arc::new(Segment::build(docs).with_vectors(vectors).expect("vectors"))
        })
        .collect();
    let index = ToolIndex::from_segments(segments, Weights::default());
    for (text, servers) in [
        ("read a file", vec![]),
        ("browser page image", vec![]),
        ("search issue", vec!["s3", "s17"]),
        ("t2_mail", vec![]),
        ("t3_browser", vec![]),
        ("use t1_file and t5_query", vec![]),
        ("t4_tabel", vec![]),
        ("nothing matches this", vec![]),
    ] {
        let query = SearchQuery::new(text)
            .servers(servers)
            .max_results(10)
            .vector(unit(&mut next));
        let after = index.search_on(&query, false).expect("search");
        let beside = index.search_on(&query, true).expect("search");
        assert!(after.dense, "{text}: the dense signal took part");
        assert_eq!(beside, after, "{text}");
    }
}
