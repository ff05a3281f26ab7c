//! Tool lists: each server's tools as last listed, kept in memory and in the tool cache
//! ([`crate::ServerRecords`]) (so search and allow-lists work while a server is stopped), refreshed on
//! `notifications/tools/list_changed`. Who may use which tool is `toolset`'s business.

use std::sync::Arc;

use rmcp::model::Tool;
use tokio::sync::mpsc;

use crate::config::ServerConfig;
use crate::manager::{McpServerManager, Slot};
use crate::process::McpProcess;

/// A server's tool list changed (at start or on `tools/list_changed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolListEvent {
    pub server: String,
    /// The hash of the new list (`canonical_json::fingerprint` of its tools, as the tool
    /// cache keeps it).
    pub hash: String,
    pub tool_count: usize,
}

/// Record `tools` as `slot`'s tool list, in memory and in the store, and announce it.
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
    {
        let mut state = slot.lock();
        state.tools = Some(Arc::new(tools));
        state.listing = crate::listing::Listing::Listed {
            version: config.version,
        };
    }
    if slot.principal.is_some() {
        // A principal's own connection: the server's catalog (cache, search, bindings) is
        // the server connection's, not one principal's view of it.
        return;
    }
    let hash = canonical_json::fingerprint(&values);
    if !config.id.is_empty()
        && let Err(error) = manager
            .inner
            .records
            .put_tool_cache(&config.id, &values)
            .await
    {
        tracing::warn!(server = %config.name, %error, "cannot write the tool cache");
    }
    let _ = manager.inner.events.send(ToolListEvent {
        server: config.name.clone(),
        hash,
        tool_count: count,
    });
}

/// Refresh the tool list of `process` on each `tools/list_changed`, while it runs.
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
