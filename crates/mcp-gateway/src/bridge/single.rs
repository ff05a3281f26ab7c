//! `botcraft mcp-stdio --bot B --server S`: the stdio face of `/mcp/{server}` — one of the
//! bot's servers under its own names, with everything the protocol carries relayed both ways.
//!
//! - **Start with nothing** (seed 001): `initialize` is answered locally; nothing connects at
//!   startup. The first request that needs BotCraft opens one rmcp streamable HTTP session to
//!   `BOTCRAFT_URL/mcp/S` with `BOTCRAFT_API_KEY` (declaring what the stdio client declared),
//!   kept for the life of the bridge.
//! - `tools/list` without settings, or with BotCraft unreachable, is an empty list and one
//!   reason-coded stderr line; a `tools/call` that cannot be made is an `isError` result
//!   stating the cause (and the stderr line); any other request that cannot be made is a
//!   JSON-RPC error stating the cause.
//! - **Relayed**: every request (resources, prompts, completion, logging, tools, with the
//!   client's `_meta`) and its answer or error unchanged; cancellation; progress under the
//!   client's own token; the server's sampling and elicitation requests, log messages,
//!   resource updates and list changes back to the stdio client.

#![allow(deprecated)] // sampling and logging are legacy in 2026-07-28; 2025-11-25 clients use them

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, CompleteRequestParams, CompleteResult, ContentBlock, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, GetMeta, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    RequestOptionalParam, ResourceUpdatedNotificationParam, ServerConfig, ServerResult,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, Peer, RoleClient, RoleServer, ServerHandler, ServiceExt};
use server_kit::ReasonCode;
use tokio::sync::Mutex as AsyncMutex;
use tracing::Instrument as _;

use crate::bridge::NOT_CONFIGURED;
use crate::bridge::failure::BridgeFailure;
use crate::bridge::upstream::{UpstreamConfig, endpoint_of};
use crate::gateway::GATEWAY_NAME;
use crate::relay::{expect, forwarded_meta};

type Downstream = Arc<Mutex<Option<Peer<RoleServer>>>>;
type ProgressMap = Arc<Mutex<HashMap<ProgressToken, ProgressToken>>>;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The bridge's client side towards BotCraft: the server's requests and notifications go to
/// the stdio client.
#[derive(Clone)]
struct TowardsClient {
    capabilities: ClientCapabilities,
    downstream: Downstream,
    /// Upstream progress token → the stdio client's.
    progress: ProgressMap,
}

impl TowardsClient {
    fn peer(&self) -> Result<Peer<RoleServer>, ErrorData> {
        lock(&self.downstream)
            .clone()
            .ok_or_else(|| ErrorData::internal_error("the stdio client is not connected", None))
    }
}

fn service_error(error: rmcp::ServiceError) -> ErrorData {
    match error {
        rmcp::ServiceError::McpError(error) => error,
        // A transport error can carry BotCraft's URL, and `BOTCRAFT_URL` a credential.
        other => ErrorData::internal_error(mcp_client::cut_urls(&other.to_string()), None),
    }
}

