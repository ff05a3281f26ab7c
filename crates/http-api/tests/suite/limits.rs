//! Connection limits over a real socket (`http_api::listener`): half-sent headers and idle
//! kept-alive connections are closed within the header-read timeout; a whole request is
//! answered; shutdown drains and returns.

use std::time::{Duration, Instant};

use http_api::listener::{ConnectionLimits, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::harness::{ADMIN_KEY, CHAT_KEY, Fixture, Options, chat_body, model};

/// Read until the server closes the connection; what it sent.
async fn until_closed(stream: &mut tokio::net::TcpStream) -> anyhow::Result<Vec<u8>> {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return Ok(received),
            Ok(n) => received.extend_from_slice(&buffer[..n]),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_clients_are_closed_within_the_header_timeout() -> anyhow::Result<()> {
    let fx = Fixture::new([]).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let limits = ConnectionLimits {
        header_read_timeout: Duration::from_millis(500),
        body_read_timeout: Duration::from_millis(500),
        max_connections: 2048,
        ..ConnectionLimits::default()
    };
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(serve(listener, fx.app.clone(), limits, shutdown.clone()));

    // 1,000 clients send half a request header, then nothing.
    let started = Instant::now();
    let mut slow = Vec::new();
    for _ in 0..1_000 {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .await?;
        slow.push(stream);
    }
    let bound = Duration::from_secs(20);
    for stream in &mut slow {
        tokio::time::timeout(bound, until_closed(stream)).await??;
    }
    let took = started.elapsed();
    eprintln!("limits: 1000 half-open connections closed {took:?} after the first was opened");
    assert!(took < bound, "{took:?}");

    // 100 clients send a whole head declaring a body, then nothing of it: each is answered
    // with a refusal and closed within the body's deadline (before, each held its
    // connection, and the extractor waiting for the body, for ever).
    let mut silent = Vec::new();
    for _ in 0..100 {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        let head = format!(
            "POST /api/ai/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {CHAT_KEY}\r\n\
             Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"botId\":"
        );
        stream.write_all(head.as_bytes()).await?;
        silent.push(stream);
    }
    for stream in &mut silent {
        let answer = tokio::time::timeout(bound, until_closed(stream)).await??;
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 400"), "{text}");
    }

    // A whole request is answered; the kept-alive connection then closes once idle.
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /api/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await?;
    let answer = tokio::time::timeout(bound, until_closed(&mut stream)).await??;
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains(r#"{"status":"alive"}"#), "{text}");

    shutdown.cancel();
    tokio::time::timeout(bound, server).await???;
    fx.finish().await;
    Ok(())
}

/// A chat request of `key` for bot `b`.
fn chat_as(key: &str) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::builder()
        .method("POST")
        .uri("/api/ai/chat")
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .body(axum::body::Body::from(chat_body("b", "hello").to_string()))
        .unwrap_or_default()
}

#[tokio::test]
async fn chat_turns_past_a_cap_are_429_with_retry_after_and_a_place_comes_back_with_its_answer()
-> anyhow::Result<()> {
    use tower::ServiceExt;
    // Every turn waits on a model that never answers: each holds its place while its answer
    // (the response body) is held.
    let hangs = (0..5).map(|_| test_support::FakeReply::hang());
    let limits = http_api::chat_streams::StreamLimits {
        total: 3,
        per_key: 2,
    };
    let fx = Fixture::with_options(
        hangs,
        Options {
            streams: limits,
            ..Options::default()
        },
    )
    .await?;
    fx.add_bot("b", model(test_support::Wire::OpenAi), &[])
        .await?;
    let admit = |key: &'static str| {
        let app = fx.app.clone();
        async move { app.oneshot(chat_as(key)).await }
    };
    let first = admit(ADMIN_KEY).await?;
    let second = admit(ADMIN_KEY).await?;
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let refused = fx.send(chat_as(ADMIN_KEY)).await?;
    assert_eq!(
        (
            refused.status.as_u16(),
            refused.error_code(),
            refused.headers.get("retry-after").and_then(|v| v.to_str().ok()),
            refused.json()?["error"]["message"].as_str().map(str::to_owned),
        ),
        (
            429,
            "too_many_streams".to_owned(),
            Some("5"),
            Some("2 chat turns are running for this key, the most one key may run at once (BOTCRAFT_MAX_CHAT_STREAMS_PER_KEY); try again when one has ended".to_owned()),
        )
    );
    let third = admit(CHAT_KEY).await?;
    assert_eq!(third.status().as_u16(), 200);
    let refused = fx.send(chat_as(CHAT_KEY)).await?;
    assert_eq!(
        (refused.status.as_u16(), refused.json()?["error"]["message"].as_str().map(str::to_owned)),
        (
            429,
            Some("3 chat turns are running, the most BotCraft runs at once (BOTCRAFT_MAX_CHAT_STREAMS); try again shortly".to_owned()),
        )
    );
    // The first answer is dropped (its client went away): its place is free again.
    drop(first);
    let again = admit(ADMIN_KEY).await?;
    assert_eq!(again.status().as_u16(), 200);
    let metrics = fx.state.metrics.encode();
    for line in [
        "botcraft_chat_streams 3",
        "botcraft_chat_streams_refused_total{cap=\"per_key\"} 1",
        "botcraft_chat_streams_refused_total{cap=\"total\"} 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in {metrics}");
    }
    fx.finish().await;
    Ok(())
}
