//! `upstream`'s tests: the plain client's choice, the proxy variables, the call's
//! parameters, answers read raw and as values, redirects, a forgotten session.

use super::*;
use pretty_assertions::assert_eq;

#[test]
fn endpoint_appends_mcp_once() {
    let cases = [
        ("http://h:1", "http://h:1/mcp"),
        ("http://h:1/", "http://h:1/mcp"),
        ("http://h:1/mcp", "http://h:1/mcp"),
        ("https://h/base/mcp/", "https://h/base/mcp"),
    ];
    for (url, endpoint) in cases {
        assert_eq!(endpoint_of(url), endpoint, "{url}");
    }
}

/// The parameters of a call are the JSON they were when built as a value.
#[test]
fn call_parameters_are_written_as_mcp_reads_them() {
    let arguments = json!({"text": "hi", "n": [1, {"deep": null}]});
    let arguments = arguments.as_object().expect("an object");
    let cases = [
        (None, None, json!({"name": "fake__echo"})),
        (
            Some(arguments),
            None,
            json!({"name": "fake__echo", "arguments": arguments}),
        ),
        (
            Some(arguments),
            Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            json!({
                "name": "fake__echo",
                "arguments": arguments,
                "_meta": {
                    observability::TRACEPARENT:
                        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
                },
            }),
        ),
    ];
    for (arguments, traceparent, expected) in cases {
        let params = CallParams {
            name: "fake__echo",
            arguments,
            meta: traceparent.map(|t| TraceMeta {
                traceparent: t.to_owned(),
            }),
        };
        assert_eq!(serde_json::to_value(&params).expect("JSON"), expected);
    }
}

