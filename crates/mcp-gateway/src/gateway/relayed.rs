//! The requests the gateway relays beyond the tool list: resources, prompts, completion,
//! logging, and the events that come back (log messages, resource updates, list changes).
//!
//! On `/mcp/{server}` each request goes to that server as it came (the client's `_meta`
//! forwarded, see [`crate::relay::forwarded_meta`]) and its answer or JSON-RPC error comes back
//! unchanged. On `/mcp` lists are gathered from each of the bot's enabled servers (starting
//! them if needed; a server without the capability is left out), resource URIs are exposed as
//! `botcraft://SERVER/URI` and prompts as `server__prompt`; requests route back by those names.
//!
//! A client on 2026-07-28 or later has its requests go on as requests of that revision:
//! the upstream request names the client's revision and declared capabilities in its
//! `_meta` (rmcp servers read a request's revision from there before the connection's), so a
//! server may answer it with an `InputRequiredResult` (multi round-trip requests), which
//! comes back to the client unchanged and whose retry (`inputResponses`, `requestState`) goes
//! on the same way. Of the client's capabilities only elicitation, sampling and roots go on.
//! A server that does not know that revision (JSON-RPC -32022 whose `supported` lacks it)
//! gets the request again without it. The manager sends it to a stdio server as it is and to
//! a streamable-HTTP one on a 2026-07-28 link of its own (`McpServerManager::forward`).
//! Clients of 2025-11-25 are unchanged: their server requests (elicitation, sampling) are
//! relayed to them as requests.

#![allow(deprecated)] // logging is legacy in 2026-07-28; 2025-11-25 sessions use it

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_client::relay::ServerEvent;
use mcp_lifecycle::ForwardFor;
use rmcp::model::{
    ClientCapabilities, ClientRequest, ErrorCode, GetMeta, LoggingLevel, PaginatedRequestParams,
    ProtocolVersion, RequestOptionalParam, ServerResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::Value;
use toolset::{QualifiedToolNames, ToolRoute};

use super::{GatewayServer, lock};
use crate::backend::{BackendError, GatewayBackend};
pub(crate) use crate::relay::expect;

/// The most resources one session follows at once.
pub(crate) const MAX_SUBSCRIPTIONS_PER_SESSION: usize = 1024;
use crate::relay::{
    Declared, GatewayScope, SessionCaller, forwarded_meta, mark_complete, qualify_uri, split_uri,
};

/// The revision of this request's client when it is 2026-07-28 or later (requests that
/// carry their own revision and may be answered with an `InputRequiredResult`).
fn stateless_revision(context: &RequestContext<RoleServer>) -> Option<ProtocolVersion> {
    context
        .meta
        .protocol_version()
        .filter(|revision| *revision >= ProtocolVersion::V_2026_07_28)
}

/// What a 2026-07-28 client declared that a server's input requests may use: elicitation,
/// sampling and roots. Nothing else (tasks, extensions) goes on: a server could otherwise
/// answer in a form the gateway does not relay.
fn input_capabilities(context: &RequestContext<RoleServer>) -> ClientCapabilities {
    let declared = context.client_capabilities().unwrap_or_default();
    let mut kept = ClientCapabilities::default();
    kept.elicitation = declared.elicitation;
    kept.sampling = declared.sampling;
    kept.roots = declared.roots;
    kept
}

/// Whether a -32022 refusal's `data.supported` lists `revision` (then the refusal is about
/// something else, and nothing is sent again).
fn supports(data: Option<&Value>, revision: &ProtocolVersion) -> bool {
    data.and_then(|data| data.get("supported"))
        .and_then(Value::as_array)
        .is_some_and(|supported| {
            supported
                .iter()
                .any(|v| v.as_str() == Some(revision.as_str()))
        })
}

/// Pages of one list gathered per server at most (a server that pages forever is cut).
const MAX_PAGES: usize = 50;

/// Bytes (as JSON) of the items of one merged list at most, every server's together: a
/// server whose pages are each as large as a line may be still cannot make BotCraft hold
/// gigabytes for one `resources/list`. Items past it are left out, and the log says so.
pub const MAX_MERGED_LIST_BYTES: usize = 32 * 1024 * 1024;

/// Keeps the items of `page` that fit in what is `left` of the merged list's bytes; `false`
/// once one did not fit (the list is then full). Each item is counted as the client gets it:
/// `extra` more bytes (what naming it after its server adds) and a comma.
fn take_within(items: &mut Vec<Value>, page: &[Value], left: &mut usize, extra: usize) -> bool {
    for item in page {
        let size = serde_json::to_vec(item)
            .map_or(usize::MAX, |json| json.len())
            .saturating_add(extra + 1);
        if size > *left {
            *left = 0;
            return false;
        }
        *left -= size;
        items.push(item.clone());
    }
    true
}

/// What a relayed request failed with, as the client sees it.
pub(crate) fn relay_error(server: &str, error: BackendError) -> ErrorData {
    match error {
        BackendError::Refused {
            code,
            message,
            data,
        } => ErrorData::new(ErrorCode(code), message, data),
        BackendError::NotAllowed { .. } | BackendError::UnknownBot { .. } => {
            ErrorData::invalid_params(format!("Unknown MCP server: {server}"), None)
        }
        BackendError::Unsupported { method } => ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("BotCraft does not relay {method} here"),
            None,
        ),
        BackendError::Timeout { .. } => {
            ErrorData::internal_error(format!("MCP server {server} did not answer in time"), None)
        }
        BackendError::Cancelled => ErrorData::internal_error("the request was cancelled", None),
        BackendError::Unavailable { cause, .. } => {
            tracing::warn!(
                server,
                cause,
                "a relayed request found its server unavailable"
            );
            ErrorData::internal_error(
                format!("MCP server {server} is unavailable; see the BotCraft log"),
                None,
            )
        }
        BackendError::Internal { cause } => {
            tracing::error!(server, cause, "a relayed request failed inside BotCraft");
            ErrorData::internal_error("the request failed inside BotCraft; see its log", None)
        }
    }
}

fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|error| {
        ErrorData::internal_error(format!("cannot relay the answer: {error}"), None)
    })
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, ErrorData> {
    serde_json::to_value(value).map_err(|error| {
        ErrorData::internal_error(format!("cannot relay the request: {error}"), None)
    })
}

fn paged(
    params: Option<PaginatedRequestParams>,
) -> RequestOptionalParam<rmcp::model::ListResourcesRequestMethod, PaginatedRequestParams> {
    RequestOptionalParam {
        method: Default::default(),
        params,
        extensions: Default::default(),
    }
}

/// Rewrite the string field `field` of every object in `items` with `f`.
fn rewrite(items: &mut [Value], field: &str, mut f: impl FnMut(&str) -> String) {
    for item in items {
        if let Some(Value::String(text)) = item.get_mut(field) {
            *text = f(text);
        }
    }
}

/// The list kinds the merged face gathers.
#[derive(Clone, Copy)]
pub(crate) enum Listing {
    Resources,
    ResourceTemplates,
    Prompts,
}

impl Listing {
    fn field(self) -> &'static str {
        match self {
            Self::Resources => "resources",
            Self::ResourceTemplates => "resourceTemplates",
            Self::Prompts => "prompts",
        }
    }

    fn request(self, params: Option<PaginatedRequestParams>) -> ClientRequest {
        match self {
            Self::Resources => ClientRequest::ListResourcesRequest(paged(params)),
            Self::ResourceTemplates => {
                ClientRequest::ListResourceTemplatesRequest(RequestOptionalParam {
                    method: Default::default(),
                    params,
                    extensions: Default::default(),
                })
            }
            Self::Prompts => ClientRequest::ListPromptsRequest(RequestOptionalParam {
                method: Default::default(),
                params,
                extensions: Default::default(),
            }),
        }
    }
}

impl<B: GatewayBackend> GatewayServer<B> {
    /// Forward `request` to `server` for this request's client; a failure as the client
    /// sees it.
    pub(crate) async fn relay(
        &self,
        bot: &str,
        server: &str,
        request: ClientRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        self.forward(bot, server, request, context)
            .await
            .map_err(|error| relay_error(server, error))
    }

