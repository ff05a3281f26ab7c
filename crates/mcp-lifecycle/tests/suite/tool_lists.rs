//! Tool lists: refreshed on tools/list_changed, written to the store's tool cache, read back
//! while stopped; a storm of list_changed costs two listings at most, and a listing that finds
//! the same tools keeps the list's `Arc`, writes nothing and tells nobody.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::sync::broadcast;

use mcp_lifecycle::{McpServerManager, ServerConfig, ServerState, ToolListEvent};

use super::harness::{Fixture, args, settings};
use super::in_process::{Lists, config};

#[tokio::test]
async fn list_changed_refreshes_the_tool_list_and_the_tool_cache() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let server = fx.add("fake", &[], |s| s).await?;
    let mut events = fx.manager.subscribe();
    assert_eq!(fx.manager.get_tools("fake").await?.len(), 4);
    let first = events.recv().await?;
    assert_eq!(
        fx.store.tool_cache(&server.id).await?.map(|c| c.hash),
        Some(first.hash.clone())
    );
    fx.manager
        .call_tool("fake", "change_tools", args(json!({})))
        .await?;
    let changed = tokio::time::timeout(Duration::from_secs(20), events.recv()).await??;
    assert_eq!((changed.server.as_str(), changed.tool_count), ("fake", 5));
    let names: Vec<String> = fx
        .manager
        .get_tools("fake")
        .await?
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, vec!["echo", "env", "sleep", "change_tools", "added"]);
    let cache = fx
        .store
        .tool_cache(&server.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no cache"))?;
    assert_eq!((cache.tools.len(), cache.hash), (5, changed.hash));
    fx.finish().await;
    Ok(())
}

fn names(tools: &[mcp_lifecycle::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

/// A second manager over the same store: what it knows comes from the store, not memory.
async fn fresh_manager(fx: &Fixture) -> anyhow::Result<std::sync::Arc<McpServerManager>> {
    let manager = McpServerManager::new(
        server_records::records(fx.store.clone()),
        settings(fx.dir.path()),
    );
    manager.load_configs().await?;
    Ok(manager)
}

#[tokio::test]
async fn cached_tools_answer_from_the_store_while_stopped_and_never_start_the_server()
-> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("fake", &[], |s| s).await?;
    assert_eq!(fx.manager.cached_tools("fake").await?, None);
    assert_eq!(fx.started_pids("fake"), Vec::<u32>::new());
    assert_eq!(fx.state("fake"), Some(ServerState::Stopped));

    let listed = fx.manager.get_tools("fake").await?;
    fx.manager.stop_all().await;
    let manager = fresh_manager(&fx).await?;
    let cached = manager
        .cached_tools("fake")
        .await?
        .ok_or_else(|| anyhow::anyhow!("no cached tools"))?;
    assert_eq!(*cached, *listed);
    assert_eq!(names(&cached), vec!["echo", "env", "sleep", "change_tools"]);
    let state = manager
        .get_all_statuses()
        .into_iter()
        .map(|s| (s.name, s.state))
        .collect::<Vec<_>>();
    assert_eq!(state, vec![("fake".to_owned(), ServerState::Stopped)]);
    assert_eq!(
        fx.started_pids("fake").len(),
        1,
        "cached_tools started the server"
    );
    manager.stop_all().await;
    fx.store.close().await;
    Ok(())
}

/// The tool-list events sent so far, without waiting (missed ones are an error).
fn sent(events: &mut broadcast::Receiver<ToolListEvent>) -> anyhow::Result<Vec<ToolListEvent>> {
    let mut seen = Vec::new();
    loop {
        match events.try_recv() {
            Ok(event) => seen.push(event),
            Err(broadcast::error::TryRecvError::Empty) => return Ok(seen),
            Err(error) => anyhow::bail!("tool-list events: {error}"),
        }
    }
}

/// A server sends 1,000 `notifications/tools/list_changed` at once, its `tools/list` answers
/// held until the last one is out (as a server slow to list would have them): its connection
/// lists once for the first and once more for all the others, and the second listing, which
/// finds the same tools, tells nobody.
///
/// In-process, on tokio's paused clock: no real I/O, so the sleep at the end ends only once
/// every task is idle, that is once every listing asked for is over (the readiness signal).
#[tokio::test]
async fn a_burst_of_list_changed_costs_at_most_two_listings() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    tokio::time::pause();
    let lists = Lists::new(&["echo"]);
    fx.manager
        .add_in_process_server(config("storm"), Arc::new(lists.clone()));
    fx.manager.start_server("storm").await?;
    assert_eq!(lists.listed(), 1, "the start's listing");
    let mut events = fx.manager.subscribe();
    let peer = lists.peer().await?;

    lists.set(&["echo", "added"]);
    lists.answer(false);
    for _ in 0..1000 {
        peer.notify_tool_list_changed().await?;
    }
    lists.answer(true);
    // Paused clock: this returns once nothing is left to run (see above).
    tokio::time::sleep(Duration::from_millis(1)).await;

    let listings = lists.listed() - 1;
    assert!(
        (1..=2).contains(&listings),
        "{listings} listings for a burst of 1,000 list_changed"
    );
    let tools = fx
        .manager
        .cached_tools("storm")
        .await?
        .context("no tools after the burst")?;
    assert_eq!(names(&tools), ["echo", "added"]);
    let counts: Vec<usize> = sent(&mut events)?
        .iter()
        .map(|event| event.tool_count)
        .collect();
    assert_eq!(counts, [2], "one event, the change's");

    fx.manager.stop_all().await;
    tokio::time::resume();
    fx.store.close().await;
    Ok(())
}