#[test]
fn answers_are_results_or_typed_errors() {
    let ok = answer_result(
        "tools/call",
        r#"{"jsonrpc": "2.0", "id": 1, "result": {"content": []}}"#,
    );
    assert_eq!(ok.expect("result").get(), r#"{"content": []}"#);
    let rpc = answer_result(
        "tools/call",
        r#"{"id": 1, "error": {"code": -32602, "message": "Unknown tool: x"}}"#,
    )
    .expect_err("rpc error");
    assert_eq!(rpc.reason(), ReasonCode::ToolError);
    let bad = answer_result("tools/call", r#"{"id": 1, "result": 3}"#).expect_err("bad");
    assert_eq!(bad.reason(), ReasonCode::UpstreamBadPayload);
}

/// The raw reading decides every answer as reading it as a value does.
#[test]
fn the_raw_reading_of_an_answer_is_the_values() {
    let cases = [
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
        r#"{"id":1,"error":{"code":-32602,"message":"Unknown tool: x","data":{}}}"#,
        r#"{"id":1,"error":null,"result":{"content":[]}}"#,
        r#"{"id":1,"result":null}"#,
        r#"{"id":1,"result":[]}"#,
        r#"{"id":1}"#,
        r#"{"id":1,"error":{"code":"not a number"}}"#,
        r#"{"id":1,"result":{"a":1},"result":{"b":2}}"#,
        r#"[1,2]"#,
    ];
    for text in cases {
        let raw = answer_result("tools/call", text)
            .map(|raw| serde_json::from_str::<Value>(raw.get()).expect("a result is JSON"));
        let value = answer_value(
            "tools/call",
            serde_json::from_str(text).expect("the case is JSON"),
        );
        assert_eq!(format!("{raw:?}"), format!("{value:?}"), "{text}");
    }
}

#[test]
fn plain_http_only_for_an_http_endpoint_without_a_proxy() {
    // (url, key, a proxy in the environment, plain client)
    let cases = [
        ("http://127.0.0.1:3000", "k", false, true),
        ("http://127.0.0.1:3000/mcp", "k", false, true),
        ("http://127.0.0.1:3000", "k", true, false),
        ("https://botcraft.example", "k", false, false),
        ("http://127.0.0.1:3000", "bad\nkey", false, false),
        // Ports reqwest's URL parser refuses (the `http` crate's would read port 80).
        ("http://127.0.0.1:300000", "k", false, false),
        ("http://127.0.0.1:30o0", "k", false, false),
    ];
    for (url, api_key, proxy_in_env, plain) in cases {
        let upstream = Upstream::new(&UpstreamConfig {
            url: url.into(),
            api_key: api_key.into(),
            timeout: Duration::from_secs(5),
            proxy_in_env,
        });
        assert_eq!(upstream.plain.is_some(), plain, "{url} {proxy_in_env}");
    }
}

/// A 307 or 308 (a proxy in front of BotCraft moving `/mcp`, say) says the request was not
/// taken: the plain client hands it to reqwest, which follows it with the same POST. Any other
/// redirect is the HTTP error it is, and the request is not sent again (a 303 may come after
/// the server took it; reqwest would have followed it with a GET, which carries no answer).
#[tokio::test]
async fn a_redirect_that_repeats_the_request_is_followed_and_no_other() {
    use axum::http::StatusCode as Status;
    use axum::routing::post;
    use std::sync::atomic::AtomicUsize;
    // (status, followed)
    let cases = [
        (Status::TEMPORARY_REDIRECT, true),
        (Status::PERMANENT_REDIRECT, true),
        (Status::SEE_OTHER, false),
        (Status::FOUND, false),
    ];
    for (status, followed) in cases {
        let (posted, moved) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let app = {
            let (posted, moved) = (posted.clone(), moved.clone());
            axum::Router::new()
                .route(
                    "/mcp",
                    post(move || async move {
                        posted.fetch_add(1, Ordering::SeqCst);
                        (status, [(axum::http::header::LOCATION, "/moved/mcp")])
                    }),
                )
                .route(
                    "/moved/mcp",
                    post(move |body: axum::body::Bytes| async move {
                        moved.fetch_add(1, Ordering::SeqCst);
                        let request: Value = serde_json::from_slice(&body).expect("JSON");
                        axum::Json(json!({
                            "jsonrpc": "2.0",
                            "id": request["id"],
                            "result": {"content": [], "seen": request["method"]},
                        }))
                    }),
                )
        };
        let upstream = loopback_upstream(served_on_loopback(app).await, false);
        assert!(upstream.plain.is_some());
        let answer = call_x(&upstream).await;
        if followed {
            let (result, _) = answer.expect("the redirect followed");
            assert_eq!(
                serde_json::from_str::<Value>(result.get()).expect("JSON"),
                json!({"content": [], "seen": "tools/call"}),
                "{status}"
            );
            // Once by the plain client, once by reqwest; then the new place.
            assert_eq!(posted.load(Ordering::SeqCst), 2, "{status}");
            assert_eq!(moved.load(Ordering::SeqCst), 1, "{status}");
        } else {
            let error = answer.expect_err("not followed");
            assert!(
                matches!(&error, UpstreamError::HttpStatus { status: got, .. } if *got == status),
                "{status}: {error:?}"
            );
            assert_eq!(posted.load(Ordering::SeqCst), 1, "{status}");
            assert_eq!(moved.load(Ordering::SeqCst), 0, "{status}");
        }
    }
}

/// A JSON answer is read up to the bound of one event of an event stream, on either client;
/// one byte more is a bad payload, not memory spent on it.
#[tokio::test]
async fn a_json_answer_is_read_up_to_its_bound() {
    let prefix = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"pad":""#;
    let suffix = r#""}}"#;
    for proxy_in_env in [false, true] {
        for extra in [0, 1] {
            let pad = MAX_ANSWER_BYTES - prefix.len() - suffix.len() + extra;
            let body = format!("{prefix}{}{suffix}", "x".repeat(pad));
            let app = axum::Router::new().route(
                "/mcp",
                axum::routing::post(move || async move {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        body,
                    )
                }),
            );
            let upstream = loopback_upstream(served_on_loopback(app).await, proxy_in_env);
            let answer = call_x(&upstream).await;
            let case = format!("proxy_in_env {proxy_in_env}, {extra} over");
            match extra {
                0 => assert!(answer.is_ok(), "{case}: {:?}", answer.err()),
                _ => assert!(
                    matches!(&answer, Err(UpstreamError::BadPayload { what, .. })
                        if *what == format!("an answer of more than {MAX_ANSWER_BYTES} bytes")),
                    "{case}: {:?}",
                    answer.err()
                ),
            }
        }
    }
}

/// `app` served on a loopback port of its own: its base URL.
async fn served_on_loopback(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// One `tools/call` of tool `x` on session `s`, as the bridge sends it.
async fn call_x(upstream: &Upstream) -> Result<(Box<RawValue>, Option<String>), UpstreamError> {
    upstream
        .exchange(
            "tools/call",
            &json!({"name": "x"}),
            Some(&Session::new("s".into())),
        )
        .await
}

/// An upstream of a loopback test server, its reqwest client told to read no proxy from this
/// machine's environment (the plain client reads none).
fn loopback_upstream(url: String, proxy_in_env: bool) -> Upstream {
    let mut upstream = Upstream::new(&UpstreamConfig {
        url,
        api_key: "k".into(),
        timeout: Duration::from_secs(10),
        proxy_in_env,
    });
    upstream.http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client");
    upstream
}

/// A BotCraft that opens sessions `s1`, `s2`, …, answers a call with the session it came
/// on and the parameters it got (as JSON text), forgets every session when told to, and
/// counts the sessions it opened.
async fn botcraft_that_forgets(
    forget_each_time: bool,
) -> (
    String,
    Arc<std::sync::atomic::AtomicUsize>,
    Arc<Mutex<bool>>,
) {
    use axum::http::{HeaderMap, StatusCode as Status};
    use axum::response::IntoResponse as _;
    use std::sync::atomic::AtomicUsize;
    let opened = Arc::new(AtomicUsize::new(0));
    let forget = Arc::new(Mutex::new(false));
    let live = Arc::new(Mutex::new(Vec::<String>::new()));
    let app = {
        let (opened, forget) = (opened.clone(), forget.clone());
        axum::Router::new().route(
            "/mcp",
            axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
                let (opened, forget, live) = (opened.clone(), forget.clone(), live.clone());
                async move {
                    let request: Value = serde_json::from_slice(&body).expect("JSON");
                    let method = request["method"].as_str().unwrap_or_default();
                    if method == "initialize" {
                        let n = opened.fetch_add(1, Ordering::SeqCst) + 1;
                        let session = format!("s{n}");
                        live.lock().expect("lock").push(session.clone());
                        let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {}});
                        return ([(SESSION_HEADER, session)], axum::Json(answer)).into_response();
                    }
                    let session = headers
                        .get(SESSION_HEADER)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    // Sessions are forgotten at a call (not at `initialized`).
                    if !method.starts_with("notifications/") {
                        let mut forget = forget.lock().expect("lock");
                        if *forget {
                            live.lock().expect("lock").clear();
                            *forget = forget_each_time;
                        }
                    }
                    if !live.lock().expect("lock").contains(&session) {
                        return Status::NOT_FOUND.into_response();
                    }
                    if method.starts_with("notifications/") {
                        return Status::ACCEPTED.into_response();
                    }
                    let text = json!({"type": "text", "text": session});
                    let params = json!({"type": "text", "text": request["params"].to_string()});
                    let answer = json!({
                        "jsonrpc": "2.0", "id": request["id"], "result": {"content": [text, params]}
                    });
                    axum::Json(answer).into_response()
                }
            }),
        )
    };
    (served_on_loopback(app).await, opened, forget)
}

