//! Tool lists: each server's tools as last listed, kept in memory and in the store's tool
//! cache (so search and allow-lists work while a server is stopped), refreshed on
//! `notifications/tools/list_changed` (`crate::tool_lists`: one listing under way and one
//! waiting at most, and an unchanged list keeps its `Arc`). Who may use which tool is
//! `toolset`'s business.

use crate::error::LifecycleError;
use crate::manager::McpServerManager;
use rmcp::model::Tool;
use std::sync::Arc;

impl McpServerManager {
    /// The tools of `server` as last listed: from memory if it ran since this manager
    /// started, else from the tool cache. Never starts the server; `None` when its
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
        let Some(cache) = self.inner.records.tool_cache(&config.id).await? else {
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
        // Fingerprinted as a listing's are, so that listing the same tools keeps this `Arc`.
        let (_, hash) = crate::tool_lists::fingerprinted(&tools);
        // A list fetched meanwhile by a start is newer than the store's: keep it.
        let mut state = slot.lock();
        if state.tools.is_none() {
            state.tools = Some(Arc::new(tools));
            state.tools_hash = Some(hash);
        }
        Ok(state.tools.clone())
    }
}
