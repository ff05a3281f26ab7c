//! The catalog: refreshed on tools/list_changed, written to the store's tool cache, and cut
//! to a bot's bindings.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;

use mcp_lifecycle::{LifecycleError, McpServerManager, ServerState};
use store::{BindingSpec, BotSpec};

use super::harness::{Fixture, args, settings};

#[tokio::test]
async fn list_changed_refreshes_the_catalog_and_the_tool_cache() -> anyhow::Result<()> {
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

#[tokio::test]
async fn bot_gets_the_tools_of_its_enabled_bindings_cut_to_the_filter() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let one = fx.add("one", &[], |s| s).await?;
    let two = fx.add("two", &[], |s| s).await?;
    let bot = fx.store.create_bot(&BotSpec::new("b", "m")).await?;
    let filtered = BindingSpec {
        tool_filter: vec!["echo".into(), "env".into()],
        pinned_tools: vec!["echo".into()],
        ..BindingSpec::default()
    };
    fx.store.bind(&bot.id, &one.id, &filtered).await?;
    fx.store
        .bind(
            &bot.id,
            &two.id,
            &BindingSpec {
                enabled: false,
                ..BindingSpec::default()
            },
        )
        .await?;
    let tools = fx.manager.get_tools_for_bot(&bot.id).await?;
    let summary: Vec<(String, String, bool)> = tools
        .tools
        .iter()
        .map(|t| (t.server.clone(), t.tool.name.to_string(), t.pinned))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("one".into(), "echo".into(), true),
            ("one".into(), "env".into(), false)
        ]
    );
    assert_eq!(tools.failures.len(), 0);
    assert_eq!(fx.started_pids("two"), Vec::<u32>::new());
    fx.finish().await;
    Ok(())
}

fn names(tools: &[mcp_lifecycle::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

/// A second manager over the same store: what it knows comes from the store, not memory.
async fn fresh_manager(fx: &Fixture) -> anyhow::Result<std::sync::Arc<McpServerManager>> {
    let manager = McpServerManager::new(fx.store.clone(), settings(fx.dir.path()));
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

#[tokio::test]
async fn cached_tools_for_bot_cuts_to_bindings_and_reports_servers_never_listed()
-> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let one = fx.add("one", &[], |s| s).await?;
    let two = fx.add("two", &[], |s| s).await?;
    let three = fx.add("three", &[], |s| s).await?;
    let bot = fx.store.create_bot(&BotSpec::new("b", "m")).await?;
    let filtered = BindingSpec {
        tool_filter: vec!["echo".into(), "env".into()],
        pinned_tools: vec!["echo".into()],
        ..BindingSpec::default()
    };
    fx.store.bind(&bot.id, &one.id, &filtered).await?;
    fx.store
        .bind(&bot.id, &two.id, &BindingSpec::default())
        .await?;
    let disabled = BindingSpec {
        enabled: false,
        ..BindingSpec::default()
    };
    fx.store.bind(&bot.id, &three.id, &disabled).await?;
    fx.manager.get_tools("one").await?;
    fx.manager.get_tools("three").await?;
    fx.manager.stop_all().await;

    let manager = fresh_manager(&fx).await?;
    let tools = manager.cached_tools_for_bot(&bot.id).await?;
    let summary: Vec<(String, String, bool)> = tools
        .tools
        .iter()
        .map(|t| (t.server.clone(), t.tool.name.to_string(), t.pinned))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("one".into(), "echo".into(), true),
            ("one".into(), "env".into(), false)
        ]
    );
    assert!(
        matches!(
            tools.failures.as_slice(),
            [LifecycleError::NoCachedTools { server }] if server == "two"
        ),
        "{:?}",
        tools.failures
    );
    let started: Vec<usize> = ["one", "two", "three"]
        .iter()
        .map(|name| fx.started_pids(name).len())
        .collect();
    assert_eq!(
        started,
        vec![1, 0, 1],
        "cached_tools_for_bot started a server"
    );
    assert!(
        manager
            .get_all_statuses()
            .iter()
            .all(|s| s.state == ServerState::Stopped)
    );
    assert!(matches!(
        manager.cached_tools_for_bot("no-such-bot").await,
        Err(LifecycleError::UnknownBot { .. })
    ));
    manager.stop_all().await;
    fx.store.close().await;
    Ok(())
}
