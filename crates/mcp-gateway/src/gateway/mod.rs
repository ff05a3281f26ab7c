//! The MCP server of the gateway: [`GatewayServer`], an rmcp `ServerHandler` that exposes one
//! bot's allowed tools under their qualified names and routes `tools/call` through the
//! [`GatewayBackend`].
//!
//! One `GatewayServer` serves one streamable HTTP session. The bot of every request is the
//! [`AuthenticatedBot`] the auth layer put in the HTTP request; the session is bound to
//! the bot that initialized it and refuses requests of any other bot (the layer answers
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

#![allow(deprecated)] // logging/setLevel is legacy in 2026-07-28; 2025-11-25 sessions use it

mod relayed;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest, CompleteRequestParams,
    CompleteResult, ContentBlock, GetPromptRequestParams, GetPromptResponse, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerConfig, ServerResult,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument as _;

use crate::auth::AuthenticatedBot;
use crate::backend::{BackendError, ExposedTool, GatewayBackend};
use crate::exposed::{ExposedTools, combined_instructions};
use crate::relay::GatewayScope;
use relayed::{Listing, expect};

/// The `serverInfo.name` of the gateway.
pub const GATEWAY_NAME: &str = "botcraft";

/// One session of the gateway.
pub struct GatewayServer<B> {
    backend: Arc<B>,
    session: Arc<Session>,
    /// What keeps the session open: held by the copies rmcp serves the session with, not by
    /// the session's own tasks nor by `/mcp`'s direct path. When the last goes (rmcp let the
    /// session go), the session's `closed` token is cancelled.
    held: Option<Arc<DropGuard>>,
}

impl<B> Clone for GatewayServer<B> {
    fn clone(&self) -> Self {
        Self {
            backend: self.backend.clone(),
            session: self.session.clone(),
            held: self.held.clone(),
        }
    }
}

/// A session's server that does not keep the session alive: what `/mcp`'s direct path
/// ([`crate::direct`]) holds for each open session.
pub(crate) struct WeakGatewayServer<B> {
    backend: Arc<B>,
    session: Weak<Session>,
}

impl<B> Clone for WeakGatewayServer<B> {
    fn clone(&self) -> Self {
        Self {
            backend: self.backend.clone(),
            session: self.session.clone(),
        }
    }
}

impl<B> WeakGatewayServer<B> {
    /// The session's server while its session is open (a copy that does not keep it open).
    pub(crate) fn upgrade(&self) -> Option<GatewayServer<B>> {
        let session = self.session.upgrade()?;
        (!session.closed.is_cancelled()).then(|| GatewayServer {
            backend: self.backend.clone(),
            session,
            held: None,
        })
    }

    /// Cancelled when the session closes (rmcp let it go); `None` once it is gone.
    pub(crate) fn closed(&self) -> Option<CancellationToken> {
        Some(self.session.upgrade()?.closed.clone())
    }
}

impl<B> GatewayServer<B> {
    pub(crate) fn downgrade(&self) -> WeakGatewayServer<B> {
        WeakGatewayServer {
            backend: self.backend.clone(),
            session: Arc::downgrade(&self.session),
        }
    }

    /// A copy for the session's own tasks, which does not keep the session open.
    fn detached(&self) -> Self {
        Self {
            backend: self.backend.clone(),
            session: self.session.clone(),
            held: None,
        }
    }
}

