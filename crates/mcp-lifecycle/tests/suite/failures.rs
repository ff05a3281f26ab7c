//! Servers that misbehave at start or during a call: typed errors with what they left behind.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;

use mcp_lifecycle::{ExitInfo, LifecycleError, ServerState};

use super::harness::{Fixture, alive, args, text};

#[tokio::test]
async fn initialize_timeout_is_a_hard_cap_and_leaves_no_process() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("mute", &[("FAKE_MCP_NO_INITIALIZE", "1")], |s| {
        s.init_timeout(300)
    })
    .await?;
    let error = fx.manager.start_server("mute").await;
    match error {
        Err(LifecycleError::InitTimeout {
            server, timeout, ..
        }) => {
            assert_eq!(
                (server.as_str(), timeout),
                ("mute", Duration::from_millis(300))
            );
        }
        other => panic!("expected InitTimeout, got {other:?}"),
    }
    assert_eq!(fx.state("mute"), Some(ServerState::Error));
    let pids = fx.started_pids("mute");
    assert_eq!(pids.len(), 1);
    assert!(
        !alive(pids[0]),
        "a server that timed out in initialize is still alive"
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn exit_before_initialize_reports_exit_status_and_the_last_200_stderr_lines()
-> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    // 5000 lines (~90 KiB) overflow a pipe buffer: the child blocks unless stderr is drained.
    fx.add(
        "dies",
        &[
            ("FAKE_MCP_STDERR_FLOOD", "5000"),
            ("FAKE_MCP_EXIT_AT_START", "7"),
        ],
        |s| s,
    )
    .await?;
    let error = fx.manager.start_server("dies").await;
    let mut expected_tail: Vec<String> = (4802..=5000).map(|i| format!("flood line {i}")).collect();
    expected_tail.push("fake server exiting at start with 7".to_owned());
    match error {
        Err(LifecycleError::InitFailed {
            server,
            exit,
            stderr_tail,
            ..
        }) => {
            assert_eq!(server, "dies");
            assert_eq!(
                exit,
                Some(ExitInfo {
                    code: Some(7),
                    signal: None
                })
            );
            assert_eq!(stderr_tail, expected_tail);
        }
        other => panic!("expected InitFailed, got {other:?}"),
    }
    assert_eq!(fx.manager.stderr_tail("dies")?, expected_tail);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn stderr_flood_does_not_block_a_running_server() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("noisy", &[("FAKE_MCP_STDERR_FLOOD", "20000")], |s| s)
        .await?;
    let result = fx
        .manager
        .call_tool("noisy", "echo", args(json!({"text": "still here"})))
        .await?;
    assert_eq!(text(&result), "still here");
    assert!(fx.manager.stderr_tail("noisy")?.len() <= 200);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn garbage_on_stdout_is_skipped() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("garbage", &[("FAKE_MCP_GARBAGE_STDOUT", "1")], |s| s)
        .await?;
    let result = fx
        .manager
        .call_tool("garbage", "echo", args(json!({"text": "ok"})))
        .await?;
    assert_eq!(text(&result), "ok");
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn call_timeout_is_typed_and_sends_cancelled() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("slow", &[], |s| s.timeout(200)).await?;
    let error = fx
        .manager
        .call_tool("slow", "sleep", args(json!({"ms": 60000})))
        .await;
    match error {
        Err(LifecycleError::CallTimeout {
            server,
            tool,
            timeout,
        }) => {
            assert_eq!(
                (server.as_str(), tool.as_str(), timeout),
                ("slow", "sleep", Duration::from_millis(200))
            );
        }
        other => panic!("expected CallTimeout, got {other:?}"),
    }
    // Requests are read in order: once this echo is answered, the cancel was received.
    fx.manager
        .call_tool("slow", "echo", args(json!({"text": "after"})))
        .await?;
    let log = fx.log("slow");
    let cancel = log.iter().position(|l| l == "notifications/cancelled");
    let last_call = log.iter().rposition(|l| l == "tools/call");
    assert!(
        matches!((cancel, last_call), (Some(c), Some(e)) if c < e),
        "{log:?}"
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn unknown_server_is_a_typed_error() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let error = fx.manager.call_tool("nope", "echo", None).await;
    assert!(
        matches!(&error, Err(LifecycleError::UnknownServer { server }) if server == "nope"),
        "{error:?}"
    );
    fx.finish().await;
    Ok(())
}

/// A server that failed to start is left alone by listings and calls until its backoff has
/// passed: they fail at once, saying how long is left; an explicit start tries again.
#[tokio::test]
async fn a_failed_start_backs_off_for_listings_and_calls_not_for_explicit_starts()
-> anyhow::Result<()> {
    let fx = Fixture::with(|settings| {
        settings.restart.base = Duration::from_secs(600);
        settings.restart.max = Duration::from_secs(600);
    })
    .await?;
    fx.add("dies", &[("FAKE_MCP_EXIT_AT_START", "7")], |s| s)
        .await?;
    let first = fx.manager.get_tools("dies").await;
    assert!(
        matches!(first, Err(LifecycleError::InitFailed { .. })),
        "{first:?}"
    );
    for attempt in 0..5 {
        let listed = fx.manager.get_tools("dies").await;
        let called = fx.manager.call_tool("dies", "echo", None).await;
        for result in [listed.map(|_| ()), called.map(|_| ())] {
            match result {
                Err(LifecycleError::BackingOff {
                    server,
                    retry_in_ms,
                    failures,
                    cause,
                }) => {
                    assert_eq!((server.as_str(), failures), ("dies", 1), "{attempt}");
                    assert!(
                        retry_in_ms > 500_000 && retry_in_ms <= 600_000,
                        "{retry_in_ms}"
                    );
                    assert!(cause.contains("dies"), "{cause}");
                }
                other => panic!("attempt {attempt}: expected BackingOff, got {other:?}"),
            }
        }
    }
    assert_eq!(
        fx.started_pids("dies").len(),
        1,
        "listings and calls never restarted it"
    );
    let explicit = fx.manager.start_server("dies").await;
    assert!(
        matches!(explicit, Err(LifecycleError::InitFailed { .. })),
        "{explicit:?}"
    );
    assert_eq!(
        fx.started_pids("dies").len(),
        2,
        "an explicit start tries again"
    );
    fx.finish().await;
    Ok(())
}
