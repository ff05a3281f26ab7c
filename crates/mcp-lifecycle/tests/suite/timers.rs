//! Every lifecycle timer on tokio's paused clock, through the real loop wiring: the health
//! loop's interval, idle stops after idleTimeoutMs (not with a call in flight, not under a
//! lease), and the restart backoff of always-on servers.
//!
//! The servers run in-process (`in_process::Probe`): a child's pipe is real I/O, during which
//! a paused runtime jumps to its next timer and fires timeouts that never elapsed. The store
//! (a SQLite worker thread: real I/O too) is set up before the clock is paused, and each test
//! resumes the clock before closing it.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use tokio::time::Instant;

use mcp_lifecycle::{LifecycleError, RestartPolicy, ServerState};

use super::harness::{Fixture, args};
use super::in_process::{Probe, config};

const INTERVAL: Duration = Duration::from_secs(10);

async fn fixture(restart: RestartPolicy) -> anyhow::Result<Fixture> {
    Fixture::with(|settings| {
        settings.health_interval = INTERVAL;
        settings.ping_timeout = Duration::from_secs(5);
        settings.restart = restart;
    })
    .await
}

/// Wait, on the paused clock, until `server` is in `state`; when it got there.
async fn until_state(fx: &Fixture, server: &str, state: ServerState) -> anyhow::Result<Instant> {
    let mut states = fx.manager.watch_state(server)?;
    tokio::time::timeout(
        Duration::from_secs(24 * 3600),
        states.wait_for(|s| *s == state),
    )
    .await
    .map_err(|_| anyhow::anyhow!("{server} never reached {state}"))??;
    Ok(Instant::now())
}

fn pause() {
    tokio::time::pause();
}

/// tokio's timers fire on whole milliseconds, rounding a deadline up: a delay on the paused
/// clock is observed as itself or at most one tick more.
const TICK: Duration = Duration::from_millis(1);

fn assert_delay(actual: Duration, expected: Duration, what: &str) {
    assert!(
        actual >= expected && actual <= expected + TICK,
        "{what}: {actual:?}, expected {expected:?} (+ at most {TICK:?})"
    );
}

fn assert_delays(actual: &[Duration], expected: &[Duration], what: &str) {
    assert_eq!(
        actual.len(),
        expected.len(),
        "{what}: {actual:?} vs {expected:?}"
    );
    for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert_delay(*a, *e, &format!("{what} #{index} in {actual:?}"));
    }
}

async fn finish(fx: Fixture) {
    fx.manager.stop_all().await;
    tokio::time::resume();
    fx.store.close().await;
}

#[tokio::test]
async fn health_loop_pings_a_running_server_every_interval() -> anyhow::Result<()> {
    let fx = fixture(RestartPolicy::default()).await?;
    pause();
    let probe = Probe::new(0);
    let mut pinned = config("pinned");
    pinned.always_on = true;
    fx.manager
        .add_in_process_server(pinned, Arc::new(probe.clone()));
    fx.manager.start_server("pinned").await?;
    let health = fx.manager.start_health_check_loop();
    // Ticks at 0, 10, 20, 30 s; the clock stops between two ticks.
    tokio::time::sleep(INTERVAL * 3 + INTERVAL / 2).await;
    assert_eq!(probe.pings(), 4);
    tokio::time::sleep(INTERVAL).await;
    assert_eq!(probe.pings(), 5);
    fx.manager.stop_all().await;
    health.await?; // the loop ends with stop_all
    tokio::time::sleep(INTERVAL * 5).await;
    assert_eq!(probe.pings(), 5);
    finish(fx).await;
    Ok(())
}

#[tokio::test]
async fn idle_server_stops_on_the_first_tick_after_its_idle_timeout() -> anyhow::Result<()> {
    let fx = fixture(RestartPolicy::default()).await?;
    pause();
    let probe = Probe::new(0);
    fx.manager
        .add_in_process_server(config("idle"), Arc::new(probe.clone()));
    let used_at = Instant::now();
    fx.manager
        .call_tool("idle", "echo", args(serde_json::json!({})))
        .await?;
    let _health = fx.manager.start_health_check_loop();
    let stopped_at = until_state(&fx, "idle", ServerState::Stopped).await?;
    // idleTimeoutMs = 60 s; ticks every 10 s from the use on.
    assert_delay(stopped_at - used_at, Duration::from_secs(60), "idle stop");
    // Ticks at 0 … 60 s each pinged it while it ran: the loop did the stop.
    assert_eq!(probe.pings(), 7);
    assert_eq!(probe.starts().len(), 1);
    finish(fx).await;
    Ok(())
}

