//! The reason codes of seed 001, each provoked, and the output formats over
//! payloads only a fake server sends on demand (both highlight forms, missing
//! fields). The key never shows in an answer or a log line.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::StdioServer;

use super::fake_typesense::{FakeTypesense, Reply};
use super::{server_with, stderr_line_with};

const KEY: &str = "fake-search-key-7f3a";

async fn server_for(url: &str, extra: &[(&str, &str)]) -> StdioServer {
    let mut vars = vec![("TYPESENSE_URL", url), ("TYPESENSE_SEARCH_KEY", KEY)];
    vars.extend_from_slice(extra);
    server_with(&vars).await
}

/// Call `tool`, expect an error result, and return its text and the stderr
/// line that reported it; neither may contain the key.
async fn failure(server: &StdioServer, tool: &str, arguments: Value) -> (String, String) {
    let outcome = server.call(tool, arguments).await.expect("tools/call");
    assert!(outcome.is_error, "expected an error, got {}", outcome.text);
    let line = stderr_line_with(server, "reason=").await;
    assert!(
        !outcome.text.contains(KEY) && !line.contains(KEY),
        "{outcome:?} {line}"
    );
    for line in server.stderr_lines() {
        assert!(!line.contains(KEY), "the key leaked to stderr: {line}");
    }
    (outcome.text, line)
}

fn reason(line: &str) -> &str {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix("reason="))
        .unwrap_or("")
}

#[tokio::test]
async fn without_settings_a_call_is_not_configured() {
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![],
            "Typesense is not configured: set TYPESENSE_URL and TYPESENSE_SEARCH_KEY. TYPESENSE_URL is the server's base URL (e.g. http://localhost:8108).",
        ),
        (
            vec![("TYPESENSE_URL", "http://127.0.0.1:9")],
            "Typesense is not configured: set TYPESENSE_SEARCH_KEY. TYPESENSE_URL is the server's base URL (e.g. http://localhost:8108).",
        ),
        (
            vec![
                ("TYPESENSE_URL", "localhost:8108"),
                ("TYPESENSE_SEARCH_KEY", KEY),
            ],
            "TYPESENSE_URL is not an http(s) URL: \"localhost:8108\" (the scheme must be http or https).",
        ),
        (
            vec![
                ("TYPESENSE_URL", "http://127.0.0.1:9"),
                ("TYPESENSE_SEARCH_KEY", KEY),
                ("TYPESENSE_TIMEOUT_MS", "soon"),
            ],
            "TYPESENSE_TIMEOUT_MS must be a whole number of milliseconds above 0, not \"soon\".",
        ),
    ];
    for (vars, expected) in cases {
        let server = server_with(&vars).await;
        for tool in ["search_knowledge", "get_file_summary"] {
            let arguments = json!({"query": "x", "path": "README.md"});
            let outcome = server.call(tool, arguments).await.expect("call");
            assert_eq!((outcome.is_error, outcome.text.as_str()), (true, expected));
            let line = stderr_line_with(&server, &format!("tool={tool}")).await;
            assert_eq!(
                line,
                format!("forge-typesense: reason=stdio.not_configured tool={tool} {expected}")
            );
        }
        server.close().await.expect("close");
    }
}

#[tokio::test]
async fn a_refused_connection_is_upstream_unreachable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    // The listener is closed again: nothing accepts on that port.
    let url = format!("http://127.0.0.1:{port}");
    let server = server_for(&url, &[]).await;
    let (text, line) = failure(&server, "search_knowledge", json!({"query": "x"})).await;
    assert_eq!(reason(&line), "stdio.upstream_unreachable");
    assert!(
        text.starts_with(&format!(
            "Typesense at {url}/multi_search could not be reached: "
        )),
        "{text}"
    );
    server.close().await.expect("close");
}

#[tokio::test]
async fn a_server_that_never_answers_is_upstream_unreachable_after_the_deadline() {
    let fake = FakeTypesense::start(Reply::Hang).await;
    let server = server_for(&fake.url, &[("TYPESENSE_TIMEOUT_MS", "300")]).await;
    let (text, line) = failure(&server, "get_file_summary", json!({"path": "README.md"})).await;
    assert_eq!(reason(&line), "stdio.upstream_unreachable");
    assert_eq!(
        text,
        format!(
            "Typesense at {}/multi_search did not answer within 300 ms.",
            fake.url
        )
    );
    server.close().await.expect("close");
}

