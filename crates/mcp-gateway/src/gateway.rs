//! The MCP server of the gateway: [`GatewayServer`], an rmcp `ServerHandler` that exposes one
//! bot's allowed tools under their qualified names and routes `tools/call` through the
//! [`GatewayBackend`].
//!
//! One `GatewayServer` serves one streamable HTTP session. The bot of every request is the
//! [`AuthenticatedBot`] the auth middleware put in the HTTP request; the session is bound to
//! the bot that initialized it and refuses requests of any other bot (the middleware answers
//! 403 first; this is the second lock). `initialize` starts no server (instructions come from
//! the store); the first `tools/list` may.
//!
//! After `notifications/initialized` a task follows the bot's tool-list changes. On each, if
//! the session has listed tools, the list is fetched again and, when it differs from what the
//! session last listed, `notifications/tools/list_changed` is sent. A session that never
//! listed is not told (it has nothing stale). The task ends with the session.
//!
//! What the client sees when something fails:
//! - a name that is not one of the bot's tools (unknown anywhere, another bot's, outside the
//!   filter): JSON-RPC `invalid_params` "Unknown tool: NAME" — the same answer in every case;
//! - a server that timed out, could not start, or a cancelled call: a tool result with
//!   `isError: true` stating the cause (the model can go on);
//! - an internal failure: JSON-RPC `internal_error` with a generic message (the cause is
//!   logged).

use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::auth::AuthenticatedBot;
use crate::backend::{BackendError, GatewayBackend};
use crate::exposed::{ExposedTools, combined_instructions};

/// The `serverInfo.name` of the gateway.
pub const GATEWAY_NAME: &str = "botcraft";

/// One session of the gateway.
pub struct GatewayServer<B> {
    backend: Arc<B>,
    session: Arc<Session>,
}

impl<B> Clone for GatewayServer<B> {
    fn clone(&self) -> Self {
        Self {
            backend: self.backend.clone(),
            session: self.session.clone(),
        }
    }
}

struct Session {
    /// The bot that initialized this session.
    bot: OnceLock<String>,
    /// The tools last listed.
    listed: Arc<Mutex<Option<Arc<ExposedTools>>>>,
    /// Cancelled when the session's server is dropped: ends the list_changed follower.
    _closed: DropGuard,
    closed: CancellationToken,
}

impl<B: GatewayBackend> GatewayServer<B> {
    pub fn new(backend: Arc<B>) -> Self {
        let closed = CancellationToken::new();
        Self {
            backend,
            session: Arc::new(Session {
                bot: OnceLock::new(),
                listed: Arc::new(Mutex::new(None)),
                _closed: closed.clone().drop_guard(),
                closed,
            }),
        }
    }

