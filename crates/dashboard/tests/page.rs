//! The dashboard's router, driven without a socket: what it serves, with which headers, and
//! what the page may and may not do.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use dashboard::{
    APP_CSS_PATH, APP_JS, APP_JS_PATH, CHAT_JS, CHAT_JS_PATH, CONTENT_SECURITY_POLICY, INDEX_HTML,
    router,
};
use pretty_assertions::assert_eq;
use tower::ServiceExt;

async fn get(path: &str) -> (StatusCode, Option<String>, Option<String>, String) {
    let app: axum::Router = router();
    let response = app
        .oneshot(Request::get(path).body(Body::empty()).expect("request"))
        .await
        .expect("infallible");
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (content_type, csp) = (
        header(header::CONTENT_TYPE),
        header(header::CONTENT_SECURITY_POLICY),
    );
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .expect("body");
    (
        status,
        content_type,
        csp,
        String::from_utf8(bytes.to_vec()).expect("utf-8"),
    )
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_with_a_strict_policy() {
    let cases = [
        ("/", "text/html; charset=utf-8", INDEX_HTML),
        (APP_JS_PATH, "text/javascript; charset=utf-8", APP_JS),
        (CHAT_JS_PATH, "text/javascript; charset=utf-8", CHAT_JS),
        (APP_CSS_PATH, "text/css; charset=utf-8", dashboard::APP_CSS),
    ];
    for (path, content_type, body) in cases {
        let (status, got_type, csp, got_body) = get(path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(got_type.as_deref(), Some(content_type), "{path}");
        assert_eq!(csp.as_deref(), Some(CONTENT_SECURITY_POLICY), "{path}");
        assert_eq!(got_body, body, "{path}");
    }
    assert_eq!(get("/dashboard/other.js").await.0, StatusCode::NOT_FOUND);
}

#[test]
fn the_page_links_exactly_the_served_assets_and_no_inline_script() {
    let linked: Vec<&str> = INDEX_HTML
        .split(['"', '\''])
        .filter(|part| part.starts_with("/dashboard/"))
        .collect();
    assert_eq!(linked, vec![APP_CSS_PATH, APP_JS_PATH, CHAT_JS_PATH]);
    // script-src 'self' blocks inline code: every <script> must have a src.
    for tag in INDEX_HTML.split("<script").skip(1) {
        let open = tag.split('>').next().unwrap_or_default();
        assert!(open.contains("src="), "inline <script{open}>");
    }
    // No inline event handlers (` onclick=` …) either.
    let handler = INDEX_HTML.split(" on").skip(1).find(|rest| {
        let name: String = rest.chars().take_while(char::is_ascii_lowercase).collect();
        !name.is_empty() && rest[name.len()..].starts_with('=')
    });
    assert_eq!(handler, None, "an inline event handler");
}

#[test]
fn the_key_travels_in_a_header_and_stays_in_session_storage() {
    for (name, script) in [("app.js", APP_JS), ("chat.js", CHAT_JS)] {
        assert!(
            script.contains(r#"Authorization: "Bearer " + key()"#),
            "{name}"
        );
        assert!(script.contains("sessionStorage"), "{name}");
        assert!(
            !script.contains("localStorage"),
            "{name}: the key and the conversation must not outlive the tab"
        );
        for leak in ["key=", "token=", "apiKey="] {
            assert!(!script.contains(leak), "{name}: a key in a URL: {leak}");
        }
        assert!(
            !script.contains("innerHTML"),
            "{name}: server text is written with textContent"
        );
    }
}
