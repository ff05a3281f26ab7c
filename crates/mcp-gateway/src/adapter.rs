//! [`ManagerBackend`]: the [`GatewayBackend`] over BotCraft's `McpServerManager` and store, so
//! the HTTP layer only constructs it.
//!
//! - A bot's tools are `get_tools_for_bot` (enabled bindings, tool filter; servers start
//!   lazily); instructions are the store's `instructions` of the enabled servers.
//! - Every call re-checks the binding in the store (enabled, tool filter) before it reaches
//!   the manager, holds a lease on the bot's servers for its length, runs under the server's
//!   timeout (the manager's) and ends early when the client cancels.
//! - Catalog changes are the manager's catalog events for servers bound (and enabled) to the
//!   bot; the gateway decides whether a session's list really changed.

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
            failures: listed.failures.iter().map(ToString::to_string).collect(),
        })
    }

    async fn bot_instructions(&self, bot: &str) -> Result<Vec<ServerInstructions>, BackendError> {
        let id = self.bot_id(bot).await?;
        let bound = self.store.bound_servers(&id).await.map_err(internal)?;
        Ok(bound
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
            .collect())
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
}

impl Follow {
    /// Whether `server` is bound (and enabled) to the bot now.
    async fn is_bound(&self, server: &str) -> bool {
        let Ok(Some(bot)) = self.store.bot_by_name(&self.bot).await else {
            return false;
        };
        self.store
            .bound_servers(&bot.id)
            .await
            .unwrap_or_default()
            .iter()
            .any(|b| b.binding.enabled && b.server.name == server)
    }

    /// Wait for the next catalog event of one of the bot's servers; `None` when the manager
    /// is gone.
    async fn next_change(&mut self) -> Option<()> {
        loop {
            match self.events.recv().await {
                Ok(event) if self.is_bound(&event.server).await => return Some(()),
                Ok(_) => continue,
                // Missed events: something may have changed.
                Err(broadcast::error::RecvError::Lagged(_)) => return Some(()),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}
