//! The bad-inputs table: every refusal is a 4xx with a JSON error body (never a 500), and
//! provider failures end the stream with an `error` chunk that names what failed and no key.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use pretty_assertions::assert_eq;
use test_support::{FakeReply, Wire};

use super::harness::{
    ADMIN_KEY, BODY_LIMIT, Fixture, OPENAI_KEY, Options, chat_body, model, request, types,
};

fn raw(
    method: &str,
    path: &str,
    auth: Option<&str>,
    content_type: &str,
    body: Vec<u8>,
) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path);
    if let Some(auth) = auth {
        builder = builder.header("authorization", auth);
    }
    builder
        .header("content-type", content_type)
        .body(Body::from(body))
        .unwrap_or_default()
}

#[tokio::test]
async fn bad_requests_get_json_errors_with_4xx() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    fx.add_bot("tester", model(Wire::OpenAi), &[]).await?;
    let bearer = format!("Bearer {ADMIN_KEY}");
    let good_chat = chat_body("tester", "hi").to_string().into_bytes();
    let mut huge = br#"{"botId": "tester", "messages": [], "pad": ""#.to_vec();
    huge.extend(std::iter::repeat_n(b'x', BODY_LIMIT + 1));
    huge.extend(br#""}"#);
    let json = "application/json";
    // More messages than the limit (harness: MAX_CHAT_MESSAGES), each one valid.
    let message =
        serde_json::json!({"id": "m", "role": "user", "parts": [{"type": "text", "text": "hi"}]});
    let too_many = serde_json::json!({"botId": "tester",
        "messages": vec![message; super::harness::MAX_CHAT_MESSAGES + 1]})
    .to_string()
    .into_bytes();
    // A Content-Length far over the limit and no body at all: refused before reading.
    let declared = Request::builder()
        .method("POST")
        .uri("/api/ai/chat")
        .header("authorization", &bearer)
        .header("content-type", json)
        .header("content-length", "99999999999")
        .body(Body::from_stream(futures::stream::pending::<
            Result<Vec<u8>, std::io::Error>,
        >()))?;
    let cases: Vec<(&str, Request<Body>, StatusCode, &str)> = vec![
        (
            "a misspelt bot on an OAuth start (never the server's own account instead)",
            raw(
                "POST",
                "/api/servers/anything/oauth/start?bto=tester",
                Some(&bearer),
                json,
                Vec::new(),
            ),
            StatusCode::BAD_REQUEST,
            "bad_request",
        ),
        (
            "a misspelt bot on an OAuth sign-out",
            raw(
                "DELETE",
                "/api/servers/anything/oauth?bots=tester",
                Some(&bearer),
                json,
                Vec::new(),
            ),
            StatusCode::BAD_REQUEST,
            "bad_request",
        ),
        (
            "a declared body over the limit, never sent",
            declared,
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
        ),
        (
            "too many messages",
            raw("POST", "/api/ai/chat", Some(&bearer), json, too_many),
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_many_messages",
        ),
        (
            "no key",
            raw("POST", "/api/ai/chat", None, json, good_chat.clone()),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            "wrong key",
            raw(
                "POST",
                "/api/ai/chat",
                Some("Bearer nope"),
                json,
                good_chat.clone(),
            ),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            "not bearer",
            raw(
                "GET",
                "/api/bots",
                Some(&format!("Basic {ADMIN_KEY}")),
                json,
                vec![],
            ),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            "admin route without key",
            raw("GET", "/api/servers", None, json, vec![]),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            "malformed JSON",
            raw(
                "POST",
                "/api/ai/chat",
                Some(&bearer),
                json,
                b"{\"botId\": ".to_vec(),
            ),
            StatusCode::BAD_REQUEST,
            "bad_json",
        ),
        (
            "wrong shape",
            raw(
                "POST",
                "/api/ai/chat",
                Some(&bearer),
                json,
                br#"{"botId": 7}"#.to_vec(),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_json",
        ),
        (
            "not JSON content type",
            raw(
                "POST",
                "/api/ai/chat",
                Some(&bearer),
                "text/plain",
                good_chat.clone(),
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            "huge body",
            raw("POST", "/api/ai/chat", Some(&bearer), json, huge),
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
        ),
        (
            "unknown bot",
            raw(
                "POST",
                "/api/ai/chat",
                Some(&bearer),
                json,
                chat_body("nobody", "hi").to_string().into_bytes(),
            ),
            StatusCode::NOT_FOUND,
            "unknown_bot",
        ),
        (
            "no messages",
            raw(
                "POST",
                "/api/ai/chat",
                Some(&bearer),
                json,
                br#"{"botId": "tester", "messages": []}"#.to_vec(),
            ),
            StatusCode::BAD_REQUEST,
            "bad_messages",
        ),
        (
            "part without type",
            raw(
                "POST",
                "/api/ai/chat",
                Some(&bearer),
                json,
                br#"{"botId": "tester", "messages": [{"role": "user", "parts": [{}]}]}"#.to_vec(),
            ),
            StatusCode::BAD_REQUEST,
            "bad_messages",
        ),
        (
            "unknown server",
            raw("GET", "/api/servers/nope", Some(&bearer), json, vec![]),
            StatusCode::NOT_FOUND,
            "unknown_server",
        ),
        (
            "unknown route",
            raw("GET", "/api/nothing", Some(&bearer), json, vec![]),
            StatusCode::NOT_FOUND,
            "no_route",
        ),
        (
            "wrong method",
            raw("DELETE", "/api/health", Some(&bearer), json, vec![]),
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            "invalid server",
            raw(
                "POST",
                "/api/servers",
                Some(&bearer),
                json,
                br#"{"name": "x", "command": ""}"#.to_vec(),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
        ),
        (
            "a NUL byte in a command",
            raw(
                "POST",
                "/api/servers",
                Some(&bearer),
                json,
                br#"{"name": "x", "command": "/bin/sh\u0000-c"}"#.to_vec(),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
        ),
        (
            "a control character in an argument",
            raw(
                "POST",
                "/api/servers",
                Some(&bearer),
                json,
                br#"{"name": "x", "command": "y", "args": ["a\u001bb"]}"#.to_vec(),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
        ),
        (
            "a NUL byte in an env value",
            raw(
                "POST",
                "/api/servers",
                Some(&bearer),
                json,
                br#"{"name": "x", "command": "y", "env": {"K": "a\u0000b"}}"#.to_vec(),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
        ),
        (
            "forbidden env key",
            raw(
                "POST",
                "/api/servers",
                Some(&bearer),
                json,
                br#"{"name": "x", "command": "y", "env": {"LD_PRELOAD": "z"}}"#.to_vec(),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
        ),
        (
            "bad model string",
            raw(
                "POST",
                "/api/bots",
                Some(&bearer),
                json,
                br#"{"name": "b", "model": "gpt-4"}"#.to_vec(),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
        ),
        (
            "duplicate bot",
            raw(
                "POST",
                "/api/bots",
                Some(&bearer),
                json,
                br#"{"name": "tester", "model": "openai:x"}"#.to_vec(),
            ),
            StatusCode::CONFLICT,
            "duplicate_name",
        ),
    ];
    for (case, req, status, code) in cases {
        let reply = fx.send(req).await?;
        assert_eq!(
            (reply.status, reply.error_code()),
            (status, code.to_owned()),
            "{case}: {}",
            reply.body
        );
    }
    fx.finish().await;
    Ok(())
}

/// Every API answer, an error and the metrics' text included, says `nosniff` and
/// `no-store`; a route that chose its own cache rule keeps it.
#[tokio::test]
async fn api_answers_are_neither_sniffed_nor_stored() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    let bearer = format!("Bearer {ADMIN_KEY}");
    for (path, auth) in [
        ("/api/health", None),
        ("/metrics", None),
        ("/api/servers", Some(bearer.as_str())),
        ("/api/keys", Some(bearer.as_str())),
        ("/api/nothing-here", None),
        ("/api/servers", None),
    ] {
        let mut builder = Request::get(path);
        if let Some(auth) = auth {
            builder = builder.header("authorization", auth);
        }
        let answer = fx.send(builder.body(Body::empty())?).await?;
        let header = |name: &str| answer.headers.get(name).and_then(|v| v.to_str().ok());
        assert_eq!(
            (header("x-content-type-options"), header("cache-control")),
            (Some("nosniff"), Some("no-store")),
            "{path} ({})",
            answer.status
        );
    }
    // A body declared too large is refused before the routes: its 413 says so too.
    let oversize = Request::post("/api/servers")
        .header("authorization", bearer.as_str())
        .header("content-length", (BODY_LIMIT + 1).to_string())
        .body(Body::empty())?;
    let refused = fx.send(oversize).await?;
    assert_eq!(refused.status, 413);
    assert_eq!(
        refused
            .headers
            .get("x-content-type-options")
            .and_then(|v| v.to_str().ok()),
        Some("nosniff")
    );
    Ok(())
}

#[tokio::test]
async fn health_is_public_with_states_only_and_shows_no_env_values() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    fx.add_fake_server("secretive", |s| {
        s.env("TOKEN", "${TYPESENSE_SEARCH_KEY}").always_on(true)
    })
    .await?;
    let failures = fx.manager.start_always_on_servers().await;
    assert_eq!(failures.len(), 1);
    // Without a key: the overall state and each server's state, nothing else.
    let public = fx
        .send(Request::get("/api/health").body(Body::empty())?)
        .await?;
    assert_eq!(public.status, 200);
    let health = public.json()?;
    assert_eq!(health["status"], "degraded");
    let server = &health["mcpServers"]["secretive"];
    assert_ne!(server["state"], "running");
    let mut fields: Vec<&String> = server
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .collect();
    fields.sort();
    assert_eq!(fields, ["alwaysOn", "state"], "{}", public.body);
    assert!(
        !public.body.contains("BOTCRAFT_TEST_UNSET_VARIABLE"),
        "{}",
        public.body
    );
    // With the key: the details, still without the environment's values.
    let reply = fx
        .send(
            Request::get("/api/health")
                .header("authorization", format!("Bearer {ADMIN_KEY}"))
                .body(Body::empty())?,
        )
        .await?;
    assert_eq!(reply.status, 200);
    let health = reply.json()?;
    let server = &health["mcpServers"]["secretive"];
    assert_eq!(server["alwaysOn"], true);
    let error = server["lastError"].as_str().unwrap_or_default();
    assert!(error.contains("TYPESENSE_SEARCH_KEY"), "{error}");
    assert!(
        !reply.body.contains(&fx.dir.path().display().to_string()),
        "{}",
        reply.body
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn provider_http_error_ends_the_stream_with_an_error_chunk_and_no_key() -> anyhow::Result<()>
{
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let body = format!("upstream exploded; you sent {OPENAI_KEY}");
        let fx = Fixture::new([FakeReply::http_error(500, body)]).await?;
        fx.add_bot("tester", model(wire), &[]).await?;
        let reply = fx
            .send(request(
                "POST",
                "/api/ai/chat",
                Some(&chat_body("tester", "hi")),
            ))
            .await?;
        assert_eq!(reply.status, 200);
        let chunks = reply.chunks()?;
        assert_eq!(types(&chunks), ["start", "start-step", "error"], "{wire:?}");
        let text = chunks[2]["errorText"].as_str().unwrap_or_default();
        assert!(
            text.contains("HTTP 500") && text.contains("upstream exploded"),
            "{text}"
        );
        assert!(!reply.body.contains(OPENAI_KEY), "{}", reply.body);
        assert!(text.contains("[redacted]"), "{text}");
        fx.finish().await;
    }
    Ok(())
}

#[tokio::test]
async fn provider_http_error_is_a_502_json_error_on_the_json_answer() -> anyhow::Result<()> {
    let fx = Fixture::new([FakeReply::http_error(500, "boom")]).await?;
    fx.add_bot("tester", model(Wire::OpenAi), &[]).await?;
    let mut req = request("POST", "/api/ai/chat", Some(&chat_body("tester", "hi")));
    req.headers_mut()
        .insert("accept", "application/json".parse()?);
    let reply = fx.send(req).await?;
    assert_eq!(
        (reply.status, reply.error_code()),
        (StatusCode::BAD_GATEWAY, "provider_error".to_owned())
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn provider_that_hangs_is_reported_as_stalled() -> anyhow::Result<()> {
    let options = Options {
        idle: Duration::from_millis(300),
        ..Options::default()
    };
    let fx = Fixture::with_options([FakeReply::hang()], options).await?;
    fx.add_bot("tester", model(Wire::Anthropic), &[]).await?;
    let reply = fx
        .send(request(
            "POST",
            "/api/ai/chat",
            Some(&chat_body("tester", "hi")),
        ))
        .await?;
    let chunks = reply.chunks()?;
    assert_eq!(types(&chunks), ["start", "start-step", "error"]);
    let text = chunks[2]["errorText"].as_str().unwrap_or_default();
    assert!(text.contains("stalled"), "{text}");
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn missing_provider_key_is_a_clear_error_for_that_bot() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    // The fixture's providers point at the fake; a bot on the default (public) endpoint of a
    // provider without a key cannot run. Build such providers for this state.
    let providers = inference::Providers::new(inference::ProviderSettings::default())?;
    let state = http_api::AppState {
        providers,
        ..fx.state.clone()
    };
    let app = http_api::app(state);
    fx.add_bot("keyless", "openai:gpt-4.1-mini", &[]).await?;
    let response = tower::ServiceExt::oneshot(
        app,
        request("POST", "/api/ai/chat", Some(&chat_body("keyless", "hi"))),
    )
    .await?;
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
    let body: serde_json::Value = serde_json::from_slice(&body)?;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["error"]["code"], "model_unavailable");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("OPENAI_API_KEY") && message.contains("keyless"),
        "{message}"
    );
    fx.finish().await;
    Ok(())
}

/// A server that prints one of BotCraft's secrets on stderr: its logs, as the API serves
/// them, show the line with the secret redacted.
#[tokio::test]
async fn server_logs_never_show_a_secret_value() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    let binary = test_support::fake_mcp_server_binary()?;
    fx.add_fake_server("leaky", |mut spec| {
        spec.command = "/bin/sh".into();
        spec.args = vec![
            "-c".into(),
            format!(
                "echo \"config dump: key={ADMIN_KEY} openai={OPENAI_KEY}\" >&2; exec {}",
                binary.display()
            ),
        ];
        spec
    })
    .await?;
    fx.manager.start_server("leaky").await?;
    // The line was written before the handshake; wait until the drain has it.
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while !fx
            .manager
            .stderr_tail("leaky")
            .is_ok_and(|lines| lines.iter().any(|line| line.contains("config dump")))
        {
            tokio::task::yield_now().await;
        }
    })
    .await?;
    let reply = fx
        .send(
            Request::get("/api/servers/leaky/logs")
                .header("authorization", format!("Bearer {ADMIN_KEY}"))
                .body(Body::empty())?,
        )
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.body.contains("config dump: key="), "{}", reply.body);
    assert!(
        !reply.body.contains(ADMIN_KEY) && !reply.body.contains(OPENAI_KEY),
        "{}",
        reply.body
    );
    fx.finish().await;
    Ok(())
}
