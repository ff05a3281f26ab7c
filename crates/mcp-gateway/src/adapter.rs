//! [`ManagerBackend`]: the [`GatewayBackend`] over BotCraft's `McpServerManager` and store, so
//! the HTTP layer only constructs it.
//!
//! - A bot's tools are `get_tools_for_bot` (enabled bindings, tool filter; servers start
//!   lazily); instructions are the store's `instructions` of the enabled servers.
//! - Every call re-checks the binding in the store (enabled, tool filter) before it reaches
//!   the manager, holds a lease on the bot's servers for its length, runs under the server's
//!   timeout (the manager's) and ends early when the client cancels.
//! - Catalog changes are the manager's catalog events for servers bound to the bot, passed on
//!   only when a server's tool-list hash differs from the one seen before (a lazy start
//!   with an unchanged list is not a change). The hashes are snapshot from the store's tool
//!   cache when the stream is first polled.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use mcp_lifecycle::{CatalogEvent, LifecycleError, McpServerManager};
use rmcp::model::{CallToolResult, JsonObject};
use store::{Store, StoreError};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::backend::{BackendError, BackendTool, BotCatalog, GatewayBackend, ServerInstructions};

/// The gateway's backend in BotCraft.
#[derive(Debug, Clone)]
pub struct ManagerBackend {
    manager: Arc<McpServerManager>,
    store: Store,
}

impl ManagerBackend {
    pub fn new(manager: Arc<McpServerManager>, store: Store) -> Self {
        Self { manager, store }
    }

    async fn bot_id(&self, bot: &str) -> Result<String, BackendError> {
        match self.store.bot_by_name(bot).await.map_err(internal)? {
            Some(found) => Ok(found.id),
            None => Err(BackendError::UnknownBot {
                bot: bot.to_owned(),
            }),
        }
    }
}

fn internal(error: StoreError) -> BackendError {
    BackendError::Internal {
        cause: error.to_string(),
    }
}

fn call_error(error: LifecycleError, server: &str, tool: &str) -> BackendError {
    match error {
        LifecycleError::CallTimeout { .. } => BackendError::Timeout {
            server: server.to_owned(),
            tool: tool.to_owned(),
        },
        LifecycleError::Store(source) => BackendError::Internal {
            cause: source.to_string(),
        },
        other => BackendError::Unavailable {
            server: server.to_owned(),
            cause: other.to_string(),
        },
    }
}

impl GatewayBackend for ManagerBackend {
    async fn bot_catalog(&self, bot: &str) -> Result<BotCatalog, BackendError> {
        let id = self.bot_id(bot).await?;
        let listed = match self.manager.get_tools_for_bot(&id).await {
            Ok(listed) => listed,
            Err(LifecycleError::UnknownBot { .. }) => {
                return Err(BackendError::UnknownBot {
                    bot: bot.to_owned(),
                });
            }
            Err(other) => {
                return Err(BackendError::Internal {
                    cause: other.to_string(),
                });
            }
        };
        let bound = self.store.bound_servers(&id).await.map_err(internal)?;
        let instructions = bound
            .iter()
            .filter(|b| b.binding.enabled)
            .filter_map(|b| {
                b.server
                    .instructions
                    .as_ref()
                    .map(|text| ServerInstructions {
                        server: b.server.name.clone(),
                        text: text.clone(),
                    })
            })
            .collect();
        Ok(BotCatalog {
            tools: listed
                .tools
                .into_iter()
                .map(|t| BackendTool {
                    server: t.server,
                    tool: t.tool,
                    pinned: t.pinned,
                })
                .collect(),
            instructions,
            failures: listed.failures.iter().map(ToString::to_string).collect(),
        })
    }

    async fn call_tool(
        &self,
        bot: &str,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: CancellationToken,
    ) -> Result<CallToolResult, BackendError> {
        let id = self.bot_id(bot).await?;
        let bound = self.store.bound_servers(&id).await.map_err(internal)?;
        let allowed = bound
            .iter()
            .any(|b| b.server.name == server && b.binding.allows(tool));
        if !allowed {
            return Err(BackendError::NotAllowed {
                bot: bot.to_owned(),
                server: server.to_owned(),
                tool: tool.to_owned(),
            });
        }
        let _lease = self
            .manager
            .lease(&id)
            .await
            .map_err(|error| call_error(error, server, tool))?;
        tokio::select! {
            () = cancel.cancelled() => Err(BackendError::Cancelled),
            result = self.manager.call_tool(server, tool, arguments) => {
                result.map_err(|error| call_error(error, server, tool))
            }
        }
    }

    fn catalog_changes(&self, bot: &str) -> BoxStream<'static, ()> {
        let state = Follow {
            events: self.manager.subscribe(),
            store: self.store.clone(),
            bot: bot.to_owned(),
            seen: None,
        };
        futures::stream::unfold(state, |mut state| async move {
            state.next_change().await.map(|()| ((), state))
        })
        .boxed()
    }
}

/// The state of one bot's change stream.
struct Follow {
    events: broadcast::Receiver<CatalogEvent>,
    store: Store,
    bot: String,
    /// Last known hash of each server's tool list (by server name); `None` until snapshot.
    seen: Option<HashMap<String, String>>,
}

impl Follow {
    /// The servers bound (and enabled) to the bot, by name → store id.
    async fn bound(&self) -> HashMap<String, String> {
        let Ok(Some(bot)) = self.store.bot_by_name(&self.bot).await else {
            return HashMap::new();
        };
        self.store
            .bound_servers(&bot.id)
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|b| b.binding.enabled)
            .map(|b| (b.server.name, b.server.id))
            .collect()
    }

    async fn snapshot(&self) -> HashMap<String, String> {
        let mut seen = HashMap::new();
        for (name, id) in self.bound().await {
            if let Ok(Some(cache)) = self.store.tool_cache(&id).await {
                seen.insert(name, cache.hash);
            }
        }
        seen
    }

    /// Wait for the next change of the bot's tools; `None` when the manager is gone.
    async fn next_change(&mut self) -> Option<()> {
        if self.seen.is_none() {
            self.seen = Some(self.snapshot().await);
        }
        loop {
            match self.events.recv().await {
                Ok(event) => {
                    if !self.bound().await.contains_key(&event.server) {
                        continue;
                    }
                    let seen = self.seen.get_or_insert_with(HashMap::new);
                    if seen.get(&event.server) == Some(&event.hash) {
                        continue;
                    }
                    seen.insert(event.server, event.hash);
                    return Some(());
                }
                // Missed events: something may have changed.
                Err(broadcast::error::RecvError::Lagged(_)) => return Some(()),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}
