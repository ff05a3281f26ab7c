//! Tools known before anyone asks: every server never listed for its config is started,
//! listed and stopped in the background; a change of config lists it again; a `${VAR}` of an
//! unset variable does not stop a listing; a failing server is tried a bounded number of
//! times; a running server is asked again on demand.

use std::time::Duration;

use anyhow::Context;
use pretty_assertions::assert_eq;

use mcp_lifecycle::{ServerState, ToolListEvent};

use super::harness::Fixture;

/// The next tool-list events of `servers`, one each, whatever their order (bounded).
async fn listed(
    events: &mut tokio::sync::broadcast::Receiver<ToolListEvent>,
    servers: &[&str],
) -> anyhow::Result<Vec<ToolListEvent>> {
    let mut seen: Vec<ToolListEvent> = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while seen.len() < servers.len() {
            let event = events.recv().await.context("the event channel closed")?;
            if servers.contains(&event.server.as_str())
                && !seen.iter().any(|e| e.server == event.server)
            {
                seen.push(event);
            }
        }
        anyhow::Ok(())
    })
    .await
    .with_context(|| format!("{servers:?} were not all listed within 20 s"))??;
    seen.sort_by(|a, b| a.server.cmp(&b.server));
    Ok(seen)
}

#[tokio::test]
async fn a_server_never_listed_is_started_listed_and_stopped_in_the_background()
-> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    // A lazy server, and one whose config asks for a variable nobody set.
    let lazy = fx.add("lazy", &[], |s| s).await?;
    fx.add("unset", &[("K", "${MISSING_KEY}")], |s| s).await?;
    assert_eq!(fx.manager.tools_listed("lazy").await?, false);
    let mut unlisted = fx.manager.unlisted_servers().await;
    unlisted.sort();
    assert_eq!(unlisted, ["lazy", "unset"]);
    let mut events = fx.manager.subscribe();
    fx.manager.list_unlisted();
    let counts: Vec<(String, usize)> = listed(&mut events, &["lazy", "unset"])
        .await?
        .into_iter()
        .map(|event| (event.server, event.tool_count))
        .collect();
    assert_eq!(counts, [("lazy".to_owned(), 4), ("unset".to_owned(), 4)]);
    fx.until("lazy", |fx| fx.state("lazy") == Some(ServerState::Stopped))
        .await?;
    fx.until("unset", |fx| {
        fx.state("unset") == Some(ServerState::Stopped)
    })
    .await?;
    assert_eq!(fx.started_pids("lazy").len(), 1);
    assert!(fx.manager.unlisted_servers().await.is_empty());
    let cached = fx
        .store
        .tool_cache(&lazy.id)
        .await?
        .context("a tool cache")?;
    assert_eq!(cached.tools.len(), 4);
    let statuses = fx.manager.get_all_statuses();
    assert!(
        statuses
            .iter()
            .all(|status| status.tools_listed == Some(true)),
        "{statuses:?}"
    );
    // Another run finds nothing to do: nothing starts.
    fx.manager.list_unlisted();
    assert_eq!(fx.started_pids("lazy").len(), 1);
    // A change of config lists it again.
    let spec = store::McpServerSpec::new("lazy", lazy.command.clone())
        .env("FAKE_MCP_LOG", fx.log_path("lazy").display().to_string())
        .instructions("changed");
    fx.store.update_server(&lazy.id, &spec).await?;
    fx.manager.load_configs().await?;
    assert_eq!(fx.manager.unlisted_servers().await, ["lazy"]);
    fx.manager.list_unlisted();
    listed(&mut events, &["lazy"]).await?;
    fx.until("lazy", |fx| fx.state("lazy") == Some(ServerState::Stopped))
        .await?;
    assert_eq!(fx.started_pids("lazy").len(), 2);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_server_that_cannot_start_is_tried_a_bounded_number_of_times() -> anyhow::Result<()> {
    let fx = Fixture::with(|settings| {
        settings.listing = mcp_lifecycle::listing::ListingSettings {
            enabled: true,
            concurrency: 2,
            attempts: 3,
        };
    })
    .await?;
    fx.add("broken", &[("FAKE_MCP_EXIT_AT_START", "3")], |s| s)
        .await?;
    fx.manager.list_unlisted();
    // Each try logs its start; the third is the last. The run holds its lock until done:
    // a second run waits for it, and then finds the server still unlisted and tries again.
    let mut states = fx.manager.watch_state("broken")?;
    tokio::time::timeout(Duration::from_secs(20), async {
        while fx.started_pids("broken").len() < 3 {
            states.changed().await?;
        }
        anyhow::Ok(())
    })
    .await
    .context("three tries within 20 s")??;
    assert_eq!(fx.manager.tools_listed("broken").await?, false);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_running_server_is_asked_again_on_demand_and_keeps_running() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("running", &[], |s| s).await?;
    fx.manager.start_server("running").await?;
    assert_eq!(fx.manager.refresh_tools("running").await?, 4);
    assert_eq!(fx.state("running"), Some(ServerState::Running));
    let lists = fx
        .log("running")
        .iter()
        .filter(|line| *line == "tools/list")
        .count();
    assert_eq!(lists, 2, "one at start, one on demand");
    // A stopped one is started, listed and stopped again.
    fx.manager.stop_server("running").await?;
    assert_eq!(fx.manager.refresh_tools("running").await?, 4);
    assert_eq!(fx.state("running"), Some(ServerState::Stopped));
    fx.finish().await;
    Ok(())
}

/// A listing starts a server whose `${VAR}` is unset without that variable; a call that joins
/// that start is not served by it (it fails as it would have without the listing), and the
/// listing's process is stopped once listed.
#[tokio::test]
async fn a_listings_process_without_its_variables_serves_no_call() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add(
        "unset",
        &[
            ("MODE", "${MISSING_KEY}"),
            ("FAKE_MCP_START_DELAY_MS", "300"),
        ],
        |s| s,
    )
    .await?;
    let manager = std::sync::Arc::clone(&fx.manager);
    let listing = tokio::spawn(async move { manager.refresh_tools("unset").await });
    // (One runtime thread: the listing runs up to its start's wait.)
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        fx.state("unset"),
        Some(ServerState::Starting),
        "{:?}",
        fx.last_error("unset")
    );
    let call = fx
        .manager
        .call_tool(
            "unset",
            "env",
            super::harness::args(serde_json::json!({"name": "MODE"})),
        )
        .await;
    assert!(
        matches!(&call, Err(mcp_lifecycle::LifecycleError::NotConfigured { variable, .. }) if variable == "MISSING_KEY"),
        "{call:?}"
    );
    assert_eq!(listing.await??, 4);
    fx.until("unset", |fx| {
        fx.state("unset") == Some(ServerState::Stopped)
    })
    .await?;
    fx.finish().await;
    Ok(())
}