impl ClientHandler for TowardsClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            self.capabilities.clone(),
            Implementation::new(crate::bridge::BRIDGE_NAME, env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.peer()?
            .create_message(params)
            .await
            .map_err(service_error)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.peer()?
            .create_elicitation(request)
            .await
            .map_err(service_error)
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(token) = lock(&self.progress).get(&params.progress_token).cloned() else {
            return;
        };
        params.progress_token = token;
        if let Ok(peer) = self.peer() {
            let _ = peer.notify_progress(params).await;
        }
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Ok(peer) = self.peer() {
            let _ = peer.notify_logging_message(params).await;
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Ok(peer) = self.peer() {
            let _ = peer.notify_resource_updated(params).await;
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Ok(peer) = self.peer() {
            let _ = peer.notify_resource_list_changed().await;
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Ok(peer) = self.peer() {
            let _ = peer.notify_prompt_list_changed().await;
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Ok(peer) = self.peer() {
            let _ = peer.notify_tool_list_changed().await;
        }
    }
}

/// The rmcp handler of `mcp-stdio --server`.
#[derive(Clone)]
pub struct SingleServerBridge {
    bot: String,
    server: String,
    config: Option<UpstreamConfig>,
    upstream: Arc<AsyncMutex<Option<RunningService<RoleClient, TowardsClient>>>>,
    downstream: Downstream,
    progress: ProgressMap,
}

impl SingleServerBridge {
    pub fn new(bot: String, server: String, config: Option<UpstreamConfig>) -> Self {
        Self {
            bot,
            server,
            config,
            upstream: Arc::new(AsyncMutex::new(None)),
            downstream: Arc::new(Mutex::new(None)),
            progress: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The endpoint this bridge relays to.
    pub fn endpoint(config: &UpstreamConfig, server: &str) -> String {
        format!("{}/{server}", endpoint_of(&config.url))
    }

    /// The session with BotCraft, opened on first need.
    async fn session(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Peer<RoleClient>, BridgeFailure> {
        let Some(config) = &self.config else {
            return Err(BridgeFailure::new(
                ReasonCode::NotConfigured,
                NOT_CONFIGURED,
            ));
        };
        let mut slot = self.upstream.lock().await;
        if let Some(running) = slot.as_ref()
            && !running.is_transport_closed()
        {
            return Ok(running.peer().clone());
        }
        if lock(&self.downstream).is_none() {
            *lock(&self.downstream) = Some(context.peer.clone());
        }
        let capabilities = context
            .peer
            .peer_info()
            .map(|info| info.capabilities.clone())
            .unwrap_or_default();
        let url = Self::endpoint(config, &self.server);
        // What errors show: `BOTCRAFT_URL` may carry a credential.
        let endpoint = mcp_client::shown_url(&url);
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url).auth_header(config.api_key.clone()),
        );
        let handler = TowardsClient {
            capabilities,
            downstream: self.downstream.clone(),
            progress: self.progress.clone(),
        };
        let running = tokio::time::timeout(config.timeout, handler.serve(transport))
            .await
            .map_err(|_| {
                BridgeFailure::new(
                    ReasonCode::UpstreamUnreachable,
                    format!("BotCraft at {endpoint} did not answer initialize in time"),
                )
            })?
            .map_err(|error| {
                BridgeFailure::new(
                    ReasonCode::UpstreamUnreachable,
                    format!(
                        "cannot open a session with BotCraft at {endpoint}: {}",
                        mcp_client::cut_urls(&error.to_string())
                    ),
                )
            })?;
        let peer = running.peer().clone();
        *slot = Some(running);
        Ok(peer)
    }

    /// Forward `request` for the stdio client; `label` names it on stderr.
    async fn forward(
        &self,
        mut request: ClientRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, BridgeFailure> {
        let peer = self.session(context).await?;
        if let Some(meta) = forwarded_meta(&context.meta) {
            request.get_meta_mut().extend(meta);
        }
        // BotCraft's spans for this request are children of the bridge's.
        // The span closes when this function returns: its length is the forward's.
        let sent = mcp_lifecycle::spans::sent("botcraft", &request);
        mcp_lifecycle::spans::carry_context(&sent, &mut request);
        let timeout = self.config.as_ref().map(|c| c.timeout);
        let options = match timeout {
            Some(timeout) => PeerRequestOptions::with_timeout(timeout),
            None => PeerRequestOptions::no_options(),
        };
        let handle = peer
            .send_request_with_option(request, options)
            .await
            .map_err(|error| {
                BridgeFailure::new(
                    ReasonCode::UpstreamUnreachable,
                    mcp_client::cut_urls(&error.to_string()),
                )
            })?;
        let upstream_token = handle.progress_token.clone();
        if let Some(token) = context.meta.get_progress_token() {
            lock(&self.progress).insert(upstream_token.clone(), token);
        }
        let id = handle.id.clone();
        let outcome = tokio::select! {
            outcome = handle.await_response() => outcome,
            () = context.ct.cancelled() => {
                let _ = peer
                    .notify_cancelled(rmcp::model::CancelledNotificationParam::new(Some(id), Some("the client cancelled the request".to_owned())))
                    .await;
                lock(&self.progress).remove(&upstream_token);
                return Err(BridgeFailure::new(ReasonCode::ToolError, "the request was cancelled by the client"));
            }
        };
        lock(&self.progress).remove(&upstream_token);
        outcome.map_err(|error| match error {
            rmcp::ServiceError::McpError(error) => BridgeFailure::refused(error),
            rmcp::ServiceError::Timeout { .. } => BridgeFailure::new(
                ReasonCode::UpstreamUnreachable,
                "BotCraft did not answer in time",
            ),
            other => BridgeFailure::new(
                ReasonCode::UpstreamBadPayload,
                mcp_client::cut_urls(&other.to_string()),
            ),
        })
    }

    /// A request other than `tools/call`: its failure as a JSON-RPC error, with the line.
    async fn relay<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        request: ClientRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<T, ErrorData> {
        // Boxed: rmcp spawns a task per request holding its largest handler's future, and
        // the HTTP exchange is most of it.
        match Box::pin(self.forward(request, context)).await {
            Ok(answer) => expect(answer),
            Err(failure) => {
                eprintln!("{}", failure.stderr_line(method));
                Err(failure.into_error())
            }
        }
    }
}

fn listing(
    params: Option<PaginatedRequestParams>,
) -> RequestOptionalParam<rmcp::model::ListToolsRequestMethod, PaginatedRequestParams> {
    RequestOptionalParam {
        method: Default::default(),
        params,
        extensions: Default::default(),
    }
}

impl ServerHandler for SingleServerBridge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(crate::relay::relayed_capabilities()).with_server_info(
            Implementation::new(GATEWAY_NAME, env!("CARGO_PKG_VERSION")).with_title(format!(
                "BotCraft bot {}: MCP server {}",
                self.bot, self.server
            )),
        )
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        *lock(&self.downstream) = Some(context.peer);
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        match self
            .forward(ClientRequest::ListToolsRequest(listing(request)), &context)
            .await
        {
            Ok(answer) => expect(answer),
            // Seed 001: listing works with nothing; the cause goes to stderr.
            Err(failure) => {
                eprintln!("{}", failure.stderr_line("tools/list"));
                Ok(ListToolsResult::default())
            }
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let span = crate::traced::received("tools/call", Some(&name), &context);
        let call = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(request));
        let answer = match Box::pin(self.forward(call, &context).instrument(span.clone())).await {
            Ok(ServerResult::CallToolResult(result)) => Ok(result.into()),
            Ok(other) => expect::<CallToolResult>(other).map(Into::into),
            Err(failure) if failure.refusal().is_some() => Err(failure.into_error()),
            Err(failure) => {
                eprintln!("{}", failure.stderr_line(&name));
                Ok(CallToolResult::error(vec![ContentBlock::text(failure.message)]).into())
            }
        };
        crate::traced::ended_call(&span, answer)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let request = ClientRequest::ListResourcesRequest(RequestOptionalParam {
            method: Default::default(),
            params: request,
            extensions: Default::default(),
        });
        self.relay("resources/list", request, &context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let request = ClientRequest::ListResourceTemplatesRequest(RequestOptionalParam {
            method: Default::default(),
            params: request,
            extensions: Default::default(),
        });
        self.relay("resources/templates/list", request, &context)
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let request = ClientRequest::ReadResourceRequest(rmcp::model::Request::new(request));
        self.relay::<ReadResourceResult>("resources/read", request, &context)
            .await
            .map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let request = ClientRequest::SubscribeRequest(rmcp::model::Request::new(request));
        self.relay::<serde_json::Value>("resources/subscribe", request, &context)
            .await
            .map(|_| ())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let request = ClientRequest::UnsubscribeRequest(rmcp::model::Request::new(request));
        self.relay::<serde_json::Value>("resources/unsubscribe", request, &context)
            .await
            .map(|_| ())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let request = ClientRequest::ListPromptsRequest(RequestOptionalParam {
            method: Default::default(),
            params: request,
            extensions: Default::default(),
        });
        self.relay("prompts/list", request, &context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let request = ClientRequest::GetPromptRequest(rmcp::model::Request::new(request));
        self.relay::<GetPromptResult>("prompts/get", request, &context)
            .await
            .map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let request = ClientRequest::CompleteRequest(rmcp::model::Request::new(request));
        self.relay("completion/complete", request, &context).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let request = ClientRequest::SetLevelRequest(rmcp::model::Request::new(request));
        self.relay::<serde_json::Value>("logging/setLevel", request, &context)
            .await
            .map(|_| ())
    }
}
