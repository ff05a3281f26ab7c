//! Health checks: ping, confirmed with tools/list before a server is declared dead.

use std::time::Duration;

use anyhow::Context;
use pretty_assertions::assert_eq;
use serde_json::json;

use mcp_lifecycle::{Health, LifecycleError, ServerState};

use super::harness::{Fixture, alive, args, text};

#[tokio::test]
async fn server_that_ignores_ping_but_lists_tools_is_kept() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("deaf", &[("FAKE_MCP_IGNORE_PING", "1")], |s| s)
        .await?;
    fx.manager.start_server("deaf").await?;
    assert_eq!(fx.manager.check_health("deaf").await?, Health::PingIgnored);
    assert_eq!(fx.state("deaf"), Some(ServerState::Running));
    assert_eq!(fx.started_pids("deaf").len(), 1);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn healthy_server_answers_ping() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("fine", &[], |s| s).await?;
    assert_eq!(fx.manager.check_health("fine").await?, Health::NotRunning);
    fx.manager.start_server("fine").await?;
    assert_eq!(fx.manager.check_health("fine").await?, Health::Healthy);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn server_wedged_during_start_is_left_in_error_with_no_process() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("wedged", &[("FAKE_MCP_HANG_AFTER_INIT", "1")], |s| {
        s.init_timeout(500)
    })
    .await?;
    let error = fx.manager.start_server("wedged").await;
    assert!(
        matches!(
            &error,
            Err(LifecycleError::Request {
                method: "tools/list",
                ..
            })
        ),
        "{error:?}"
    );
    assert_eq!(fx.state("wedged"), Some(ServerState::Error));
    assert!(!alive(fx.started_pids("wedged")[0]));
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn server_answering_neither_ping_nor_tools_list_is_declared_dead_and_restarted()
-> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("wedged", &[("FAKE_MCP_HANG_AFTER_TOOLS_LIST", "1")], |s| s)
        .await?;
    fx.manager.start_server("wedged").await?;
    let first = fx.started_pids("wedged")[0];
    assert_eq!(fx.manager.check_health("wedged").await?, Health::Dead);
    assert_eq!(fx.state("wedged"), Some(ServerState::Error));
    assert_eq!(
        fx.last_error("wedged").map(|error| error.to_string()),
        Some(
            "MCP server \"wedged\" did not answer within 1s (ping, then tools/list); it was stopped and is being restarted"
                .to_owned()
        )
    );
    assert!(!alive(first));
    // Lazy as it is, it is started again (and wedges again after its listing).
    fx.until("wedged", |fx| {
        fx.started_pids("wedged").len() == 2 && fx.state("wedged") == Some(ServerState::Running)
    })
    .await?;
    fx.finish().await;
    Ok(())
}

/// `kill -STOP pid`: the server freezes, as a stopped or swapped-out process does.
fn freeze(pid: u32) -> anyhow::Result<()> {
    let status = std::process::Command::new("kill")
        .args(["-STOP", &pid.to_string()])
        .status()?;
    anyhow::ensure!(status.success(), "kill -STOP {pid}: {status}");
    Ok(())
}

#[tokio::test]
async fn a_stopped_server_fails_the_call_naming_it_and_the_wait_and_is_restarted()
-> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("frozen", &[], |s| s.timeout(1000)).await?;
    fx.manager.start_server("frozen").await?;
    let first = fx.pid("frozen").context("a pid")?;
    freeze(first)?;
    let error = fx
        .manager
        .call_tool("frozen", "echo", args(json!({"text": "hello?"})))
        .await
        .err()
        .context("a frozen server answered")?;
    assert_eq!(
        error.to_string(),
        "MCP server \"frozen\" did not answer within 1.5s (tools/call \"echo\", then ping); it was stopped and is being restarted"
    );
    assert!(
        matches!(&error, LifecycleError::Unresponsive { server, waited, asked }
            if server == "frozen" && *waited == Duration::from_millis(1500)
                && asked == "tools/call \"echo\", then ping"),
        "{error:?}"
    );
    fx.until("frozen", |fx| {
        fx.started_pids("frozen").len() == 2 && fx.state("frozen") == Some(ServerState::Running)
    })
    .await?;
    assert!(!alive(first), "the frozen process is gone");
    let result = fx
        .manager
        .call_tool("frozen", "echo", args(json!({"text": "back"})))
        .await?;
    assert_eq!(text(&result), "back");
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_slow_tool_on_a_live_server_is_a_timeout_and_the_server_stays() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("slow", &[], |s| s.timeout(300)).await?;
    let error = fx
        .manager
        .call_tool("slow", "sleep", args(json!({"ms": 60000})))
        .await
        .err()
        .context("the sleep answered")?;
    assert_eq!(
        error.to_string(),
        "tool \"sleep\" on MCP server \"slow\" timed out after 300ms"
    );
    assert_eq!(fx.state("slow"), Some(ServerState::Running));
    assert_eq!(fx.started_pids("slow").len(), 1);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_call_in_flight_when_health_finds_the_server_dead_says_why() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("frozen", &[], |s| s.timeout(60_000)).await?;
    fx.manager.start_server("frozen").await?;
    let pid = fx.pid("frozen").context("a pid")?;
    let manager = fx.manager.clone();
    let call = tokio::spawn(async move {
        manager
            .call_tool("frozen", "sleep", args(json!({"ms": 60000})))
            .await
    });
    // The server logs each request as it reads it: the call is in flight.
    let log = fx.log_path("frozen");
    tokio::time::timeout(Duration::from_secs(20), async {
        while !std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .any(|line| line == "tools/call")
        {
            tokio::task::yield_now().await;
        }
    })
    .await
    .context("the call never reached the server")?;
    freeze(pid)?;
    assert_eq!(fx.manager.check_health("frozen").await?, Health::Dead);
    let error = call.await?.err().context("the frozen call answered")?;
    assert_eq!(
        error.to_string(),
        "MCP server \"frozen\" did not answer within 1s (ping, then tools/list); it was stopped and is being restarted"
    );
    fx.finish().await;
    Ok(())
}
