//! Tool lists: each server's tools as last listed, kept in memory and in the tool cache
//! ([`crate::ServerRecords`]) (so search and allow-lists work while a server is stopped), refreshed on
//! `notifications/tools/list_changed`. Who may use which tool is `toolset`'s business.
//!
//! However many of those notifications a server sends, its connection has one listing under
//! way at most and one asked for ([`changes_channel`]: room for one; the client side drops a
//! notification that finds it full, which loses nothing, as the listing asked for has not
//! begun). A listing that finds the tools the slot holds already (the same fingerprint,
//! `canonical_json`'s, the tool cache's hash) changes nothing: the list keeps its `Arc` (so
//! toolsets built on it are not rebuilt), the store is not written and no [`ToolListEvent`]
//! goes out (so no `/mcp` session hears `list_changed`). A server that keeps changing its
//! list is listed less and less often: a change within a minute of the last listing waits
//! 1 s, then 2 s, … up to 60 s ([`follow_changes`]).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::Tool;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::ServerConfig;
use crate::manager::{McpServerManager, Slot};
use crate::process::McpProcess;

/// A server's tool list changed (at start or on `tools/list_changed`), or was listed for a
/// new config version; never sent for a listing that finds the same tools again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolListEvent {
    pub server: String,
    /// The hash of the new list (`canonical_json::fingerprint` of its tools, as the tool
    /// cache keeps it).
    pub hash: String,
    pub tool_count: usize,
}

/// `tools` as the tool cache keeps them (each tool's JSON) and their fingerprint
/// (`canonical_json::fingerprint`, the cache's hash): what tells whether a list changed.
pub(crate) fn fingerprinted(tools: &[Tool]) -> (Vec<serde_json::Value>, String) {
    let values: Vec<serde_json::Value> = tools
        .iter()
        .filter_map(|tool| serde_json::to_value(tool).ok())
        .collect();
    let hash = canonical_json::fingerprint(&values);
    (values, hash)
}

/// Record `tools` as `slot`'s tool list, in memory and in the store, and announce it.
///
/// Tools the slot holds already (the same fingerprint) keep their `Arc`. If they are also
/// recorded for this config version, nothing else happens: no store write, no event. Under
/// a new config version they are still written (the cache's capture time tells which version
/// they were listed for) and announced (the listing landed).
pub(crate) async fn publish(
    manager: &McpServerManager,
    slot: &Slot,
    config: &ServerConfig,
    tools: Vec<Tool>,
) {
    let (values, hash) = fingerprinted(&tools);
    let count = tools.len();
    let listed = crate::listing::Listing::Listed {
        version: config.version,
    };
    let recorded = {
        let mut state = slot.lock();
        let same = state.tools.is_some() && state.tools_hash.as_deref() == Some(hash.as_str());
        if !same {
            state.tools = Some(Arc::new(tools));
            state.tools_hash = Some(hash.clone());
        }
        let recorded = same && state.listing == listed;
        state.listing = listed;
        recorded
    };
    if recorded {
        tracing::debug!(server = %config.name, tools = count, "the same tools listed again");
        return;
    }
    if slot.principal.is_some() {
        // A principal's own connection: the server's catalog (cache, search, bindings) is
        // the server connection's, not one principal's view of it.
        return;
    }
    if !config.id.is_empty()
        && let Err(error) = manager
            .inner
            .records
            .put_tool_cache(&config.id, &values)
            .await
    {
        tracing::warn!(server = %config.name, %error, "cannot write the tool cache");
        // Not recorded: the next listing of these tools writes them again.
        slot.lock().tools_hash = None;
    }
    let _ = manager.inner.events.send(ToolListEvent {
        server: config.name.clone(),
        hash,
        tool_count: count,
    });
}

/// The way from a connection's `notifications/tools/list_changed` (`mcp_client::ClientSide`,
/// which puts a `()` in only if there is room) to [`follow_changes`]: room for one, a listing
/// asked for and not yet begun. A notification that finds it full is dropped and loses
/// nothing: that listing will see its change too. However many notifications come, a
/// connection costs one listing under way and one waiting.
pub(crate) fn changes_channel() -> (mpsc::Sender<()>, mpsc::Receiver<()>) {
    mpsc::channel(1)
}

/// The first wait before listing again a server whose list changed soon after its last
/// listing; each further change within [`RELIST_QUIET`] doubles it, up to that.
pub(crate) const RELIST_BACKOFF_START: Duration = Duration::from_secs(1);

/// A server whose list has not changed for this long is listed at once on its next change;
/// also the longest wait.
pub(crate) const RELIST_QUIET: Duration = Duration::from_secs(60);

/// How long to wait before listing again, after a listing at `last` that waited `waited`: a
/// change soon after the last listing waits twice as long as that one did (from
/// [`RELIST_BACKOFF_START`], at most [`RELIST_QUIET`]); one after a quiet minute, not at all.
fn relist_wait(last: Option<Instant>, waited: Duration) -> Duration {
    match last {
        Some(last) if last.elapsed() < RELIST_QUIET => {
            (waited * 2).clamp(RELIST_BACKOFF_START, RELIST_QUIET)
        }
        _ => Duration::ZERO,
    }
}

/// Refresh the tool list of `process` after `tools/list_changed`, while it runs: one listing
/// at a time. Each is taken from `changed` before it begins, so a notification during it asks
/// for one more (and any number of them, for that one). A server that keeps changing its list
/// is listed less and less often ([`relist_wait`]): each listing rewrites its tool cache,
/// wakes every `/mcp` session and may re-embed its changed tool texts, so a storm of changes
/// costs at most one listing a minute once it has gone on for a while.
pub(crate) fn follow_changes(
    manager: McpServerManager,
    slot: Arc<Slot>,
    process: Arc<McpProcess>,
    mut changed: mpsc::Receiver<()>,
) {
    tokio::spawn(async move {
        let mut last: Option<Instant> = None;
        let mut waited = Duration::ZERO;
        while changed.recv().await.is_some() {
            waited = relist_wait(last, waited);
            if !waited.is_zero() {
                // The rate limit: changes meanwhile are folded into this one listing.
                tokio::time::sleep(waited).await;
                while changed.try_recv().is_ok() {}
            }
            last = Some(Instant::now());
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
