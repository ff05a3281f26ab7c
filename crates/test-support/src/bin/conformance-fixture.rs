//! `conformance-fixture [--http ADDR [--require-header NAME=VALUE | --oauth SECS | --stateless-only]]`: test-support's
//! [`ConformanceFixture`] over stdio (the default) or over streamable HTTP at
//! `http://ADDR/mcp` (sessions, and stateless 2026-07-28 requests on the same URL). ADDR
//! `fd:N` serves on the listening socket inherited as file descriptor N (bound by the test
//! that started it: see `Served::start_on`), instead of binding one. In HTTP
//! mode it prints `listening on URL` once it accepts connections and serves until SIGINT or
//! SIGTERM; with `--require-header` every request without that header (exactly) is answered
//! 401, as a server behind a bearer token would; with `--oauth SECS` it sits behind
//! [`test_support::oauth_server`] (a fake authorization server on the same origin, tokens
//! living SECS seconds); with `--stateless-only` it keeps no 2025-11-25 sessions (rmcp's
//! `legacy_session_mode` off: every request stands alone). Logs go to stderr.

use std::sync::Arc;

use anyhow::Context;
use axum::response::IntoResponse;
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
        [flag, addr] if flag == "--http" => serve_http(addr, Guard::None).await,
        [flag, addr, only] if flag == "--http" && only == "--stateless-only" => {
            serve_http(addr, Guard::StatelessOnly).await
        }
        [flag, addr, oauth, secs] if flag == "--http" && oauth == "--oauth" => {
            let secs = secs
                .parse()
                .context("--oauth takes the token lifetime in seconds")?;
            serve_http(addr, Guard::OAuth(secs)).await
        }
        [flag, addr, require, header] if flag == "--http" && require == "--require-header" => {
            let (name, value) = header
                .split_once('=')
                .context("--require-header takes NAME=VALUE")?;
            serve_http(addr, Guard::Header(name.to_owned(), value.to_owned())).await
        }
        _ => {
            anyhow::bail!(
                "usage: conformance-fixture [--http ADDR [--require-header NAME=VALUE | --oauth SECS | --stateless-only]]"
            )
        }
    }
}

/// What stands in front of `/mcp`.
enum Guard {
    None,
    /// No 2025-11-25 sessions: only self-contained 2026-07-28 requests.
    StatelessOnly,
    Header(String, String),
    OAuth(u64),
}

async fn serve_http(addr: &str, guard: Guard) -> anyhow::Result<()> {
    let listener = match addr.strip_prefix("fd:") {
        Some(fd) => inherited_listener(fd.parse().context("fd:N takes a descriptor number")?)?,
        None => tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("bind {addr}"))?,
    };
    let origin = format!("http://{}", listener.local_addr()?);
    let shutdown = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.clone())
        .with_legacy_session_mode(!matches!(guard, Guard::StatelessOnly));
    let service = StreamableHttpService::new(
        || Ok(ConformanceFixture::new()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mut app = axum::Router::new().nest_service("/mcp", service);
    if let Guard::OAuth(secs) = guard {
        app = test_support::oauth_server::OAuthServer::new(&origin, secs).router(app);
    } else if let Guard::Header(name, value) = guard {
        let required = Arc::new((name, value));
        app = app.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let required = Arc::clone(&required);
                async move {
                    let (name, value) = required.as_ref();
                    let present = request
                        .headers()
                        .get(name.as_str())
                        .is_some_and(|given| given.as_bytes() == value.as_bytes());
                    if present {
                        next.run(request).await
                    } else {
                        axum::http::StatusCode::UNAUTHORIZED.into_response()
                    }
                }
            },
        ));
    }
    println!("listening on {origin}/mcp");
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

/// The listening socket the parent handed over as descriptor `fd`.
fn inherited_listener(fd: i32) -> anyhow::Result<tokio::net::TcpListener> {
    use std::os::fd::FromRawFd;
    anyhow::ensure!(fd > 2, "fd:{fd} is one of stdin, stdout and stderr");
    // SAFETY: the descriptor was inherited for this purpose (`Served::start_on` puts the
    // listening socket there); nothing else in this process opened or owns it, so the
    // listener becomes its one owner. A descriptor that is not a socket fails below.
    #[allow(unsafe_code)]
    let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    listener
        .local_addr()
        .with_context(|| format!("descriptor {fd} is not a socket"))?;
    listener.set_nonblocking(true)?;
    Ok(tokio::net::TcpListener::from_std(listener)?)
}