#[tokio::test]
async fn a_non_2xx_answer_is_an_http_error_with_a_capped_body() {
    let long_body = format!("{{\"message\": \"boom {KEY} {}\"}}", "x".repeat(3000));
    let cases = [
        (500, long_body.clone()),
        (
            401,
            r#"{"message": "Forbidden - a valid `x-typesense-api-key` header must be sent."}"#
                .to_owned(),
        ),
    ];
    let mut texts = Vec::new();
    for (status, body) in cases {
        let fake = FakeTypesense::start(Reply::With { status, body }).await;
        let server = server_for(&fake.url, &[]).await;
        let (text, line) = failure(&server, "search_knowledge", json!({"query": "x"})).await;
        assert_eq!(reason(&line), "stdio.upstream_http_error");
        texts.push(text.replace(&fake.url, "http://FAKE"));
        server.close().await.expect("close");
    }
    assert!(texts[0].len() < 1200, "capped: {} bytes", texts[0].len());
    insta::assert_snapshot!("http_errors", texts.join("\n"));
}

#[tokio::test]
async fn an_unexpected_answer_is_upstream_bad_payload() {
    let cases = [
        Reply::With {
            status: 200,
            body: "<html>proxy error</html>".into(),
        },
        Reply::json(json!({"hits": []})),
        Reply::json(json!({"results": []})),
        Reply::json(json!({"results": [{"hits": []}]})),
        Reply::json(
            json!({"results": [{"found": 1, "hits": [{"document": {}, "text_match": 1.5}]}]}),
        ),
    ];
    let mut texts = Vec::new();
    for reply in cases {
        let fake = FakeTypesense::start(reply).await;
        let server = server_for(&fake.url, &[]).await;
        let (text, line) = failure(&server, "search_knowledge", json!({"query": "x"})).await;
        assert_eq!(reason(&line), "stdio.upstream_bad_payload");
        texts.push(text.replace(&fake.url, "http://FAKE"));
        server.close().await.expect("close");
    }
    insta::assert_snapshot!("bad_payloads", texts.join("\n"));
}

fn hits_reply() -> Value {
    json!({"results": [{
        "found": 42,
        "hits": [
            {
                "document": {"title": "Taxonomy", "path": "Forge/Projects/Taxonomy/README.md",
                             "summary": "Classify every document.", "content": "…"},
                "highlight": {
                    "title": {"matched_tokens": ["Taxonomy"], "snippet": "<mark>Taxonomy</mark>"},
                    "content": {"matched_tokens": ["taxonomy"],
                                "snippet": "The <mark>taxonomy</mark> groups\nevery document"}
                },
                "highlights": [{"field": "content", "snippet": "ignored when highlight has it"}],
                "text_match": 578730123365711977u64
            },
            {
                "document": {"title": "Roadmap", "path": "Forge/roadmap.md", "summary": "Private."},
                "highlights": [
                    {"field": "title", "snippet": "t"},
                    {"field": "summary", "snippet": "the <mark>taxonomy</mark> summary"}
                ],
                "text_match": 9007199254740993u64
            },
            {
                "document": {"path": "Marketing/tags.md"},
                "highlight": {"content": [{"snippet": "first <mark>tag</mark>"}, {"snippet": "second"}]},
                "text_match": 1
            },
            {"document": {}}
        ]
    }]})
}

#[tokio::test]
async fn search_results_follow_the_seed_format_in_every_highlight_form() {
    let fake = FakeTypesense::start(Reply::json(hits_reply())).await;
    let server = server_for(&fake.url, &[("TYPESENSE_COLLECTION", "docs")]).await;
    let outcome = server
        .call(
            "search_knowledge",
            json!({"query": "taxonomy", "department": "Forge && visibility:=private", "limit": 4}),
        )
        .await
        .expect("call");
    assert!(!outcome.is_error, "{}", outcome.text);
    insta::assert_snapshot!("search_results_all_forms", outcome.text);

    let received = fake.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path_and_query, "/multi_search");
    assert_eq!(received[0].api_key.as_deref(), Some(KEY));
    assert_eq!(
        received[0].body,
        json!({"searches": [{
            "collection": "docs",
            "q": "taxonomy",
            "query_by": "title,summary,content",
            "per_page": 4,
            "filter_by": "department:=`Forge && visibility:=private`"
        }]})
    );
    server.close().await.expect("close");
}