    /// Forward `request` to `server` for this request's client (its `_meta`, progress token,
    /// cancellation, and itself to answer the server's requests).
    pub(crate) async fn forward(
        &self,
        bot: &str,
        server: &str,
        mut request: ClientRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, BackendError> {
        if let Some(meta) = forwarded_meta(&context.meta) {
            request.get_meta_mut().extend(meta);
        }
        let revision = stateless_revision(context);
        // A 2026-07-28 client takes no requests from a server: what a server asks of it comes
        // as an InputRequiredResult, so the manager refuses a server's request with the reason.
        let declared = match revision {
            Some(_) => Declared::default(),
            None => Declared::by_client_of(context),
        };
        // The session's address: a key no other open session has.
        let client = std::sync::Arc::as_ptr(&self.session) as usize;
        let target = || ForwardFor {
            caller: Some(SessionCaller::new(context.peer.clone(), declared, client)),
            progress: context.meta.get_progress_token(),
            // The toolset names the bot (by id) once it has checked the binding.
            principal: None,
        };
        let Some(revision) = revision else {
            // Boxed: rmcp spawns a task per request whose future holds the largest handler's
            // state, and the backend's forward (toolsets, manager, rmcp client) is most of
            // it. On the heap, every request's task stays small instead of being copied whole.
            return Box::pin(self.backend.forward(
                bot,
                server,
                request,
                target(),
                context.ct.clone(),
            ))
            .await;
        };
        let plain = request.clone();
        let meta = request.get_meta_mut();
        meta.set_protocol_version(revision.clone());
        meta.set_client_capabilities(input_capabilities(context));
        let answer =
            Box::pin(
                self.backend
                    .forward(bot, server, request, target(), context.ct.clone()),
            )
            .await;
        match answer {
            Err(BackendError::Refused { code, data, .. })
                if code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0
                    && !supports(data.as_ref(), &revision) =>
            {
                // Refused before any handler ran (the revision is checked first): sent again
                // as a request of the connection's revision.
                Box::pin(
                    self.backend
                        .forward(bot, server, plain, target(), context.ct.clone()),
                )
                .await
            }
            other => other,
        }
    }

    /// A list on this request's face: the server's page as it answered (`/mcp/{server}`),
    /// or every server's items, renamed (`/mcp`).
    pub(crate) async fn list<T: DeserializeOwned>(
        &self,
        kind: Listing,
        params: Option<PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<T, ErrorData> {
        let (bot, scope) = self.who(&context.extensions)?;
        match &scope {
            GatewayScope::Server(server) => expect(
                self.relay(&bot, server, kind.request(params), context)
                    .await?,
            ),
            GatewayScope::Bot => from_value(self.merged_list(&bot, kind, context).await?),
        }
    }

    /// One list of the merged face: every enabled server's items, all pages, renamed.
    pub(crate) async fn merged_list(
        &self,
        bot: &str,
        kind: Listing,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let servers = self
            .backend
            .bot_servers(bot)
            .await
            .map_err(|error| relay_error("", error))?;
        let mut gathered: Vec<(String, Vec<Value>)> = Vec::new();
        let mut left = MAX_MERGED_LIST_BYTES;
        for server in servers {
            if left == 0 {
                tracing::warn!(
                    bot,
                    server,
                    "a merged list is full; this server is left out"
                );
                continue;
            }
            let before = left;
            let listed = self.all_pages(bot, &server, kind, context, &mut left).await;
            if listed.is_err() {
                // Its items are left out: their bytes go back to the others.
                left = before;
            }
            match listed {
                Ok(items) => gathered.push((server, items)),
                Err(error) if error.code == ErrorCode::METHOD_NOT_FOUND => {}
                Err(error) => {
                    tracing::warn!(bot, server, error = %error.message, "a server is left out of a merged list");
                }
            }
        }
        let mut out: Vec<Value> = Vec::new();
        match kind {
            Listing::Resources => {
                for (server, mut items) in gathered {
                    rewrite(&mut items, "uri", |uri| qualify_uri(&server, uri));
                    out.extend(items);
                }
            }
            Listing::ResourceTemplates => {
                for (server, mut items) in gathered {
                    rewrite(&mut items, "uriTemplate", |uri| qualify_uri(&server, uri));
                    out.extend(items);
                }
            }
            Listing::Prompts => {
                let routes = gathered.iter().flat_map(|(server, items)| {
                    items
                        .iter()
                        .filter_map(|item| item.get("name")?.as_str())
                        .map(|name| ToolRoute::new(server.as_str(), name))
                });
                let names = QualifiedToolNames::build(routes);
                let mut map = BTreeMap::new();
                for (server, mut items) in gathered {
                    rewrite(&mut items, "name", |name| {
                        let qualified = names.qualified(&server, name).unwrap_or(name).to_owned();
                        map.insert(qualified.clone(), ToolRoute::new(server.as_str(), name));
                        qualified
                    });
                    out.extend(items);
                }
                *lock(&self.session.prompts) = map;
            }
        }
        // Every part is final, so the whole is (2026-07-28 clients need the field).
        Ok(serde_json::json!({ "resultType": "complete", kind.field(): out }))
    }

    async fn all_pages(
        &self,
        bot: &str,
        server: &str,
        kind: Listing,
        context: &RequestContext<RoleServer>,
        left: &mut usize,
    ) -> Result<Vec<Value>, ErrorData> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor
                .take()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = to_value(
                &self
                    .relay(bot, server, kind.request(params), context)
                    .await?,
            )?;
            // A URI gains `botcraft://SERVER/`, a prompt's name at most the 64 characters of
            // a qualified name.
            let extra = "botcraft://".len() + server.len() + 1 + toolset::naming::MAX_TOOL_NAME_LEN;
            if let Some(Value::Array(list)) = page.get(kind.field())
                && !take_within(&mut items, list, left, extra)
            {
                tracing::warn!(
                    server,
                    "a merged list passed {MAX_MERGED_LIST_BYTES} bytes; the rest is left out"
                );
                return Ok(items);
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(items),
            }
        }
        tracing::warn!(
            server,
            "a server's list had more than {MAX_PAGES} pages; the rest is left out"
        );
        Ok(items)
    }