struct Session {
    /// A session of the local aggregator (`mcp-stdio --local`): its bot and face, fixed at
    /// construction, with no HTTP request to read them from. `None` for every HTTP session.
    local: Option<(String, GatewayScope)>,
    /// The bot that initialized this session.
    bot: OnceLock<String>,
    /// The face it was opened on (`/mcp` or `/mcp/{server}`).
    scope: OnceLock<GatewayScope>,
    /// Merged prompt names → (server, prompt), from the last `prompts/list`.
    prompts: Mutex<BTreeMap<String, toolset::ToolRoute>>,
    /// (server, the server's URI) this session subscribed to.
    subscribed: Mutex<BTreeSet<(String, String)>>,
    /// The ledger each of those subscriptions joined ([`mcp_client::Subscribers`]), left
    /// when the session closes (locked before `subscribed` where both are).
    ledgers: Mutex<BTreeMap<(String, String), Arc<mcp_client::Subscribers>>>,
    /// The task that leaves them at the close was started (with the first).
    leaving: std::sync::atomic::AtomicBool,
    /// The level the client asked for with `logging/setLevel`; no log messages before.
    log_level: Mutex<Option<LoggingLevel>>,
    /// The tools last listed.
    listed: Arc<Mutex<Option<Arc<ExposedTools>>>>,
    /// Cancelled when rmcp lets the session go (see [`GatewayServer::held`]): ends the
    /// session's followers and the calls `/mcp`'s direct path serves in it.
    closed: CancellationToken,
    /// The followers were started (at the first `notifications/initialized`: a client that
    /// sends it again starts no more).
    following: std::sync::atomic::AtomicBool,
}

impl<B: GatewayBackend> GatewayServer<B> {
    pub fn new(backend: Arc<B>) -> Self {
        Self::with_local(backend, None)
    }

    /// A session for one local client over stdio (`botcraft mcp-stdio --local`): the bot
    /// and face are fixed here, where an HTTP session takes them from its key and path.
    pub fn local(backend: Arc<B>, bot: String, scope: GatewayScope) -> Self {
        Self::with_local(backend, Some((bot, scope)))
    }

    fn with_local(backend: Arc<B>, local: Option<(String, GatewayScope)>) -> Self {
        let closed = CancellationToken::new();
        Self {
            backend,
            session: Arc::new(Session {
                local,
                bot: OnceLock::new(),
                scope: OnceLock::new(),
                prompts: Mutex::new(BTreeMap::new()),
                subscribed: Mutex::new(BTreeSet::new()),
                ledgers: Mutex::new(BTreeMap::new()),
                leaving: std::sync::atomic::AtomicBool::new(false),
                log_level: Mutex::new(None),
                listed: Arc::new(Mutex::new(None)),
                closed: closed.clone(),
                following: std::sync::atomic::AtomicBool::new(false),
            }),
            held: Some(Arc::new(closed.drop_guard())),
        }
    }