fn session_of(result: &CallToolResult) -> Option<&str> {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.as_str())
}

/// The parameters the server got, read as an MCP server reads a call's.
fn params_of(result: &CallToolResult) -> rmcp::model::CallToolRequestParams {
    let text = result
        .content
        .get(1)
        .and_then(|c| c.as_text())
        .map(|t| t.text.as_str())
        .expect("the parameters echoed");
    serde_json::from_str(text).expect("parameters of a call")
}

#[tokio::test]
async fn a_forgotten_session_is_opened_again_once() {
    for proxy_in_env in [false, true] {
        let (url, opened, forget) = botcraft_that_forgets(false).await;
        let upstream = loopback_upstream(url, proxy_in_env);
        // Both clients: the plain one, and reqwest (which a proxy in the environment
        // would choose).
        assert_eq!(upstream.plain.is_none(), proxy_in_env);
        let arguments = json!({"text": "hi", "n": [1, {"deep": null}]});
        let arguments = arguments.as_object().cloned();
        let first = upstream
            .call_tool("fake__echo", arguments.clone())
            .await
            .expect("a call");
        assert_eq!(session_of(&first), Some("s1"));
        let params = params_of(&first);
        assert_eq!(
            (params.name.as_ref(), params.arguments.as_ref()),
            ("fake__echo", arguments.as_ref())
        );
        *forget.lock().expect("lock") = true;
        let second = upstream.call_tool("t", None).await.expect("a call");
        assert_eq!(session_of(&second), Some("s2"));
        let params = params_of(&second);
        assert_eq!((params.name.as_ref(), params.arguments), ("t", None));
        assert_eq!(opened.load(Ordering::SeqCst), 2);
    }
}

