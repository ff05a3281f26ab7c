//! Health checks: ping, confirmed with tools/list before a server is declared dead.

use pretty_assertions::assert_eq;

use mcp_lifecycle::{Health, LifecycleError, ServerState};

use super::harness::{Fixture, alive};

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
async fn server_answering_neither_ping_nor_tools_list_is_declared_dead() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("wedged", &[("FAKE_MCP_HANG_AFTER_TOOLS_LIST", "1")], |s| s)
        .await?;
    fx.manager.start_server("wedged").await?;
    assert_eq!(fx.manager.check_health("wedged").await?, Health::Dead);
    assert_eq!(fx.state("wedged"), Some(ServerState::Error));
    assert!(matches!(
        fx.last_error("wedged"),
        Some(LifecycleError::Unresponsive { .. })
    ));
    assert!(!alive(fx.started_pids("wedged")[0]));
    fx.finish().await;
    Ok(())
}
