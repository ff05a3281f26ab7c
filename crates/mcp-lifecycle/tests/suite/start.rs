//! Lazy start, shared start, explicit stop/restart, the handshake BotCraft sends, all pages.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;

use mcp_lifecycle::{LifecycleError, ListLimit, MAX_LIST_PAGES, ServerState};

use super::harness::{Fixture, args, text};
use super::in_process::{Lists, config};

#[tokio::test]
async fn server_starts_lazily_on_first_use() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("fake", &[], |s| s).await?;
    assert_eq!(fx.state("fake"), Some(ServerState::Stopped));
    assert_eq!(fx.started_pids("fake"), Vec::<u32>::new());
    let result = fx
        .manager
        .call_tool("fake", "echo", args(json!({"text": "hi"})))
        .await?;
    assert_eq!(text(&result), "hi");
    assert_eq!(fx.state("fake"), Some(ServerState::Running));
    assert_eq!(fx.started_pids("fake").len(), 1);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn initialize_sends_protocol_2025_11_25_and_client_name_botcraft() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("fake", &[], |s| s).await?;
    fx.manager.start_server("fake").await?;
    let client_lines: Vec<String> = fx
        .log("fake")
        .into_iter()
        .filter(|l| l.starts_with("client "))
        .collect();
    assert_eq!(client_lines, vec!["client botcraft 2025-11-25".to_owned()]);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn concurrent_first_uses_share_one_start() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("slow", &[("FAKE_MCP_START_DELAY_MS", "300")], |s| s)
        .await?;
    let calls = (0..8).map(|_| fx.manager.get_tools("slow"));
    let results = futures::future::join_all(calls).await;
    for result in results {
        assert_eq!(result?.len(), 4);
    }
    assert_eq!(fx.started_pids("slow").len(), 1);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn tools_list_follows_every_page() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add(
        "paged",
        &[("FAKE_MCP_PAGE_SIZE", "1"), ("FAKE_MCP_TOOLS", "x,y")],
        |s| s,
    )
    .await?;
    let names: Vec<String> = fx
        .manager
        .get_tools("paged")
        .await?
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names,
        vec!["echo", "env", "sleep", "change_tools", "x", "y"]
    );
    assert_eq!(
        fx.log("paged")
            .iter()
            .filter(|l| *l == "tools/list")
            .count(),
        6
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_server_that_pages_forever_is_refused_not_followed() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("endless", &[("FAKE_MCP_ENDLESS_PAGES", "1")], |s| s)
        .await?;
    let error = fx.manager.start_server("endless").await.err();
    assert!(
        matches!(
            &error,
            Some(LifecycleError::ToolListTooLong { server, limit: ListLimit::Pages(MAX_LIST_PAGES) })
                if server == "endless"
        ),
        "{error:?}"
    );
    assert_eq!(
        fx.log("endless")
            .iter()
            .filter(|l| *l == "tools/list")
            .count(),
        MAX_LIST_PAGES
    );
    assert_eq!(fx.state("endless"), Some(ServerState::Error));
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn explicit_stop_and_restart_replace_the_process() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("fake", &[], |s| s).await?;
    fx.manager.start_server("fake").await?;
    fx.manager.restart_server("fake").await?;
    let pids = fx.started_pids("fake");
    assert_eq!(pids.len(), 2);
    assert!(
        !super::harness::alive(pids[0]),
        "the first process survived a restart"
    );
    fx.manager.stop_server("fake").await?;
    assert_eq!(fx.state("fake"), Some(ServerState::Stopped));
    assert!(!super::harness::alive(pids[1]));
    let status = fx.manager.get_all_statuses();
    assert_eq!(
        (status[0].pid, status[0].restarts, status[0].tool_count),
        (None, 0, Some(4))
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_start_or_a_call_during_a_stop_waits_for_it_then_starts() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("fake", &[], |s| s).await?;
    fx.manager.start_server("fake").await?;
    // The stop is polled first: it is under way (its process told to end) when the start
    // and the call come.
    let (stopped, started, called) = tokio::join!(
        fx.manager.stop_server("fake"),
        fx.manager.start_server("fake"),
        fx.manager
            .call_tool("fake", "echo", args(json!({"text": "after"}))),
    );
    stopped?;
    started?;
    assert_eq!(text(&called?), "after");
    assert_eq!(fx.state("fake"), Some(ServerState::Running));
    let pids = fx.started_pids("fake");
    assert_eq!(pids.len(), 2, "one start after the stop, shared");
    assert!(!super::harness::alive(pids[0]), "the stopped process lives");
    fx.finish().await;
    Ok(())
}

/// A stop that comes while a start lists the server's tools is not undone by the start
/// (which used to set the server running, its process about to be stopped), and a request
/// that wants the server (waiting for the stop) starts it again; the explicit start the stop
/// took over does not.
#[tokio::test]
async fn a_stop_during_the_starts_listing_holds_and_a_waiting_request_starts_it_again()
-> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let lists = Lists::new(&["echo"]);
    fx.manager
        .add_in_process_server(config("held"), Arc::new(lists.clone()));
    lists.answer(false);
    let manager = Arc::clone(&fx.manager);
    let start = tokio::spawn(async move { manager.start_server("held").await });
    lists.until_listed(1).await?;

    // The start's listing is held: stop the server, and ask for its tools meanwhile.
    let manager = Arc::clone(&fx.manager);
    let stop = tokio::spawn(async move { manager.stop_server("held").await });
    fx.until("held", |fx| fx.state("held") == Some(ServerState::Stopping))
        .await?;
    let manager = Arc::clone(&fx.manager);
    let tools = tokio::spawn(async move { manager.get_tools("held").await });
    // (One runtime thread: the request runs up to its wait for the stop.)
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    lists.answer(true);

    stop.await??;
    // The explicit start, taken over by the stop, does not undo it: it says so.
    let started = start.await?;
    assert!(
        matches!(&started, Err(LifecycleError::StartCancelled { server }) if server == "held"),
        "{started:?}"
    );
    let names: Vec<String> = tools
        .await??
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert_eq!(names, vec!["echo"]);
    assert_eq!(lists.listed(), 2, "started again after the stop");
    assert_eq!(fx.state("held"), Some(ServerState::Running));
    fx.finish().await;
    Ok(())
}

/// A server removed and another added under its name between two reads of the records: the
/// old one's process is stopped and nothing of it (tools, process) serves the new one.
#[tokio::test]
async fn a_server_replaced_under_the_same_name_keeps_nothing_of_the_old_one() -> anyhow::Result<()>
{
    let fx = Fixture::new().await?;
    let old = fx
        .add("x", &[("FAKE_MCP_TOOLS", "old_tool")], |s| s)
        .await?;
    fx.manager.start_server("x").await?;
    let old_pid = fx.pid("x").ok_or_else(|| anyhow::anyhow!("no pid"))?;

    fx.store.delete_server(&old.id).await?;
    fx.add("x", &[("FAKE_MCP_TOOLS", "new_tool")], |s| s)
        .await?;

    assert!(!super::harness::alive(old_pid), "the old server still runs");
    let names: Vec<String> = fx
        .manager
        .get_tools("x")
        .await?
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert!(names.contains(&"new_tool".to_owned()), "{names:?}");
    assert!(!names.contains(&"old_tool".to_owned()), "{names:?}");
    fx.finish().await;
    Ok(())
}
