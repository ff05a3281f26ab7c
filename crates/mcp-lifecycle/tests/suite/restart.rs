//! Always-on servers come back when they die, with backoff, and give up on a crash loop.

use pretty_assertions::assert_eq;
use serde_json::json;

use mcp_lifecycle::{LifecycleError, ServerState};

use super::harness::{Fixture, alive, args};

#[tokio::test]
async fn always_on_server_is_restarted_after_it_crashes() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("fragile", &[("FAKE_MCP_CRASH_AFTER_CALLS", "1")], |s| {
        s.always_on(true)
    })
    .await?;
    assert_eq!(fx.manager.start_always_on_servers().await.len(), 0);
    let crashed = fx
        .manager
        .call_tool("fragile", "echo", args(json!({"text": "x"})))
        .await;
    assert!(crashed.is_err(), "{crashed:?}");
    fx.until("fragile", |fx| {
        fx.started_pids("fragile").len() == 2 && fx.state("fragile") == Some(ServerState::Running)
    })
    .await?;
    let pids = fx.started_pids("fragile");
    assert!(!alive(pids[0]));
    let status = fx.manager.get_all_statuses();
    assert_eq!(
        (status[0].state, status[0].restarts, status[0].always_on),
        (ServerState::Running, 1, true)
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn crash_loop_gives_up_after_the_policy_limit() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("broken", &[("FAKE_MCP_EXIT_AT_START", "1")], |s| {
        s.always_on(true)
    })
    .await?;
    let failures = fx.manager.start_always_on_servers().await;
    assert_eq!(failures.len(), 1);
    fx.until("broken", |fx| {
        matches!(
            fx.last_error("broken"),
            Some(LifecycleError::CrashLoop { .. })
        )
    })
    .await?;
    // The first start, then one restart per allowed failure (max_consecutive_failures = 3).
    assert_eq!(fx.started_pids("broken").len(), 4);
    assert_eq!(fx.state("broken"), Some(ServerState::Error));
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_server_that_is_not_always_on_is_not_restarted() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("fragile", &[("FAKE_MCP_CRASH_AFTER_CALLS", "1")], |s| s)
        .await?;
    let crashed = fx
        .manager
        .call_tool("fragile", "echo", args(json!({"text": "x"})))
        .await;
    assert!(crashed.is_err());
    fx.until("fragile", |fx| {
        fx.state("fragile") == Some(ServerState::Error)
    })
    .await?;
    assert!(matches!(
        fx.last_error("fragile"),
        Some(LifecycleError::Exited { .. })
    ));
    // The next use starts it again (lazily).
    fx.manager
        .call_tool("fragile", "echo", args(json!({"text": "y"})))
        .await
        .ok();
    assert_eq!(fx.started_pids("fragile").len(), 2);
    fx.finish().await;
    Ok(())
}