#[tokio::test]
async fn a_session_forgotten_again_fails_the_call_after_one_new_one() {
    let (url, opened, forget) = botcraft_that_forgets(true).await;
    let upstream = loopback_upstream(url, false);
    upstream.call_tool("t", None).await.expect("a call");
    *forget.lock().expect("lock") = true;
    // Bounded: a retry without end would loop, each try answered at once.
    let failed = tokio::time::timeout(Duration::from_secs(30), upstream.call_tool("t", None))
        .await
        .expect("the retries end")
        .expect_err("forgotten twice");
    assert!(
        matches!(failed, UpstreamError::HttpStatus { status, .. } if status == StatusCode::NOT_FOUND),
        "{failed:?}"
    );
    assert_eq!(opened.load(Ordering::SeqCst), 2);
}

#[test]
fn a_proxy_is_named_by_the_variables_reqwest_reads_for_http() {
    let cases: [(&[&str], bool); 7] = [
        (&[], false),
        (&["HTTP_PROXY"], true),
        (&["http_proxy"], true),
        (&["ALL_PROXY"], true),
        (&["all_proxy"], true),
        (&["NO_PROXY", "HTTP_PROXY"], true),
        // https endpoints go to reqwest whatever is set.
        (&["HTTPS_PROXY", "https_proxy", "NO_PROXY"], false),
    ];
    for (set, named) in cases {
        let env = |name: &str| set.contains(&name).then(|| "http://proxy:3128".to_owned());
        assert_eq!(UpstreamConfig::proxy_named(env), named, "{set:?}");
    }
}

