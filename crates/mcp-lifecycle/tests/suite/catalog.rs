//! The catalog: refreshed on tools/list_changed, written to the store's tool cache, and cut
//! to a bot's bindings.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;

use store::{BindingSpec, BotSpec};

use super::harness::{Fixture, args};

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
