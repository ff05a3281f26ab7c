//! `serve`'s end, on SIGTERM or SIGINT: unready first (a load balancer moves away), then the
//! chat streams drained within a deadline, running turns cancelled past it, every MCP server
//! stopped within its own deadline, the store closed and the traces flushed.

use std::sync::Arc;
use std::time::Duration;

use mcp_lifecycle::McpServerManager;
use tokio_util::sync::CancellationToken;

use super::{ServeArgs, flush_traces, shutdown_signal};

/// What runs while BotCraft serves, handed over for the shutdown.
pub(super) struct Running {
    /// Cancelled: `/api/health/ready` answers 503.
    pub draining: CancellationToken,
    /// Cancelled: no new connection is accepted.
    pub stop_accepting: CancellationToken,
    /// Cancelled: every `/mcp` session ends.
    pub sessions: CancellationToken,
    /// Cancelled: running chat turns end.
    pub turns: CancellationToken,
    pub server: tokio::task::JoinHandle<std::io::Result<()>>,
    pub manager: Arc<McpServerManager>,
    pub health_loop: tokio::task::JoinHandle<()>,
    pub store: store::Store,
    pub telemetry: Option<observability::Telemetry>,
}

/// Drain and stop, each step within its deadline (`--unready-seconds`, `--drain-seconds`,
/// `--stop-seconds`); a second signal ends the unready wait.
pub(super) async fn drain_and_stop(args: &ServeArgs, running: Running) -> anyhow::Result<()> {
    let Running {
        draining,
        stop_accepting,
        sessions,
        turns,
        mut server,
        manager,
        health_loop,
        store,
        telemetry,
    } = running;
    // Not ready from now on; still serving for a while, so a load balancer that polls the
    // readiness sends its traffic elsewhere before connections are refused.
    draining.cancel();
    if args.unready_seconds > 0 {
        let unready = Duration::from_secs(args.unready_seconds);
        // Listened to before the message says a second signal ends the wait.
        let second_signal = shutdown_signal();
        eprintln!(
            "botcraft: draining: /api/health/ready answers 503; serving {unready:?} more (a second signal ends the wait)"
        );
        // The wait is the point (`--unready-seconds`, 0 for none): traffic moves away while
        // this replica still answers; a second signal cuts it short.
        tokio::select! {
            () = tokio::time::sleep(unready) => {}
            () = second_signal => {}
        }
    }
    let drain = Duration::from_secs(args.drain_seconds);
    eprintln!("botcraft: shutting down; draining chat streams (up to {drain:?})");
    stop_accepting.cancel();
    sessions.cancel();
    // A server still in `initialize` (up to its initTimeout) would hold its caller's
    // request, and so the drain: abandon the starts now.
    manager.begin_shutdown();
    if tokio::time::timeout(drain, &mut server).await.is_err() {
        eprintln!("botcraft: drain deadline passed; cancelling running turns");
        turns.cancel();
        if tokio::time::timeout(Duration::from_secs(5), &mut server)
            .await
            .is_err()
        {
            server.abort();
        }
    }
    let stop = Duration::from_secs(args.stop_seconds);
    eprintln!("botcraft: stopping MCP servers (up to {stop:?})");
    if tokio::time::timeout(stop, manager.stop_all())
        .await
        .is_err()
    {
        eprintln!("botcraft: some MCP servers did not stop within {stop:?}");
    }
    health_loop.abort();
    store.close().await;
    flush_traces(telemetry).await;
    eprintln!("botcraft: stopped");
    Ok(())
}
