//! [`Toolsets`]: the bots' bindings in memory, their toolsets, and calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::StreamExt;
use futures::stream::BoxStream;
use mcp_lifecycle::{CallToolResult, JsonObject, LifecycleError, McpServerManager, Tool};
use store::{Bot, BoundServer, Store};
use tokio_util::sync::CancellationToken;

use crate::approval_now::ApprovalNow;
use crate::error::{CallError, ToolsetError};
use crate::naming::ToolRoute;
use crate::set::BotToolset;

/// Whether listing a bot's tools may start a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListPolicy {
    /// The cached tool lists only (in memory, else the store's tool cache): never starts a
    /// server. A server whose tools were never listed is reported unavailable. The default
    /// for every listing path.
    #[default]
    CachedOnly,
    /// As `CachedOnly`, but a server whose tools were never listed is started once to list
    /// them (a chat turn: a tool never listed could otherwise never be offered nor found).
    CachedThenStart,
}

/// One bot's row and bindings, as last read.
struct Bound {
    bot: Bot,
    bindings: Arc<Vec<BoundServer>>,
}

impl Bound {
    /// The bot's id, for the manager's per-bot connections (none for the everything view).
    fn bot_id(&self) -> Option<&str> {
        Some(self.bot.id.as_str()).filter(|id| !id.is_empty())
    }
}

#[derive(Default)]
struct Cache {
    /// The store version the entries below were read at.
    version: u64,
    /// By bot id.
    bots: HashMap<String, Arc<Bound>, foldhash::fast::RandomState>,
    /// Bot name → id.
    names: HashMap<String, String, foldhash::fast::RandomState>,
    /// By bot id: the last toolset built.
    sets: HashMap<String, Arc<BotToolset>, foldhash::fast::RandomState>,
    /// Every configured server, as if bound without a filter.
    everything: Option<Arc<Bound>>,
    everything_set: Option<Arc<BotToolset>>,
}

/// Every bot's tools, for every face of BotCraft. Cheap to share (`Arc`).
pub struct Toolsets {
    store: Store,
    manager: Arc<McpServerManager>,
    reserved: Vec<String>,
    cache: Mutex<Cache>,
}

impl std::fmt::Debug for Toolsets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolsets")
            .field("reserved", &self.reserved)
            .finish_non_exhaustive()
    }
}