#[tokio::test]
async fn call_in_flight_blocks_the_idle_stop_until_it_ends() -> anyhow::Result<()> {
    let fx = fixture(RestartPolicy::default()).await?;
    pause();
    let probe = Probe::new(0);
    fx.manager
        .add_in_process_server(config("busy"), Arc::new(probe.clone()));
    fx.manager.start_server("busy").await?;
    let _health = fx.manager.start_health_check_loop();
    let manager = fx.manager.clone();
    let call = tokio::spawn(async move { manager.call_tool("busy", "hold", None).await });
    probe.until_holding().await?;
    tokio::time::sleep(Duration::from_secs(305)).await;
    assert_eq!(fx.state("busy"), Some(ServerState::Running));
    probe.release();
    let answered = call.await??;
    let released_at = Instant::now();
    assert_eq!(answered.is_error, Some(false));
    let stopped_at = until_state(&fx, "busy", ServerState::Stopped).await?;
    // The call's end counts as use: the first tick at or after 60 s later (305 + 60 → 370).
    assert_delay(
        stopped_at - released_at,
        Duration::from_secs(65),
        "idle stop",
    );
    finish(fx).await;
    Ok(())
}

#[tokio::test]
async fn lease_blocks_the_idle_stop_until_it_is_dropped() -> anyhow::Result<()> {
    let fx = fixture(RestartPolicy::default()).await?;
    let probe = Probe::new(0);
    fx.manager
        .add_in_process_server(config("leased"), Arc::new(probe.clone()));
    let lease = fx.manager.lease(["leased"]);
    pause();
    fx.manager.start_server("leased").await?;
    let _health = fx.manager.start_health_check_loop();
    tokio::time::sleep(Duration::from_secs(605)).await;
    assert_eq!(fx.state("leased"), Some(ServerState::Running));
    drop(lease);
    let released_at = Instant::now();
    let stopped_at = until_state(&fx, "leased", ServerState::Stopped).await?;
    // Dropping the lease counts as use: the first tick at or after 60 s later (665 → 670).
    assert_delay(
        stopped_at - released_at,
        Duration::from_secs(65),
        "idle stop",
    );
    finish(fx).await;
    Ok(())
}

fn backoff(max_consecutive_failures: u32) -> RestartPolicy {
    RestartPolicy {
        base: Duration::from_millis(100),
        max: Duration::from_millis(250),
        jitter: 0.0,
        max_consecutive_failures,
        stable_after: Duration::from_secs(3600),
    }
}

/// The delay before each restart.
fn gaps(starts: &[Instant]) -> Vec<Duration> {
    starts.windows(2).map(|w| w[1] - w[0]).collect()
}

fn ms(values: &[u64]) -> Vec<Duration> {
    values.iter().map(|v| Duration::from_millis(*v)).collect()
}

#[tokio::test]
async fn always_on_restarts_back_off_exponentially_up_to_the_cap() -> anyhow::Result<()> {
    let fx = fixture(backoff(5)).await?;
    pause();
    let probe = Probe::new(3);
    let mut pinned = config("flaky");
    pinned.always_on = true;
    fx.manager
        .add_in_process_server(pinned, Arc::new(probe.clone()));
    let failures = fx.manager.start_always_on_servers().await;
    assert_eq!(failures.len(), 1);
    until_state(&fx, "flaky", ServerState::Running).await?;
    // Delays 100, 200, then 400 capped at 250 ms.
    assert_delays(
        &gaps(&probe.starts()),
        &ms(&[100, 200, 250]),
        "restart delay",
    );
    let status = fx.manager.get_all_statuses();
    assert_eq!(
        (status[0].state, status[0].restarts),
        (ServerState::Running, 3)
    );
    finish(fx).await;
    Ok(())
}

#[tokio::test]
async fn crash_loop_gives_up_after_the_policy_limit_on_paused_time() -> anyhow::Result<()> {
    let fx = fixture(backoff(3)).await?;
    pause();
    let probe = Probe::new(usize::MAX);
    let mut pinned = config("broken");
    pinned.always_on = true;
    fx.manager
        .add_in_process_server(pinned, Arc::new(probe.clone()));
    fx.manager.start_always_on_servers().await;
    let mut states = fx.manager.watch_state("broken")?;
    tokio::time::timeout(Duration::from_secs(3600), async {
        while !matches!(
            fx.last_error("broken"),
            Some(LifecycleError::CrashLoop { .. })
        ) {
            states.changed().await?;
        }
        anyhow::Ok(())
    })
    .await??;
    assert_delays(
        &gaps(&probe.starts()),
        &ms(&[100, 200, 250]),
        "restart delay",
    );
    // Nothing more is tried, however long we wait.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(probe.starts().len(), 4);
    assert_eq!(fx.state("broken"), Some(ServerState::Error));
    finish(fx).await;
    Ok(())
}
