//! Connection limits over a real socket (`http_api::listener`): half-sent headers and idle
//! kept-alive connections are closed within the header-read timeout; a whole request is
//! answered; shutdown drains and returns.

use std::time::{Duration, Instant};

use http_api::listener::{ConnectionLimits, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::harness::Fixture;

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
        max_connections: 2048,
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
