//! `conformance-fixture [--http ADDR]`: test-support's [`ConformanceFixture`] over stdio (the
//! default) or over streamable HTTP at `http://ADDR/mcp` (sessions, and stateless 2026-07-28
//! requests on the same URL). In HTTP mode it prints `listening on URL` once it accepts
//! connections and serves until SIGINT or SIGTERM. Logs go to stderr.

use std::sync::Arc;

use anyhow::Context;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use test_support::conformance_fixture::ConformanceFixture;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {
            let service = ConformanceFixture::new()
                .serve(rmcp::transport::stdio())
                .await
                .context("initialize over stdio")?;
            service.waiting().await.context("serve stdio")?;
            Ok(())
        }
        [flag, addr] if flag == "--http" => serve_http(addr).await,
        _ => anyhow::bail!("usage: conformance-fixture [--http ADDR]"),
    }
}

async fn serve_http(addr: &str) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    let config = StreamableHttpServerConfig::default().with_cancellation_token(shutdown.clone());
    let service = StreamableHttpService::new(
        || Ok(ConformanceFixture::new()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("bind {addr}"))?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let mut sigterm =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let term = async {
            match sigterm.as_mut() {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = term => {}
        }
        stop.cancel();
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .context("serve HTTP")
}