    /// The bot of this request: the authenticated one, which must be the session's.
    fn bot<'a>(
        &'a self,
        extensions: &'a rmcp::model::Extensions,
    ) -> Result<Cow<'a, str>, ErrorData> {
        if let Some((bot, _)) = &self.session.local {
            return Ok(Cow::Borrowed(bot));
        }
        let bot = extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<AuthenticatedBot>())
            .or_else(|| extensions.get::<AuthenticatedBot>())
            .map(|bot| Cow::Borrowed(bot.0.as_str()))
            .ok_or_else(|| ErrorData::invalid_request("not authenticated", None))?;
        match self.session.bot.get() {
            Some(owner) if **owner != *bot => Err(ErrorData::invalid_request(
                "this session was opened with another key",
                None,
            )),
            _ => Ok(bot),
        }
    }

    /// The face of this request (set by the auth layer from the path; `/mcp` when
    /// absent), which must be the session's.
    fn scope(&self, extensions: &rmcp::model::Extensions) -> Result<GatewayScope, ErrorData> {
        if let Some((_, scope)) = &self.session.local {
            return Ok(scope.clone());
        }
        let scope = extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<GatewayScope>())
            .or_else(|| extensions.get::<GatewayScope>())
            .cloned()
            .unwrap_or(GatewayScope::Bot);
        match self.session.scope.get() {
            Some(opened) if *opened != scope => Err(ErrorData::invalid_request(
                "this session was opened on another MCP endpoint",
                None,
            )),
            _ => Ok(scope),
        }
    }

    /// The bot and face of this request.
    fn who<'a>(
        &'a self,
        extensions: &'a rmcp::model::Extensions,
    ) -> Result<(Cow<'a, str>, GatewayScope), ErrorData> {
        Ok((self.bot(extensions)?, self.scope(extensions)?))
    }

    fn last_listing(&self) -> Option<Arc<ExposedTools>> {
        lock(&self.session.listed).clone()
    }

    async fn fresh_listing(
        &self,
        bot: &str,
        scope: &GatewayScope,
    ) -> Result<Arc<ExposedTools>, ErrorData> {
        // Boxed, as the backend's forward (`relayed.rs`): keeps each request's task small.
        let exposed = Box::pin(fetch_listing(self.backend.as_ref(), bot, scope)).await?;
        *lock(&self.session.listed) = Some(exposed.clone());
        Ok(exposed)
    }

    fn follow_tool_lists(&self, bot: String, scope: GatewayScope, peer: rmcp::Peer<RoleServer>) {
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
                let Ok(fresh) = fetch_listing(backend.as_ref(), &bot, &scope).await else {
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

impl<B: GatewayBackend> GatewayServer<B> {
    /// Pass the notifications of the session's servers on (log messages once the client set
    /// a level, updates of URIs it subscribed to, resource and prompt list changes) until the
    /// session ends.
    async fn follow_server_events(
        &self,
        bot: String,
        scope: GatewayScope,
        peer: rmcp::Peer<RoleServer>,
    ) {
        let servers = match &scope {
            GatewayScope::Server(server) => vec![server.clone()],
            GatewayScope::Bot => match self.backend.bot_servers(&bot).await {
                Ok(servers) => servers,
                Err(_) => return,
            },
        };
        let merged = scope == GatewayScope::Bot;
        for server in servers {
            let Some(mut events) = self.backend.server_events(&server) else {
                continue;
            };
            let this = self.detached();
            let peer = peer.clone();
            let closed = self.session.closed.clone();
            let bot = bot.clone();
            drop(tokio::spawn(async move {
                loop {
                    let event = tokio::select! {
                        () = closed.cancelled() => return,
                        event = events.recv() => event,
                    };
                    match event {
                        Ok(event) => {
                            // The bot may have lost the server since the session began (a
                            // binding removed or disabled): from then on it hears nothing of
                            // it. A store that cannot say skips this one event only.
                            match this.backend.bot_servers(&bot).await {
                                Ok(servers) if !servers.contains(&server) => return,
                                Ok(_) => {}
                                Err(_) => continue,
                            }
                            if this.deliver(&peer, &server, merged, event).await.is_err() {
                                return;
                            }
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                            tracing::warn!(
                                server,
                                missed,
                                "a session fell behind its server's notifications"
                            );
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    }
                }
            }));
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The bot's tools on this face: all under qualified names (`/mcp`), or one server's under
/// their own names (`/mcp/{server}`).
async fn fetch_listing<B: GatewayBackend>(
    backend: &B,
    bot: &str,
    scope: &GatewayScope,
) -> Result<Arc<ExposedTools>, ErrorData> {
    let listing = backend.bot_tools(bot).await.map_err(list_error)?;
    for cause in &listing.failures {
        tracing::warn!(bot, cause, "an MCP server is left out of the bot's tools");
    }
    Ok(Arc::new(match scope {
        GatewayScope::Bot => ExposedTools::from_backend(&listing.tools),
        GatewayScope::Server(server) => {
            let own: Vec<ExposedTool> = listing
                .tools
                .into_iter()
                .filter(|t| t.route.server == *server)
                .map(|t| ExposedTool {
                    qualified: t.route.tool.clone(),
                    ..t
                })
                .collect();
            ExposedTools::from_backend(&own)
        }
    }))
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
        ServerConfig::new(crate::relay::relayed_capabilities()).with_server_info(
            Implementation::new(GATEWAY_NAME, env!("CARGO_PKG_VERSION")).with_title("BotCraft"),
        )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let (bot, scope) = self.who(&context.extensions)?;
        let mut instructions = self
            .backend
            .bot_instructions(&bot)
            .await
            .map_err(list_error)?;
        if let GatewayScope::Server(server) = &scope {
            let servers = self.backend.bot_servers(&bot).await.map_err(list_error)?;
            if !servers.contains(server) {
                return Err(ErrorData::invalid_params(
                    format!("Unknown MCP server: {server}"),
                    None,
                ));
            }
            instructions.retain(|i| i.server == *server);
        }
        let _ = self.session.bot.set(bot.clone().into_owned());
        let _ = self.session.scope.set(scope.clone());
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        // `/mcp`'s direct path learns of the session (its server and peer) from the request
        // that opened it.
        if let Some(opening) = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<crate::direct::Opening<B>>())
        {
            opening.opened(self.downgrade(), context.peer.clone());
        }
        result.instructions = match &scope {
            GatewayScope::Bot => {
                result.server_info.title = Some(format!("BotCraft bot {bot}"));
                Some(combined_instructions(&bot, &instructions))
            }
            GatewayScope::Server(server) => {
                result.server_info.title = Some(format!("BotCraft bot {bot}: MCP server {server}"));
                instructions.into_iter().next().map(|i| i.text)
            }
        };
        Ok(result)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self
            .session
            .following
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        if let (Some(bot), Some(scope)) = (self.session.bot.get(), self.session.scope.get()) {
            self.follow_tool_lists(bot.clone(), scope.clone(), context.peer.clone());
            self.follow_server_events(bot.clone(), scope.clone(), context.peer)
                .await;
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let span = crate::traced::received("tools/list", None, &context);
        let listed = async {
            let (bot, scope) = self.who(&context.extensions)?;
            let listing = self.fresh_listing(&bot, &scope).await?;
            Ok(ListToolsResult::with_all_items(listing.tools().to_vec()))
        }
        .instrument(span.clone())
        .await;
        crate::traced::ended(&span, listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let span = crate::traced::received("tools/call", Some(&request.name), &context);
        let called = self
            .call_tool_in_span(request, context)
            .instrument(span.clone())
            .await;
        crate::traced::ended_call(&span, called)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let span = crate::traced::received("resources/list", None, &context);
        let listed = self
            .list(Listing::Resources, request, &context)
            .instrument(span.clone())
            .await;
        crate::traced::ended(&span, listed)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let span = crate::traced::received("resources/templates/list", None, &context);
        let listed = self
            .list(Listing::ResourceTemplates, request, &context)
            .instrument(span.clone())
            .await;
        crate::traced::ended(&span, listed)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let span = crate::traced::received("resources/read", Some(&request.uri), &context);
        let read = async {
            let (bot, scope) = self.who(&context.extensions)?;
            self.relay_read(&bot, &scope, request, &context).await
        }
        .instrument(span.clone())
        .await;
        crate::traced::ended(&span, read)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.relay_subscription(&request.uri, true, &context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.relay_subscription(&request.uri, false, &context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let span = crate::traced::received("prompts/list", None, &context);
        let listed = self
            .list(Listing::Prompts, request, &context)
            .instrument(span.clone())
            .await;
        crate::traced::ended(&span, listed)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let span = crate::traced::received("prompts/get", Some(&request.name), &context);
        let got = self
            .get_prompt_in_span(request, context)
            .instrument(span.clone())
            .await;
        crate::traced::ended(&span, got)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let span = crate::traced::received("completion/complete", None, &context);
        let completed = async {
            let (bot, scope) = self.who(&context.extensions)?;
            expect(self.relay_complete(&bot, &scope, request, &context).await?)
        }
        .instrument(span.clone())
        .await;
        crate::traced::ended(&span, completed)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.who(&context.extensions)?;
        // The level filters what this session hears, and goes no further: a server's
        // connection is shared by every session of every bot that uses it, so a level sent
        // on would be everyone's (a `debug` would have the server tell this client about
        // other bots' calls, an `emergency` would silence it for all of them).
        *lock(&self.session.log_level) = Some(request.level);
        Ok(())
    }
}

/// The bodies of the requests whose spans the handler opens.
impl<B: GatewayBackend> GatewayServer<B> {
    async fn call_tool_in_span(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (bot, scope) = self.who(&context.extensions)?;
        let mut upstream = request;
        // The qualified name is the client's; the server gets its own name for the tool.
        let name = std::mem::take(&mut upstream.name);
        let cached = self.last_listing().filter(|listing| {
            self.session.scope.get() == Some(&scope) && listing.resolve(&name).is_some()
        });
        let listing = match cached {
            Some(listing) => listing,
            None => self.fresh_listing(&bot, &scope).await?,
        };
        // Borrowed from the listing this call holds: no copy of the route per call.
        let route = listing.resolve(&name).ok_or_else(|| unknown_tool(&name))?;
        // A backend that relays tools only gets the arguments again if its forward refuses;
        // one that forwards takes the request as it is (no copy of the arguments).
        let arguments = (!self.backend.forwards()).then(|| upstream.arguments.clone());
        upstream.name = route.tool.clone().into();
        let forwarded = self
            .forward(
                &bot,
                &route.server,
                ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(upstream)),
                &context,
            )
            .await;
        let outcome = match forwarded {
            Ok(ServerResult::CallToolResult(result)) => Ok(result),
            // A 2026-07-28 client's call the server needs more input for: the client answers
            // and retries (with `requestState`), and the retry comes through here again.
            Ok(ServerResult::InputRequiredResult(asked)) => {
                return Ok(CallToolResponse::InputRequired(asked));
            }
            Ok(other) => expect::<CallToolResult>(other).map_err(|e| BackendError::Internal {
                cause: e.message.to_string(),
            }),
            // A backend that relays tools only.
            Err(BackendError::Unsupported { .. }) if let Some(arguments) = arguments => {
                Box::pin(self.backend.call_tool(
                    &bot,
                    &route.server,
                    &route.tool,
                    arguments,
                    context.ct.clone(),
                ))
                .await
            }
            Err(error) => Err(error),
        };
        let result = match outcome {
            // A server on an older revision sends no `resultType`; rmcp drops "complete"
            // again for clients on those revisions, and 2026-07-28 clients require it.
            Ok(mut result) => {
                result
                    .result_type
                    .get_or_insert(rmcp::model::ResultType::COMPLETE);
                result
            }
            Err(BackendError::NotAllowed { .. }) => return Err(unknown_tool(&name)),
            Err(BackendError::UnknownBot { bot }) => {
                return Err(list_error(BackendError::UnknownBot { bot }));
            }
            Err(BackendError::Refused {
                code,
                message,
                data,
            }) => {
                return Err(ErrorData::new(rmcp::model::ErrorCode(code), message, data));
            }
            Err(BackendError::Internal { cause })
            | Err(BackendError::Unsupported { method: cause }) => {
                tracing::error!(
                    bot = &*bot,
                    tool = &*name,
                    cause,
                    "tool call failed internally"
                );
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

    async fn get_prompt_in_span(
        &self,
        mut request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let (bot, scope) = self.who(&context.extensions)?;
        let route = self
            .route_prompt(&bot, &scope, &request.name, &context)
            .await?;
        request.name = route.tool.clone();
        let answer = self
            .relay(
                &bot,
                &route.server,
                ClientRequest::GetPromptRequest(rmcp::model::Request::new(request)),
                &context,
            )
            .await?;
        if let ServerResult::InputRequiredResult(asked) = answer {
            return Ok(GetPromptResponse::InputRequired(asked));
        }
        expect::<rmcp::model::GetPromptResult>(answer).map(Into::into)
    }
}