/// A server that changes its tools every second for ten minutes: it is listed less and less
/// often (1 s, 2 s, … 60 s between listings), so the storm costs a few listings a minute,
/// not one a second, and the last change still lands.
///
/// In-process, on tokio's paused clock (the sleeps below advance it; nothing is real time).
#[tokio::test]
async fn a_server_that_keeps_changing_its_tools_is_listed_less_and_less_often() -> anyhow::Result<()>
{
    let fx = Fixture::new().await?;
    tokio::time::pause();
    let lists = Lists::new(&["echo"]);
    fx.manager
        .add_in_process_server(config("churn"), Arc::new(lists.clone()));
    fx.manager.start_server("churn").await?;
    let peer = lists.peer().await?;
    let changes = 600;
    for change in 0..changes {
        let tools = format!("echo_{change}");
        lists.set(&["echo", &tools]);
        peer.notify_tool_list_changed().await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // The last change's listing (at most a minute away) lands.
    tokio::time::sleep(Duration::from_secs(61)).await;

    let listings = lists.listed() - 1;
    // 1 + 2 + 4 + 8 + 16 + 32 s, then one a minute: about 15 in ten minutes.
    assert!(
        (5..=20).contains(&listings),
        "{listings} listings for {changes} changes"
    );
    let tools = fx
        .manager
        .cached_tools("churn")
        .await?
        .context("no tools after the churn")?;
    assert_eq!(names(&tools), ["echo", &format!("echo_{}", changes - 1)]);

    fx.manager.stop_all().await;
    tokio::time::resume();
    fx.store.close().await;
    Ok(())
}

/// A server whose list is larger than [`mcp_lifecycle::MAX_LISTED_TOOL_BYTES`] (40 tools
/// of 1 MiB each, in pages of 4: each page well within a line's bound) is refused, not held: its
/// start fails naming the bound.
#[tokio::test]
async fn a_tool_list_past_its_byte_bound_is_refused() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let names: Vec<String> = (0..40)
        .map(|n| format!("{n}{}", "t".repeat(1024 * 1024)))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    fx.manager
        .add_in_process_server(config("huge"), Arc::new(Lists::new(&names).paged(4)));
    let error = fx.manager.start_server("huge").await.err();
    assert!(
        matches!(
            &error,
            Some(mcp_lifecycle::LifecycleError::ToolListTooLong {
                limit: mcp_lifecycle::ListLimit::Bytes(mcp_lifecycle::MAX_LISTED_TOOL_BYTES),
                ..
            })
        ),
        "{error:?}"
    );
    fx.store.close().await;
    Ok(())
}

/// `tools/list_changed` and then the same tools: the manager keeps the list's `Arc` (so the
/// toolsets built on it stay as they are), writes nothing to the store and sends no event (so
/// no `/mcp` session hears `list_changed`). A real change after that still lands: a new
/// list, in the tool cache, announced.
#[tokio::test]
async fn an_unchanged_list_keeps_its_arc_and_a_real_change_still_lands() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    // In-process, with a row of its own in the store so that its tool cache is written.
    let row = fx
        .store
        .create_server(&store::McpServerSpec::new("same", "in-process"))
        .await?;
    let lists = Lists::new(&["echo"]);
    fx.manager.add_in_process_server(
        ServerConfig {
            id: row.id.clone(),
            ..config("same")
        },
        Arc::new(lists.clone()),
    );
    fx.manager.start_server("same").await?;
    let before = fx
        .manager
        .cached_tools("same")
        .await?
        .context("no tools after the start")?;
    assert!(
        fx.store.tool_cache(&row.id).await?.is_some(),
        "the start's listing is cached"
    );
    let mut events = fx.manager.subscribe();
    let queries = fx.store.queries_run();
    let peer = lists.peer().await?;

    // The same tools, twice: the second notification goes once the first one's listing has
    // asked, so the second listing asks only once the first one is over, published included
    // (one listing at a time): when it asks, the first one's outcome can be looked at.
    let within = Duration::from_secs(20);
    peer.notify_tool_list_changed().await?;
    tokio::time::timeout(within, lists.until_listed(2))
        .await
        .context("no tools/list after list_changed within 20 s")??;
    peer.notify_tool_list_changed().await?;
    tokio::time::timeout(within, lists.until_listed(3))
        .await
        .context("no second tools/list within 20 s")??;
    let after = fx.manager.cached_tools("same").await?.context("no tools")?;
    assert!(
        Arc::ptr_eq(&before, &after),
        "an unchanged list got a new Arc"
    );
    assert_eq!(
        sent(&mut events)?,
        Vec::<ToolListEvent>::new(),
        "events for an unchanged list"
    );
    assert_eq!(
        fx.store.queries_run() - queries,
        0,
        "store statements for an unchanged list"
    );

    // A real change still lands.
    lists.set(&["echo", "added"]);
    peer.notify_tool_list_changed().await?;
    let changed = tokio::time::timeout(within, events.recv())
        .await
        .context("no tool-list event within 20 s")??;
    assert_eq!((changed.server.as_str(), changed.tool_count), ("same", 2));
    let now = fx.manager.cached_tools("same").await?.context("no tools")?;
    assert!(!Arc::ptr_eq(&before, &now));
    assert_eq!(names(&now), ["echo", "added"]);
    let cache = fx
        .store
        .tool_cache(&row.id)
        .await?
        .context("no tool cache")?;
    assert_eq!((cache.tools.len(), cache.hash), (2, changed.hash));
    fx.finish().await;
    Ok(())
}
