//! Tool lists: refreshed on tools/list_changed, written to the store's tool cache, read back
//! while stopped.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;

use mcp_lifecycle::{McpServerManager, ServerState};

use super::harness::{Fixture, args, settings};

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