    /// The server and the server's own URI of `uri` in this request's scope.
    pub(crate) fn route_uri<'a>(
        &self,
        scope: &'a GatewayScope,
        uri: &'a str,
    ) -> Result<(&'a str, &'a str), ErrorData> {
        match scope {
            GatewayScope::Server(server) => Ok((server, uri)),
            GatewayScope::Bot => split_uri(uri).ok_or_else(|| {
                ErrorData::resource_not_found(
                    format!(
                        "Resource not found: {uri} (resources here are named botcraft://SERVER/URI)"
                    ),
                    Some(serde_json::json!({"uri": uri})),
                )
            }),
        }
    }

    /// The server and raw name of prompt `name` in this request's scope.
    pub(crate) async fn route_prompt(
        &self,
        bot: &str,
        scope: &GatewayScope,
        name: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<ToolRoute, ErrorData> {
        if let GatewayScope::Server(server) = scope {
            return Ok(ToolRoute::new(server.as_str(), name));
        }
        if let Some(route) = lock(&self.session.prompts).get(name).cloned() {
            return Ok(route);
        }
        self.merged_list(bot, Listing::Prompts, context).await?;
        lock(&self.session.prompts)
            .get(name)
            .cloned()
            .ok_or_else(|| ErrorData::invalid_params(format!("Unknown prompt: {name}"), None))
    }

    /// `completion/complete`: the reference (a prompt or a resource template) routed to its
    /// server under the server's own name.
    pub(crate) async fn relay_complete(
        &self,
        bot: &str,
        scope: &GatewayScope,
        params: rmcp::model::CompleteRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let mut value = to_value(&params)?;
        let (server, raw) = match (value["ref"]["type"].as_str(), scope) {
            (_, GatewayScope::Server(server)) => (server.clone(), None),
            (Some("ref/prompt"), GatewayScope::Bot) => {
                let name = value["ref"]["name"].as_str().unwrap_or_default().to_owned();
                let route = self.route_prompt(bot, scope, &name, context).await?;
                (route.server, Some(("name", route.tool)))
            }
            (_, GatewayScope::Bot) => {
                let uri = value["ref"]["uri"].as_str().unwrap_or_default().to_owned();
                let (server, raw) = self.route_uri(scope, &uri)?;
                (server.to_owned(), Some(("uri", raw.to_owned())))
            }
        };
        if let Some((field, raw)) = raw {
            value["ref"][field] = Value::String(raw);
        }
        let request = ClientRequest::CompleteRequest(rmcp::model::Request::new(from_value(value)?));
        self.relay(bot, &server, request, context).await
    }

    /// `resources/subscribe` (`on`) or `resources/unsubscribe` of `uri`, routed to its server
    /// under the server's URI; the session remembers what it follows. The server's
    /// subscriptions are every session's ([`mcp_client::subscribers`]): a subscribe always
    /// goes on (the server may have restarted since), an unsubscribe only for a URI this
    /// session holds and no other session does; one this session does not hold is answered
    /// here and changes nothing.
    pub(crate) async fn relay_subscription(
        &self,
        uri: &str,
        on: bool,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (bot, scope) = self.who(&context.extensions)?;
        let (server, raw) = self.route_uri(&scope, uri)?;
        if raw.len() > mcp_client::MAX_RESOURCE_URI_BYTES {
            return Err(ErrorData::invalid_params(
                format!(
                    "the resource URI is {} bytes long; BotCraft follows URIs of at most {} bytes",
                    raw.len(),
                    mcp_client::MAX_RESOURCE_URI_BYTES
                ),
                None,
            ));
        }
        let key = (server.to_owned(), raw.to_owned());
        let current = self.backend.subscribers(server);
        if !on {
            // Forget first: no update for it once the client asked to stop.
            let joined = {
                let mut joined = lock(&self.session.ledgers);
                if !lock(&self.session.subscribed).remove(&key) {
                    return Ok(());
                }
                joined.remove(&key)
            };
            // A ledger of a server replaced since: left, and the server named so now is told
            // only if nobody holds the URI in its own ledger.
            if let Some(joined) = &joined
                && !current.as_ref().is_some_and(|now| Arc::ptr_eq(now, joined))
            {
                joined.ledger().await.leave(raw);
            }
            // Held while the server is told.
            let mut ledger = match &current {
                Some(subscribers) => Some(subscribers.ledger().await),
                None => None,
            };
            if let (Some(ledger), Some(joined), Some(now)) = (ledger.as_mut(), &joined, &current)
                && Arc::ptr_eq(now, joined)
            {
                ledger.leave(raw);
            }
            if ledger
                .as_ref()
                .is_some_and(|ledger| ledger.holders(raw) > 0)
            {
                return Ok(());
            }
            let request = ClientRequest::UnsubscribeRequest(rmcp::model::Request::new(
                rmcp::model::UnsubscribeRequestParams::new(raw),
            ));
            return self.relay(&bot, server, request, context).await.map(drop);
        }
        // Held in a ledger of a server replaced since: left there first, then held anew.
        let stale = {
            let mut joined = lock(&self.session.ledgers);
            match (joined.get(&key), &current) {
                (Some(old), Some(now)) if !Arc::ptr_eq(old, now) => {
                    lock(&self.session.subscribed).remove(&key);
                    joined.remove(&key)
                }
                _ => None,
            }
        };
        if let Some(old) = stale {
            old.ledger().await.leave(raw);
        }
        let held = lock(&self.session.subscribed).contains(&key);
        if !held && lock(&self.session.subscribed).len() >= MAX_SUBSCRIPTIONS_PER_SESSION {
            return Err(ErrorData::invalid_params(
                format!(
                    "this session follows {MAX_SUBSCRIPTIONS_PER_SESSION} resources, the most BotCraft lets one session follow: unsubscribe from one first"
                ),
                None,
            ));
        }
        // Held while the server is told: one server's subscription changes go in order.
        let mut ledger = match &current {
            Some(subscribers) => Some(subscribers.ledger().await),
            None => None,
        };
        let request = ClientRequest::SubscribeRequest(rmcp::model::Request::new(
            rmcp::model::SubscribeRequestParams::new(raw),
        ));
        self.relay(&bot, server, request, context).await?;
        let mut joined = lock(&self.session.ledgers);
        // Closing, the session leaves what it holds (under this lock): nothing more to hold.
        if self.session.closed.is_cancelled() || !lock(&self.session.subscribed).insert(key.clone())
        {
            return Ok(());
        }
        if let (Some(ledger), Some(subscribers)) = (ledger.as_mut(), current.as_ref()) {
            ledger.join(raw);
            joined.insert(key, Arc::clone(subscribers));
            if !self
                .session
                .leaving
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                self.leave_when_closed();
            }
        }
        Ok(())
    }

    /// When the session closes, leave every subscription it holds, in the ledger each joined
    /// (the server is not told: it may be stopped, and its updates for a URI nobody follows
    /// reach nobody).
    fn leave_when_closed(&self) {
        let session = Arc::clone(&self.session);
        drop(tokio::spawn(async move {
            session.closed.cancelled().await;
            let joined = {
                let mut joined = lock(&session.ledgers);
                lock(&session.subscribed).clear();
                std::mem::take(&mut *joined)
            };
            for ((_, uri), subscribers) in joined {
                subscribers.ledger().await.leave(&uri);
            }
        }));
    }

    /// `resources/read`; on the merged face the contents' URIs are named back.
    pub(crate) async fn relay_read(
        &self,
        bot: &str,
        scope: &GatewayScope,
        mut params: rmcp::model::ReadResourceRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let uri = params.uri.clone();
        let (server, raw) = self.route_uri(scope, &uri)?;
        params.uri = raw.to_owned();
        let request = ClientRequest::ReadResourceRequest(rmcp::model::Request::new(params));
        let mut answer = self.relay(bot, server, request, context).await?;
        if let ServerResult::InputRequiredResult(asked) = answer {
            return Ok(rmcp::model::ReadResourceResponse::InputRequired(asked));
        }
        if *scope == GatewayScope::Bot {
            mark_complete(&mut answer);
            let mut value = to_value(&answer)?;
            if let Some(Value::Array(contents)) = value.get_mut("contents") {
                rewrite(contents, "uri", |uri| qualify_uri(server, uri));
            }
            return from_value::<rmcp::model::ReadResourceResult>(value).map(Into::into);
        }
        expect::<rmcp::model::ReadResourceResult>(answer).map(Into::into)
    }

    /// Pass one server event to this session's client, if it concerns it.
    pub(crate) async fn deliver(
        &self,
        peer: &rmcp::Peer<RoleServer>,
        server: &str,
        merged: bool,
        event: ServerEvent,
    ) -> Result<(), ()> {
        match event {
            ServerEvent::Log(mut message) => {
                let wanted = *lock(&self.session.log_level);
                let Some(level) = wanted else { return Ok(()) };
                if severity(message.level) < severity(level) {
                    return Ok(());
                }
                if merged {
                    message.logger = Some(match message.logger {
                        Some(logger) => format!("{server}/{logger}"),
                        None => server.to_owned(),
                    });
                }
                #[allow(deprecated)] // logging is legacy in 2026-07-28; sessions use it
                let sent = peer.notify_logging_message(message).await;
                sent.map_err(|_| ())
            }
            ServerEvent::ResourceUpdated { uri } => {
                let key = (server.to_owned(), uri.clone());
                if !lock(&self.session.subscribed).contains(&key) {
                    return Ok(());
                }
                let uri = if merged {
                    qualify_uri(server, &uri)
                } else {
                    uri
                };
                peer.notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(
                    uri,
                ))
                .await
                .map_err(|_| ())
            }
            ServerEvent::ResourceListChanged => {
                peer.notify_resource_list_changed().await.map_err(|_| ())
            }
            ServerEvent::PromptListChanged => {
                peer.notify_prompt_list_changed().await.map_err(|_| ())
            }
        }
    }
}

/// RFC 5424 order, least severe first.
pub(crate) fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_merged_list_keeps_the_items_that_fit_and_then_no_more() {
        let item = |n: usize| json!({"uri": format!("file:///{}", "x".repeat(n))});
        let size = |value: &Value| serde_json::to_vec(value).expect("json").len();
        let page = vec![item(10), item(20), item(5)];
        // Each counted with 7 bytes more and its comma.
        let mut left = size(&page[0]) + size(&page[1]) + 2 * 8 + 1;
        let mut items = Vec::new();
        assert!(!take_within(&mut items, &page, &mut left, 7));
        assert_eq!(items, page[..2].to_vec());
        assert_eq!(left, 0, "full: no later page is taken");
        assert!(!take_within(&mut items, &[item(0)], &mut left, 0));
        assert_eq!(items.len(), 2);
        let mut roomy = usize::MAX / 2;
        let mut all = Vec::new();
        assert!(take_within(&mut all, &page, &mut roomy, 7));
        assert_eq!(all, page);
    }
}