impl Toolsets {
    /// Toolsets over `store` and `manager`; MCP tools are never named any of `reserved`
    /// (the native tool names, `tool_search`).
    pub fn new(
        store: Store,
        manager: Arc<McpServerManager>,
        reserved: impl IntoIterator<Item = impl Into<String>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            manager,
            reserved: reserved.into_iter().map(Into::into).collect(),
            cache: Mutex::new(Cache::default()),
        })
    }

    pub fn manager(&self) -> &Arc<McpServerManager> {
        &self.manager
    }

    fn cache(&self) -> MutexGuard<'_, Cache> {
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let version = self.store.version();
        if cache.version != version {
            *cache = Cache {
                version,
                ..Cache::default()
            };
        }
        cache
    }

    /// The bot named or identified by `key`, with its bindings: from memory while the store
    /// has not changed, else read (two queries) and kept.
    async fn bound(&self, key: &str) -> Result<Arc<Bound>, ToolsetError> {
        {
            let cache = self.cache();
            let id = cache.names.get(key).map_or(key, String::as_str);
            if let Some(found) = cache.bots.get(id) {
                return Ok(Arc::clone(found));
            }
        }
        // Boxed: the store's futures are large, and every call's future (a tool call's
        // included) would otherwise carry them inline, to be copied on each call.
        Box::pin(self.load_bound(key)).await
    }

    /// `key`'s bot and bindings from the store, cached unless something was written meanwhile.
    async fn load_bound(&self, key: &str) -> Result<Arc<Bound>, ToolsetError> {
        let version = self.store.version();
        let bot = match self.store.bot(key).await? {
            Some(bot) => bot,
            None => self
                .store
                .bot_by_name(key)
                .await?
                .ok_or_else(|| ToolsetError::UnknownBot {
                    bot: key.to_owned(),
                })?,
        };
        let bindings = Arc::new(self.store.bound_servers(&bot.id).await?);
        let found = Arc::new(Bound { bot, bindings });
        let mut cache = self.cache();
        // Kept only if nothing was written while it was read.
        if cache.version == version {
            cache
                .names
                .insert(found.bot.name.clone(), found.bot.id.clone());
            cache.bots.insert(found.bot.id.clone(), Arc::clone(&found));
        }
        Ok(found)
    }

    /// The bot named or identified by `key`.
    pub async fn bot(&self, key: &str) -> Result<Bot, ToolsetError> {
        Ok(self.bound(key).await?.bot.clone())
    }

    /// The bindings of the bot named or identified by `key` (enabled or not), by server name.
    pub async fn bindings(&self, key: &str) -> Result<Arc<Vec<BoundServer>>, ToolsetError> {
        Ok(Arc::clone(&self.bound(key).await?.bindings))
    }

    /// The tools bot `key` (a name or an id) may use. See [`ListPolicy`] for when a server
    /// starts. A server that cannot give its list is left out and named in
    /// [`BotToolset::unavailable`]; the others still serve.
    pub async fn load(
        &self,
        key: &str,
        policy: ListPolicy,
    ) -> Result<Arc<BotToolset>, ToolsetError> {
        let bound = self.bound(key).await?;
        let enabled: Vec<&BoundServer> = bound
            .bindings
            .iter()
            .filter(|b| b.binding.enabled)
            .collect();
        let lists = futures::future::join_all(
            enabled
                .iter()
                .map(|b| self.tool_list(&b.server.name, policy)),
        )
        .await;
        if let Some(set) = self.cache().sets.get(&bound.bot.id)
            && set.built_from(&bound.bindings, &lists)
        {
            return Ok(Arc::clone(set));
        }
        for (b, list) in enabled.iter().zip(&lists) {
            if let Err(reason) = list {
                tracing::warn!(bot = %bound.bot.name, server = %b.server.name, %reason, "MCP server's tools left out");
            }
        }
        let set = Arc::new(BotToolset::build(
            (&bound.bot.id, &bound.bot.name),
            Arc::clone(&bound.bindings),
            lists,
            &self.reserved,
        ));
        self.cache()
            .sets
            .insert(bound.bot.id.clone(), Arc::clone(&set));
        Ok(set)
    }

    /// Every configured server's tools, named as one set (the admin API's search over all
    /// servers): as [`Toolsets::load`] for a bot bound to every server without a filter.
    pub async fn everything(&self, policy: ListPolicy) -> Result<Arc<BotToolset>, ToolsetError> {
        let cached = self.cache().everything.clone();
        let bound = match cached {
            Some(bound) => bound,
            None => {
                let version = self.store.version();
                let servers = self.store.servers().await?;
                let bindings: Vec<BoundServer> = servers
                    .into_iter()
                    .map(|server| BoundServer {
                        binding: store::BotMcpServer {
                            id: String::new(),
                            bot_id: String::new(),
                            mcp_server_id: server.id.clone(),
                            enabled: true,
                            tool_filter: Vec::new(),
                            pinned_tools: Vec::new(),
                            approval: store::ApprovalPolicy::Never,
                        },
                        server,
                    })
                    .collect();
                let bound = Arc::new(Bound {
                    bot: everything_bot(),
                    bindings: Arc::new(bindings),
                });
                let mut cache = self.cache();
                if cache.version == version {
                    cache.everything = Some(Arc::clone(&bound));
                }
                bound
            }
        };
        let lists = futures::future::join_all(
            bound
                .bindings
                .iter()
                .map(|b| self.tool_list(&b.server.name, policy)),
        )
        .await;
        if let Some(set) = &self.cache().everything_set
            && set.built_from(&bound.bindings, &lists)
        {
            return Ok(Arc::clone(set));
        }
        let set = Arc::new(BotToolset::build(
            ("", "*"),
            Arc::clone(&bound.bindings),
            lists,
            &self.reserved,
        ));
        self.cache().everything_set = Some(Arc::clone(&set));
        Ok(set)
    }

    async fn tool_list(&self, server: &str, policy: ListPolicy) -> Result<Arc<Vec<Tool>>, String> {
        match self.manager.cached_tools(server).await {
            Ok(Some(tools)) => Ok(tools),
            Ok(None) => match policy {
                ListPolicy::CachedThenStart => self
                    .manager
                    .get_tools(server)
                    .await
                    .map_err(|e| e.to_string()),
                ListPolicy::CachedOnly => Err(LifecycleError::NoCachedTools {
                    server: server.to_owned(),
                }
                .to_string()),
            },
            Err(error) => Err(error.to_string()),
        }
    }

    /// Bot `key`'s approval policies as last written (cached like every binding read): a chat
    /// turn reads them again before each step's calls, so a policy tightened meanwhile is
    /// not missed.
    pub async fn approval_now(&self, key: &str) -> Result<ApprovalNow, ToolsetError> {
        let bound = self.bound(key).await?;
        Ok(ApprovalNow::new(
            bound.bot.native_tool_approval.clone(),
            bound
                .bindings
                .iter()
                .filter(|b| b.binding.enabled)
                .map(|b| {
                    (
                        b.server.id.clone(),
                        (b.server.name.clone(), b.binding.clone()),
                    )
                }),
        ))
    }

    /// Call raw tool `route` for bot `key`: the binding is checked again (enabled, tool
    /// filter), the server is leased for the call (no idle stop meanwhile) and started if
    /// needed, the call runs under the server's timeout and ends soon after `cancel` fires.
    pub async fn call(
        &self,
        key: &str,
        route: &ToolRoute,
        arguments: Option<JsonObject>,
        cancel: CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        let bound = self.bound(key).await?;
        let allowed = bound
            .bindings
            .iter()
            .any(|b| b.server.name == route.server && b.binding.allows(&route.tool));
        if !allowed {
            return Err(CallError::NotAllowed {
                bot: bound.bot.name.clone(),
                server: route.server.clone(),
                tool: route.tool.clone(),
            });
        }
        let _lease = self.manager.lease([route.server.as_str()]);
        // Cancelled, the call tells the server (`notifications/cancelled`) so it stops the
        // work, and ends soon after.
        self.manager
            .call_tool_until(
                &route.server,
                bound.bot_id(),
                &route.tool,
                arguments,
                cancel,
            )
            .await
            .map_err(|error| CallError::from_lifecycle(error, &route.server, &route.tool))
    }

    /// Forward `request` to `server` for bot `key` (the gateway's relay of everything MCP
    /// carries). The bot must bind the server with the binding enabled; a `tools/call` must
    /// also pass the binding's tool filter. The server is leased and started if needed; the
    /// request runs under the server's timeout and ends soon after `cancel` fires, with
    /// `notifications/cancelled` sent on.
    pub async fn forward(
        &self,
        key: &str,
        server: &str,
        request: rmcp::model::ClientRequest,
        mut target: mcp_lifecycle::ForwardFor,
        cancel: CancellationToken,
    ) -> Result<rmcp::model::ServerResult, CallError> {
        let bound = self.bound(key).await?;
        // The manager's principal for a bot is its id: the request goes on the bot's own
        // OAuth connection to the server when it has one.
        target.principal = bound.bot_id().map(str::to_owned);
        let tool = match &request {
            rmcp::model::ClientRequest::CallToolRequest(call) => Some(call.params.name.as_ref()),
            // A `tools/call` in any other shape would pass without the tool filter.
            other if other.method() == "tools/call" => {
                return Err(CallError::NotAllowed {
                    bot: bound.bot.name.clone(),
                    server: server.to_owned(),
                    tool: "tools/call".to_owned(),
                });
            }
            _ => None,
        };
        let allowed = bound.bindings.iter().any(|b| {
            b.server.name == server
                && b.binding.enabled
                && tool.is_none_or(|tool| b.binding.allows(tool))
        });
        let label = tool.unwrap_or(request.method()).to_owned();
        if !allowed {
            return Err(CallError::NotAllowed {
                bot: bound.bot.name.clone(),
                server: server.to_owned(),
                tool: label,
            });
        }
        let _lease = self.manager.lease([server]);
        self.manager
            .forward(server, request, target, cancel)
            .await
            .map_err(|error| CallError::from_lifecycle(error, server, &label))
    }

    /// The servers bot `key` may use (bound, binding enabled), in name order.
    pub async fn enabled_servers(&self, key: &str) -> Result<Vec<String>, ToolsetError> {
        let bound = self.bound(key).await?;
        let mut servers: Vec<String> = bound
            .bindings
            .iter()
            .filter(|b| b.binding.enabled)
            .map(|b| b.server.name.clone())
            .collect();
        servers.sort();
        servers.dedup();
        Ok(servers)
    }

    /// One item whenever any bot's tools may have changed: a server's tool list changed, or
    /// a server, bot or binding was written. Spurious items are fine: compare
    /// [`BotToolset::hash`] before telling anyone.
    pub fn changes(&self) -> BoxStream<'static, ()> {
        let lists = tokio_stream_of(self.manager.subscribe());
        let writes = tokio_stream_of(self.store.changes());
        futures::stream::select(lists, writes).boxed()
    }
}

/// A broadcast receiver as a stream of `()`, one per message (missed ones count as one);
/// ends when the sender is gone.
fn tokio_stream_of<T: Clone + Send + 'static>(
    receiver: tokio::sync::broadcast::Receiver<T>,
) -> BoxStream<'static, ()> {
    futures::stream::unfold(receiver, |mut receiver| async move {
        match receiver.recv().await {
            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                Some(((), receiver))
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => None,
        }
    })
    .boxed()
}

/// The row behind [`Toolsets::everything`]: no bot is stored under it.
fn everything_bot() -> Bot {
    Bot {
        id: String::new(),
        name: "*".to_owned(),
        model: String::new(),
        system_prompt: String::new(),
        step_limit: 1,
        tool_loading_mode: store::ToolLoadingMode::Eager,
        vision: false,
        max_tool_result_chars: store::DEFAULT_MAX_TOOL_RESULT_CHARS,
        native_tool_approval: store::ApprovalPolicy::Never,
        created_at: 0,
        updated_at: 0,
    }
}