#[test]
fn debug_output_never_shows_the_key() {
    let config = UpstreamConfig {
        url: "http://127.0.0.1:3000/mcp?token=q".into(),
        api_key: "bot-key-secret-123".into(),
        timeout: Duration::from_secs(5),
        proxy_in_env: false,
    };
    let shown = [
        format!("{config:?}"),
        format!("{:?}", Upstream::new(&config)),
    ];
    for text in shown {
        assert!(!text.contains("bot-key-secret-123"), "{text}");
        assert!(!text.contains("token=q"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
    }
}

/// How a test BotCraft's `tools/list` pages go on: the page's number in, its cursor out.
type Paging = fn(usize) -> Option<String>;

/// A BotCraft whose `tools/list` pages go on as `next` says: one tool per page, and the
/// count of pages asked for.
async fn botcraft_paging(next: Paging) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use axum::http::StatusCode as Status;
    use axum::response::IntoResponse as _;
    let pages = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let asked = pages.clone();
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |body: axum::body::Bytes| {
            let pages = asked.clone();
            async move {
                let request: Value = serde_json::from_slice(&body).expect("JSON");
                let id = request["id"].clone();
                match request["method"].as_str().unwrap_or_default() {
                    "initialize" => {
                        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {}});
                        ([(SESSION_HEADER, "s")], axum::Json(answer)).into_response()
                    }
                    "tools/list" => {
                        let page = pages.fetch_add(1, Ordering::SeqCst);
                        let tool =
                            json!({"name": format!("t{page}"), "inputSchema": {"type": "object"}});
                        let mut result = json!({"tools": [tool]});
                        if let Some(cursor) = next(page) {
                            result["nextCursor"] = json!(cursor);
                        }
                        axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
                            .into_response()
                    }
                    _ => Status::ACCEPTED.into_response(),
                }
            }
        }),
    );
    (served_on_loopback(app).await, pages)
}

#[tokio::test]
async fn a_listing_whose_cursors_go_round_or_never_end_stops() {
    let cases: [(Paging, usize); 4] = [
        (|_| None, 1),
        (|page| (page < 3).then(|| format!("c{page}")), 4),
        // a, b, a, b, …: the third page names a cursor seen before.
        (|page| Some(["a", "b"][page % 2].to_owned()), 3),
        // A new cursor on every page: cut at the bound.
        (|page| Some(format!("c{page}")), MAX_LIST_PAGES),
    ];
    for (next, expected) in cases {
        let (url, pages) = botcraft_paging(next).await;
        let listing = loopback_upstream(url, false)
            .listing()
            .await
            .expect("a listing");
        assert_eq!(
            (listing.tools.len(), pages.load(Ordering::SeqCst)),
            (expected, expected)
        );
    }
}

#[tokio::test]
async fn a_server_request_with_the_calls_id_is_not_its_answer() {
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(|body: axum::body::Bytes| async move {
            let request: Value = serde_json::from_slice(&body).expect("JSON");
            let id = &request["id"];
            let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [], "n": 1}});
            (
                [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                format!("data: {ping}\n\ndata: {answer}\n\n"),
            )
        }),
    );
    for proxy_in_env in [false, true] {
        let upstream = loopback_upstream(served_on_loopback(app.clone()).await, proxy_in_env);
        let (result, _) = call_x(&upstream).await.expect("the answer");
        assert_eq!(
            result.get(),
            r#"{"content":[],"n":1}"#,
            "proxy_in_env {proxy_in_env}"
        );
    }
}

#[tokio::test]
async fn an_unreachable_botcraft_is_named_without_the_urls_credentials() {
    // A port that was just free: nothing listens there any more.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    drop(listener);
    // Both clients: the plain one (no proxy) and reqwest (a proxy in the environment).
    for proxy_in_env in [false, true] {
        let upstream = loopback_upstream(
            format!("http://user:pw-secret@{addr}/mcp?token=q"),
            proxy_in_env,
        );
        let error = call_x(&upstream).await.expect_err("nothing listens");
        assert!(
            matches!(error, UpstreamError::Unreachable { .. }),
            "{error:?}"
        );
        let mut shown = format!("{error} {error:?}");
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            shown.push_str(&format!(" {cause}"));
            source = cause.source();
        }
        assert!(!shown.contains("pw-secret"), "{shown}");
        assert!(!shown.contains("token=q"), "{shown}");
        assert!(shown.contains(&format!("http://…@{addr}/mcp?…")), "{shown}");
    }
}