#[tokio::test]
async fn file_summaries_follow_their_format() {
    let cases = [
        (
            "with_summary",
            json!({"results": [{"found": 1, "hits": [{"document":
                {"title": "Forge", "path": "Forge/README.md", "summary": "Builds the tools."}}]}]}),
        ),
        (
            "without_summary",
            json!({"results": [{"found": 1, "hits": [{"document":
                {"title": "Headings only", "path": "Marketing/headings-only.md"}}]}]}),
        ),
    ];
    for (name, reply) in cases {
        let fake = FakeTypesense::start(Reply::json(reply)).await;
        let server = server_for(&fake.url, &[]).await;
        let outcome = server
            .call("get_file_summary", json!({"path": "./Forge/README.md"}))
            .await
            .expect("call");
        assert!(!outcome.is_error, "{}", outcome.text);
        insta::assert_snapshot!(format!("file_summary_{name}"), outcome.text);
        assert_eq!(
            fake.received()[0].body,
            json!({"searches": [{
                "collection": "uvilo",
                "q": "*",
                "query_by": "path",
                "filter_by": "path:=`Forge/README.md`",
                "per_page": 1
            }]})
        );
        server.close().await.expect("close");
    }
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_before_any_request() {
    let fake = FakeTypesense::start(Reply::json(hits_reply())).await;
    let server = server_for(&fake.url, &[]).await;
    let cases = [
        (
            "search_knowledge",
            json!({"query": "x", "limit": 0}),
            "limit must be a whole number from 1 to 50, not 0.",
        ),
        (
            "search_knowledge",
            json!({"query": "x", "limit": 2.5}),
            "limit must be a whole number from 1 to 50, not 2.5.",
        ),
        (
            "search_knowledge",
            json!({"query": "x", "owner": "a` && visibility:=`private"}),
            "The owner filter contains a backtick (`), which a Typesense filter value cannot hold; remove it and search again.",
        ),
        (
            "get_file_summary",
            json!({"path": "a`b.md"}),
            "The path filter contains a backtick (`), which a Typesense filter value cannot hold; remove it and search again.",
        ),
        (
            "get_file_summary",
            json!({"path": "  "}),
            "The path is empty: give a file path relative to the repository root, e.g. Forge/README.md.",
        ),
        (
            "search_knowledge",
            json!({}),
            "Invalid arguments for tool search_knowledge: missing field `query`",
        ),
    ];
    for (tool, arguments, expected) in cases {
        let outcome = server.call(tool, arguments).await.expect("call");
        assert_eq!((outcome.is_error, outcome.text.as_str()), (true, expected));
        let line = stderr_line_with(&server, expected).await;
        assert_eq!(
            line,
            format!("forge-typesense: reason=stdio.tool_error tool={tool} {expected}")
        );
    }
    assert_eq!(fake.received(), vec![], "no request was sent");
    server.close().await.expect("close");
}

/// A redirect is not followed: the key header would go along to wherever it points.
#[tokio::test]
async fn a_redirect_is_not_followed_and_the_key_goes_nowhere_else() {
    let elsewhere = FakeTypesense::start(Reply::json(json!({"hits": []}))).await;
    let redirecting = FakeTypesense::start(Reply::Redirect(format!(
        "{}/collections/forge/documents/search",
        elsewhere.url
    )))
    .await;
    let server = server_for(&redirecting.url, &[]).await;
    let (text, _line) = failure(&server, "search_knowledge", json!({"query": "deploy"})).await;
    assert!(text.contains("302"), "{text}");
    assert_eq!(redirecting.received().len(), 1);
    assert_eq!(elsewhere.received(), Vec::new());
}
