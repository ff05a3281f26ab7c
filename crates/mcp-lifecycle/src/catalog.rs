//! The tool catalog: each server's tools as last listed, kept in memory and in the store's
//! tool cache (so search and allow-lists work while a server is stopped), refreshed on
//! `notifications/tools/list_changed`; and the tools a bot may use.

use std::sync::Arc;

use rmcp::model::Tool;
use tokio::sync::mpsc;

use crate::config::ServerConfig;
use crate::error::LifecycleError;
use crate::manager::{McpServerManager, Slot};
use crate::process::McpProcess;

/// A server's tool list changed (at start or on `tools/list_changed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEvent {
    pub server: String,
    /// The store's hash of the new list.
    pub hash: String,
    pub tool_count: usize,
}

/// A tool a bot may use, with the server it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct BotTool {
    pub server: String,
    pub tool: Tool,
    /// Offered even when tools are loaded on demand.
    pub pinned: bool,
}

/// The tools of a bot's enabled servers, and the servers that could not give theirs.
#[derive(Debug, Clone, Default)]
pub struct BotTools {
    pub tools: Vec<BotTool>,
    pub failures: Vec<LifecycleError>,
}

/// Record `tools` as `slot`'s catalog, in memory and in the store, and announce it.
pub(crate) async fn publish(
    manager: &McpServerManager,
    slot: &Slot,
    config: &ServerConfig,
    tools: Vec<Tool>,
) {
    let values: Vec<serde_json::Value> = tools
        .iter()
        .filter_map(|tool| serde_json::to_value(tool).ok())
        .collect();
    let count = tools.len();
    slot.lock().tools = Some(Arc::new(tools));
    let hash = store::tools_hash(&values);
    if !config.id.is_empty()
        && let Err(error) = manager
            .inner
            .store
            .put_tool_cache(&config.id, &values)
            .await
    {
        tracing::warn!(server = %config.name, %error, "cannot write the tool cache");
    }
    let _ = manager.inner.events.send(CatalogEvent {
        server: config.name.clone(),
        hash,
        tool_count: count,
    });
}

/// Refresh the catalog of `process` on each `tools/list_changed`, while it runs.
pub(crate) fn follow_changes(
    manager: McpServerManager,
    slot: Arc<Slot>,
    process: Arc<McpProcess>,
    mut changed: mpsc::UnboundedReceiver<()>,
) {
    tokio::spawn(async move {
        while changed.recv().await.is_some() {
            let still_current = slot
                .running()
                .is_some_and(|current| Arc::ptr_eq(&current, &process));
            if !still_current {
                return;
            }
            let config = slot.config();
            match process.list_tools(config.call_timeout).await {
                Ok(tools) => publish(&manager, &slot, &config, tools).await,
                Err(error) => {
                    tracing::warn!(server = %config.name, %error, "tools/list after list_changed failed")
                }
            }
        }
    });
}

impl McpServerManager {
    /// The tools bot `bot_id` may use: its enabled bindings, each server started if needed,
    /// each list cut to the binding's tool filter. A server that fails is reported in
    /// `failures` and the others still answer.
    pub async fn get_tools_for_bot(&self, bot_id: &str) -> Result<BotTools, LifecycleError> {
        self.bot_tools(bot_id, |server| async move {
            self.get_tools(&server).await.map(Some)
        })
        .await
    }

    /// [`Self::get_tools_for_bot`] from the cached catalog only: never starts a server (for
    /// tool search and dashboards). A server whose tools were never listed is reported in
    /// `failures` as [`LifecycleError::NoCachedTools`].
    pub async fn cached_tools_for_bot(&self, bot_id: &str) -> Result<BotTools, LifecycleError> {
        self.bot_tools(
            bot_id,
            |server| async move { self.cached_tools(&server).await },
        )
        .await
    }

    /// The tools of `server` as last listed: from memory if it ran since this manager
    /// started, else from the store's tool cache. Never starts the server; `None` when its
    /// tools were never listed.
    pub async fn cached_tools(
        &self,
        server: &str,
    ) -> Result<Option<Arc<Vec<Tool>>>, LifecycleError> {
        let slot = self.slot(server)?;
        if let Some(tools) = slot.lock().tools.clone() {
            return Ok(Some(tools));
        }
        let config = slot.config();
        if config.id.is_empty() {
            return Ok(None);
        }
        let Some(cache) = self.inner.store.tool_cache(&config.id).await? else {
            return Ok(None);
        };
        let tools = cache
            .tools
            .into_iter()
            .map(serde_json::from_value::<Tool>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| LifecycleError::BadToolCache {
                server: server.to_owned(),
                source: Arc::new(source),
            })?;
        // A list fetched meanwhile by a start is newer than the store's: keep it.
        let mut state = slot.lock();
        Ok(Some(
            state.tools.get_or_insert_with(|| Arc::new(tools)).clone(),
        ))
    }

    async fn bot_tools<'a, F, Fut>(
        &'a self,
        bot_id: &str,
        tools_of: F,
    ) -> Result<BotTools, LifecycleError>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<Option<Arc<Vec<Tool>>>, LifecycleError>> + 'a,
    {
        if self.inner.store.bot(bot_id).await?.is_none() {
            return Err(LifecycleError::UnknownBot {
                bot: bot_id.to_owned(),
            });
        }
        let bound = self.inner.store.bound_servers(bot_id).await?;
        let enabled: Vec<_> = bound.into_iter().filter(|b| b.binding.enabled).collect();
        let lists =
            futures::future::join_all(enabled.iter().map(|b| tools_of(b.server.name.clone())))
                .await;
        let mut result = BotTools::default();
        for (bound, list) in enabled.iter().zip(lists) {
            match list {
                Ok(Some(tools)) => result.tools.extend(
                    tools
                        .iter()
                        .filter(|tool| bound.binding.allows(&tool.name))
                        .map(|tool| BotTool {
                            server: bound.server.name.clone(),
                            tool: tool.clone(),
                            pinned: bound.binding.pinned_tools.iter().any(|p| *p == tool.name),
                        }),
                ),
                Ok(None) => result.failures.push(LifecycleError::NoCachedTools {
                    server: bound.server.name.clone(),
                }),
                Err(error) => result.failures.push(error),
            }
        }
        Ok(result)
    }
}