    /// The bot of this request: the authenticated one, which must be the session's.
    fn bot(&self, extensions: &rmcp::model::Extensions) -> Result<String, ErrorData> {
        let bot = extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<AuthenticatedBot>())
            .or_else(|| extensions.get::<AuthenticatedBot>())
            .map(|bot| bot.0.clone())
            .ok_or_else(|| ErrorData::invalid_request("not authenticated", None))?;
        match self.session.bot.get() {
            Some(owner) if *owner != bot => Err(ErrorData::invalid_request(
                "this session was opened with another key",
                None,
            )),
            _ => Ok(bot),
        }
    }

    fn last_listing(&self) -> Option<Arc<ExposedTools>> {
        lock(&self.session.listed).clone()
    }

    async fn fresh_listing(&self, bot: &str) -> Result<Arc<ExposedTools>, ErrorData> {
        let exposed = fetch_listing(self.backend.as_ref(), bot).await?;
        *lock(&self.session.listed) = Some(exposed.clone());
        Ok(exposed)
    }

    fn follow_tool_lists(&self, bot: String, peer: rmcp::Peer<RoleServer>) {
        let mut changes = self.backend.tool_list_changes(&bot);
        let backend = self.backend.clone();
        let slot = self.session.listed.clone();
        let closed = self.session.closed.clone();
        drop(tokio::spawn(async move {
            use futures::StreamExt;
            loop {
                let next = tokio::select! {
                    () = closed.cancelled() => return,
                    next = changes.next() => next,
                };
                if next.is_none() {
                    return;
                }
                let Some(listed) = lock(&slot).clone() else {
                    continue;
                };
                let Ok(fresh) = fetch_listing(backend.as_ref(), &bot).await else {
                    continue;
                };
                if fresh.tools() == listed.tools() {
                    continue;
                }
                *lock(&slot) = Some(fresh);
                if peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        }));
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

async fn fetch_listing<B: GatewayBackend>(
    backend: &B,
    bot: &str,
) -> Result<Arc<ExposedTools>, ErrorData> {
    let listing = backend.bot_tools(bot).await.map_err(list_error)?;
    for cause in &listing.failures {
        tracing::warn!(bot, cause, "an MCP server is left out of the bot's tools");
    }
    Ok(Arc::new(ExposedTools::from_backend(&listing.tools)))
}

fn list_error(error: BackendError) -> ErrorData {
    match error {
        BackendError::UnknownBot { bot } => {
            tracing::error!(bot, "a bot key names a bot that does not exist");
            ErrorData::invalid_request("this key's bot does not exist", None)
        }
        other => {
            tracing::error!(error = %other, "listing a bot's tools failed");
            ErrorData::internal_error("cannot list the bot's tools; see the BotCraft log", None)
        }
    }
}

fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown tool: {name}"), None)
}

fn failed_call(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

impl<B: GatewayBackend> ServerHandler for GatewayServer<B> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(
            Implementation::new(GATEWAY_NAME, env!("CARGO_PKG_VERSION")).with_title("BotCraft"),
        )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let bot = self.bot(&context.extensions)?;
        let instructions = self
            .backend
            .bot_instructions(&bot)
            .await
            .map_err(list_error)?;
        let _ = self.session.bot.set(bot.clone());
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        result.server_info.title = Some(format!("BotCraft bot {bot}"));
        result.instructions = Some(combined_instructions(&bot, &instructions));
        Ok(result)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if let Some(bot) = self.session.bot.get() {
            self.follow_tool_lists(bot.clone(), context.peer);
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let bot = self.bot(&context.extensions)?;
        let listing = self.fresh_listing(&bot).await?;
        Ok(ListToolsResult::with_all_items(listing.tools().to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let bot = self.bot(&context.extensions)?;
        let name = request.name.to_string();
        let cached = self
            .last_listing()
            .and_then(|listing| listing.resolve(&name).cloned());
        let route = match cached {
            Some(route) => route,
            None => self
                .fresh_listing(&bot)
                .await?
                .resolve(&name)
                .cloned()
                .ok_or_else(|| unknown_tool(&name))?,
        };
        let outcome = self
            .backend
            .call_tool(
                &bot,
                &route.server,
                &route.tool,
                request.arguments,
                context.ct.clone(),
            )
            .await;
        let result = match outcome {
            Ok(result) => result,
            Err(BackendError::NotAllowed { .. }) => return Err(unknown_tool(&name)),
            Err(BackendError::UnknownBot { bot }) => {
                return Err(list_error(BackendError::UnknownBot { bot }));
            }
            Err(BackendError::Internal { cause }) => {
                tracing::error!(bot, tool = name, cause, "tool call failed internally");
                return Err(ErrorData::internal_error(
                    "the call failed inside BotCraft; see its log",
                    None,
                ));
            }
            Err(error @ BackendError::Timeout { .. })
            | Err(error @ BackendError::Cancelled)
            | Err(error @ BackendError::Unavailable { .. }) => failed_call(error.to_string()),
        };
        Ok(result.into())
    }
}
