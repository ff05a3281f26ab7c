//! Idle stops: after idleTimeoutMs without use, unless a lease is held or the server is
//! always-on. The sweep takes "now" as an argument, so no test waits for a clock.

use std::time::Duration;

use pretty_assertions::assert_eq;

use mcp_lifecycle::ServerState;

use super::harness::Fixture;

#[tokio::test]
async fn idle_server_stops_after_timeout_when_no_lease() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("idle", &[], |s| s.idle_timeout_ms(60_000)).await?;
    fx.manager.start_server("idle").await?;
    let now = tokio::time::Instant::now();
    let early = fx
        .manager
        .stop_idle_servers_at(now + Duration::from_secs(30))
        .await;
    assert_eq!(early, Vec::<String>::new());
    let late = fx
        .manager
        .stop_idle_servers_at(now + Duration::from_secs(61))
        .await;
    assert_eq!(late, vec!["idle".to_owned()]);
    assert_eq!(fx.state("idle"), Some(ServerState::Stopped));
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn leased_or_always_on_servers_are_not_idle_stopped() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("leased", &[], |s| s.idle_timeout_ms(1_000)).await?;
    fx.add("pinned", &[], |s| s.idle_timeout_ms(1_000).always_on(true))
        .await?;
    fx.manager.start_server("leased").await?;
    fx.manager.start_server("pinned").await?;
    let lease = fx.manager.lease(["leased", "not-configured"]);
    let far = tokio::time::Instant::now() + Duration::from_secs(3600);
    assert_eq!(
        fx.manager.stop_idle_servers_at(far).await,
        Vec::<String>::new()
    );
    drop(lease);
    let far = tokio::time::Instant::now() + Duration::from_secs(3600);
    assert_eq!(
        fx.manager.stop_idle_servers_at(far).await,
        vec!["leased".to_owned()]
    );
    assert_eq!(fx.state("pinned"), Some(ServerState::Running));
    fx.finish().await;
    Ok(())
}
