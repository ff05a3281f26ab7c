//! Any request, forwarded to a server for a client of BotCraft: what the gateway's relay of
//! resources, prompts, completion, logging and tool calls stands on.
//!
//! [`McpServerManager::forward`] starts the server if needed (lazy start), counts the request
//! as in flight (no idle stop meanwhile), registers the client as the [`Caller`] of the
//! server's requests and progress while it runs ([`mcp_client::relay`]), and applies the server's
//! call timeout. When the client cancels, `notifications/cancelled` goes to the server and the
//! answer is [`LifecycleError::Cancelled`]; when the timeout passes, rmcp sends it, and a ping
//! tells a slow server from a silent one, which is stopped and restarted
//! ([`LifecycleError::Unresponsive`]). A JSON-RPC error of the server comes back as
//! [`LifecycleError::Refused`], unchanged, for the client to see.
//!
//! A `tools/call` to a server on a pipe (a child, an in-process server) on a revision before
//! 2026-07-28 goes on the pipe's lane past rmcp's service loop ([`mcp_client::lane`]), with
//! the same progress routing, timeout (and the same `notifications/cancelled` when it
//! passes), cancellation and errors; everything else goes through rmcp.
//!
//! A request may name its own revision in `_meta` (2026-07-28's per-request keys, which the
//! gateway sets for its 2026-07-28 clients): a stdio server reads it per request. A remote
//! server gets it on the connection's 2026-07-28 link ([`mcp_client::StatelessLink`]) when it has
//! one, else without those keys, because rmcp's HTTP client would make that revision the
//! shared connection's for every later request.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{
    ClientRequest, ProgressToken, ProtocolVersion, RequestId, RequestMetaObject,
    ServerCapabilities, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use rmcp::transport::DynamicTransportError;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::error::LifecycleError;
use crate::manager::{Demand, InFlight, McpServerManager, Slot};
use crate::process::McpProcess;
use mcp_client::DirectLane;
use mcp_client::lane::{LaneClosed, LaneSendError};
use mcp_client::relay::{Caller, Registration, ServerEvent};

/// Who a forwarded request is for.
#[derive(Clone, Default)]
pub struct ForwardFor {
    /// Answers the server's sampling and elicitation requests, hears progress.
    pub caller: Option<Arc<dyn Caller>>,
    /// The client's own progress token (its request's `_meta.progressToken`).
    pub progress: Option<ProgressToken>,
    /// The principal the request is for (the app's: a bot, by id): it goes on the
    /// principal's own connection when the principal has OAuth credentials of its own for
    /// the server ([`crate::principals`]).
    pub principal: Option<String>,
}

/// The per-request revision keys of 2026-07-28, which a request may carry in its `_meta`.
const REVISION_KEYS: [&str; 3] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
];

/// Takes the per-request revision keys out of `request`; them, when they name 2026-07-28 or
/// later.
fn take_request_revision(request: &mut ClientRequest) -> Option<RequestMetaObject> {
    use rmcp::model::GetMeta as _;
    let meta = request.get_meta_mut();
    let mut taken = RequestMetaObject::new();
    for key in REVISION_KEYS {
        if let Some(value) = meta.0.remove(key) {
            taken.0.insert(key.to_owned(), value);
        }
    }
    taken
        .protocol_version()
        .is_some_and(|revision| revision >= ProtocolVersion::V_2026_07_28)
        .then_some(taken)
}

/// The caller of every request with no client to ask (one, shared: no allocation per call).
static UNATTENDED: std::sync::LazyLock<Arc<dyn Caller>> =
    std::sync::LazyLock::new(|| Arc::new(mcp_client::Unattended));

/// How long an answer waits for the progress sent before it to reach its client.
const PROGRESS_FLUSH_LIMIT: Duration = Duration::from_secs(5);

impl McpServerManager {
    /// The notifications of `server` from now on (log messages, resource updates, resource
    /// and prompt list changes), whether or not it runs yet.
    pub fn server_events(
        &self,
        server: &str,
    ) -> Result<broadcast::Receiver<ServerEvent>, LifecycleError> {
        Ok(self.slot(server)?.relay.subscribe())
    }

    /// Who holds which of `server`'s resource subscriptions (shared by every face and
    /// session, like its connection).
    pub fn server_subscribers(
        &self,
        server: &str,
    ) -> Result<Arc<mcp_client::Subscribers>, LifecycleError> {
        Ok(self.slot(server)?.relay.subscribers())
    }

    /// How many follow `server`'s notifications now (each open session of a bot that binds
    /// it, on the gateway).
    pub fn server_event_followers(&self, server: &str) -> Result<usize, LifecycleError> {
        Ok(self.slot(server)?.relay.followers())
    }

    /// Completes once `server`'s events have no follower left (a readiness signal for
    /// whoever waits for followers to end).
    pub async fn server_event_followers_gone(&self, server: &str) -> Result<(), LifecycleError> {
        let relay = Arc::clone(&self.slot(server)?.relay);
        relay.no_followers().await;
        Ok(())
    }

    /// What `server` declared in its `initialize`, if it is running.
    pub fn server_capabilities(&self, server: &str) -> Option<ServerCapabilities> {
        let process = self.slot(server).ok()?.running()?;
        process
            .peer()
            .peer_info()
            .map(|info| info.capabilities.clone())
    }

    /// Send `request` to `server` (started if needed) for `target`, under the server's call
    /// timeout, ending early with `notifications/cancelled` when `cancel` fires. The one
    /// request path: chat's tool calls ([`Self::call_tool_as`]), `/mcp`, `/mcp/{server}` and
    /// `mcp-stdio --local` all come here, so they recover alike: a request a remote server
    /// never received (it forgot the session, the connection broke) is sent once more on a
    /// new connection; a server that asks for authorization is `needs-auth`; one that exited
    /// says so, with its exit status; one that answers nothing is declared unresponsive.
    pub async fn forward(
        &self,
        server: &str,
        request: ClientRequest,
        target: ForwardFor,
        cancel: CancellationToken,
    ) -> Result<ServerResult, LifecycleError> {
        let slot = self.slot_for(server, target.principal.as_deref()).await?;
        let _in_flight = InFlight::new(slot.clone());
        let process = self
            .ensure_slot_running(server, &slot, Demand::OnUse)
            .await?;
        // Kept for a resend only where there can be one (a remote connection); boxed, as
        // this future's size is what every call copies.
        let resend = process.is_remote().then(|| Box::new(request.clone()));
        let first = self
            .forward_on(&slot, &process, request, &target, &cancel)
            .await;
        let outcome = match (first, resend) {
            (Err(LifecycleError::Disconnected { unsent: true, .. }), Some(request)) => {
                Box::pin(self.send_again(server, &slot, *request, &target, &cancel)).await
            }
            (outcome, _) => outcome,
        };
        outcome.map_err(|error| match error {
            LifecycleError::NeedsAuth { challenge, .. } => self.mark_needs_auth(&slot, challenge),
            error => error,
        })
    }

    /// [`Self::forward`]'s second try, on a new connection, of a request the remote server
    /// never received.
    async fn send_again(
        &self,
        server: &str,
        slot: &Arc<Slot>,
        request: ClientRequest,
        target: &ForwardFor,
        cancel: &CancellationToken,
    ) -> Result<ServerResult, LifecycleError> {
        tracing::info!(
            server,
            "the remote connection was lost before the request was delivered; reconnecting to send it again"
        );
        let process = self
            .ensure_slot_running(server, slot, Demand::OnUse)
            .await?;
        self.forward_on(slot, &process, request, target, cancel)
            .await
    }

    /// One try of [`Self::forward`] on `process`, in its client span (`tools/call NAME`…),
    /// whose trace context the request carries in its `params._meta`.
    async fn forward_on(
        &self,
        slot: &Arc<Slot>,
        process: &Arc<McpProcess>,
        mut request: ClientRequest,
        target: &ForwardFor,
        cancel: &CancellationToken,
    ) -> Result<ServerResult, LifecycleError> {
        let span = crate::spans::sent(&slot.config().name, &request);
        crate::spans::carry_context(&span, &mut request);
        // Boxed: the chain above (toolsets, gateway, rmcp's task per request) then holds a
        // pointer, not this exchange's state, and copies no kilobytes of it on each call.
        let outcome = Box::pin(self.forward_in_span(slot, process, request, target, cancel, &span))
            .instrument(span.clone())
            .await;
        match &outcome {
            Err(error) => crate::spans::failed(&span, error.kind()),
            Ok(ServerResult::CallToolResult(result)) if result.is_error == Some(true) => {
                crate::spans::failed(&span, "tool_error");
            }
            Ok(_) => {}
        }
        outcome
    }

    async fn forward_in_span(
        &self,
        slot: &Arc<Slot>,
        process: &Arc<McpProcess>,
        request: ClientRequest,
        target: &ForwardFor,
        cancel: &CancellationToken,
        span: &tracing::Span,
    ) -> Result<ServerResult, LifecycleError> {
        let config = slot.config();
        // What the request is (the tool's name, else the method): the one string the
        // exchange needs; the errors make theirs from it.
        let (what, is_call) = match &request {
            ClientRequest::CallToolRequest(call) => (call.params.name.to_string(), true),
            other => (other.method().to_owned(), false),
        };
        let method = || {
            if is_call {
                "tools/call".to_owned()
            } else {
                what.clone()
            }
        };
        let server = || config.name.clone();
        let timeout = config.call_timeout;
        // Every request counts as one in flight for the server's own requests (a chat
        // turn's too, asking nobody): with several, none is handed to any client.
        let caller: Arc<dyn Caller> = match &target.caller {
            Some(caller) => caller.clone(),
            None => Arc::clone(&UNATTENDED),
        };
        let registration = Some(slot.relay.register(caller, target.progress.clone()));
        let exchange = Exchange {
            process,
            what: &what,
            timeout,
            registration: registration.as_ref(),
            cancel,
            span,
        };
        // A tool call to a server on a pipe goes past rmcp's service loop; anything else, and
        // any call to a remote server, through it.
        let lane = match &request {
            ClientRequest::CallToolRequest(_) => process.lane(),
            _ => None,
        };
        let outcome = match lane {
            Some(lane) => exchange.on_lane(lane, request).await,
            None => Box::pin(exchange.through_rmcp(request)).await,
        };
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(Stop::Failed(error)) => return Err(error),
            Err(Stop::Cancelled) => {
                return Err(LifecycleError::Cancelled {
                    server: server(),
                    method: method(),
                });
            }
        };
        // Progress sent before the answer reaches the client before the answer (a client
        // that reads nothing holds the answer back only so long).
        if let Some(registration) = &registration {
            registration.flush_within(PROGRESS_FLUSH_LIMIT).await;
        }
        drop(registration);
        match outcome {
            Ok(result) => Ok(result),
            Err(ServiceError::McpError(error)) => Err(LifecycleError::Refused {
                server: server(),
                method: method(),
                error,
            }),
            Err(ServiceError::Timeout { timeout }) => {
                let timed_out = if is_call {
                    LifecycleError::CallTimeout {
                        server: server(),
                        tool: what.clone(),
                        timeout,
                    }
                } else {
                    LifecycleError::RequestTimeout {
                        server: server(),
                        method: method(),
                        timeout,
                    }
                };
                // Slow, or gone silent? A ping tells; a silent server is stopped and restarted.
                Err(Box::pin(self.after_timeout(slot, process, timed_out)).await)
            }
            Err(error) => Err(Box::pin(process.died_or(&what, FORWARDED, error)).await),
        }
    }
}

/// One request's exchange with its server, by either path: the answer (or rmcp's error for
/// it, as rmcp reports it), or why it stopped without one.
struct Exchange<'a> {
    process: &'a Arc<McpProcess>,
    what: &'a str,
    timeout: std::time::Duration,
    registration: Option<&'a Registration>,
    cancel: &'a CancellationToken,
    span: &'a tracing::Span,
}

/// How an exchange ended without an answer to judge.
enum Stop {
    Failed(LifecycleError),
    /// The client cancelled (the server was told).
    Cancelled,
}

impl Exchange<'_> {
    /// Through rmcp's service loop.
    async fn through_rmcp(
        &self,
        mut request: ClientRequest,
    ) -> Result<Result<ServerResult, ServiceError>, Stop> {
        let process = self.process;
        // rmcp's HTTP client takes a revision named in a request's `_meta` as the
        // connection's from then on (its `MCP-Protocol-Version` header), which would turn the
        // one connection every client shares into a 2026-07-28 one. A remote server's 2026-07-28
        // request goes on its link instead (the client's revision and capabilities given as
        // the request's own metadata, over the link's), else as one of the connection's.
        let mut peer = process.peer().clone();
        let mut connection = process.connection();
        let mut own_meta = None;
        if process.is_remote() {
            let named = take_request_revision(&mut request);
            if named.is_some()
                && let Some((link, link_connection)) = process.stateless_peer().await
            {
                peer = link;
                connection = link_connection;
                own_meta = named;
            }
        }
        let mut options = PeerRequestOptions::with_timeout(self.timeout);
        options.meta = own_meta;
        // rmcp's futures are kilobytes: boxed, so that this exchange's state (itself boxed by
        // `forward_on`) is not the sum of the largest of them.
        let handle = match Box::pin(peer.send_request_with_option(request, options)).await {
            Ok(handle) => handle,
            Err(error) => {
                return Err(Stop::Failed(
                    Box::pin(process.died_or(self.what, FORWARDED, error)).await,
                ));
            }
        };
        if let Some(registration) = self.registration {
            registration.route_progress(connection, handle.progress_token.clone());
        }
        self.record(&handle.id, &peer);
        // The handle is consumed by either branch; cancel needs its id and peer.
        let peer = handle.peer.clone();
        let id = handle.id.clone();
        tokio::select! {
            outcome = Box::pin(process.await_answer(handle)) => outcome.map_err(Stop::Failed),
            () = self.cancel.cancelled() => {
                cancelled(&peer, id, CLIENT_CANCELLED).await;
                Err(Stop::Cancelled)
            }
        }
    }

    /// On the pipe's lane, past rmcp's service loop ([`mcp_client::lane`]): the same request,
    /// progress, timeout and cancellation, and the answer decoded as rmcp decodes it. A
    /// timeout is told to the server as rmcp tells it.
    async fn on_lane(
        &self,
        lane: &DirectLane,
        request: ClientRequest,
    ) -> Result<Result<ServerResult, ServiceError>, Stop> {
        let process = self.process;
        let mut sent = match lane.send(request) {
            Ok(sent) => sent,
            Err(error) => return Err(Stop::Failed(self.unsent(error).await)),
        };
        if let Some(registration) = self.registration {
            registration.route_progress(process.connection(), sent.progress.clone());
        }
        self.record(&sent.id, process.peer());
        // The write is under the timeout and the client's cancel too: a server that stops
        // reading cannot hold the caller (dropped, the write leaves the request queued whole).
        let id = sent.id.clone();
        let exchange = async {
            sent.written().await?;
            Ok::<_, LaneSendError>(sent.answer().await)
        };
        let answered = tokio::select! {
            answered = tokio::time::timeout(self.timeout, exchange) => answered,
            () = self.cancel.cancelled() => {
                cancelled(process.peer(), id, CLIENT_CANCELLED).await;
                return Err(Stop::Cancelled);
            }
        };
        Ok(match answered {
            Ok(Ok(Ok(Ok(result)))) => Ok(result),
            Ok(Ok(Ok(Err(error)))) => Err(ServiceError::McpError(error)),
            Ok(Ok(Err(LaneClosed))) => Err(ServiceError::TransportClosed),
            Ok(Err(error)) => return Err(Stop::Failed(self.unsent(error).await)),
            Err(_elapsed) => {
                drop(sent);
                cancelled(process.peer(), id, REQUEST_TIMEOUT).await;
                Err(ServiceError::Timeout {
                    timeout: self.timeout,
                })
            }
        })
    }

    /// The error of a request the lane could not send, as rmcp would have reported it.
    async fn unsent(&self, error: LaneSendError) -> LifecycleError {
        let error = match error {
            LaneSendError::Closed => ServiceError::TransportClosed,
            LaneSendError::Io(error) => {
                ServiceError::TransportSend(DynamicTransportError::from_parts(
                    "mcp-wire",
                    std::any::TypeId::of::<DirectLane>(),
                    Box::new(error),
                ))
            }
        };
        Box::pin(self.process.died_or(self.what, FORWARDED, error)).await
    }

    /// The request's id and the revision in use, on its span.
    fn record(&self, id: &RequestId, peer: &Peer<RoleClient>) {
        if self.span.is_disabled() {
            return;
        }
        self.span
            .record("jsonrpc.request.id", tracing::field::display(id));
        if let Some(info) = peer.peer_info() {
            self.span.record(
                "mcp.protocol.version",
                tracing::field::display(&info.protocol_version),
            );
        }
    }
}

/// Why a request is cancelled, as the server is told.
const CLIENT_CANCELLED: &str = "the client cancelled the request";
/// rmcp's reason for a request that timed out (`RequestHandle::REQUEST_TIMEOUT_REASON`).
const REQUEST_TIMEOUT: &str = rmcp::service::RequestHandle::<RoleClient>::REQUEST_TIMEOUT_REASON;

/// Tell the server that request `id` is cancelled, and why.
async fn cancelled(peer: &Peer<RoleClient>, id: RequestId, reason: &str) {
    let notice = rmcp::model::CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
    let _ = Box::pin(peer.notify_cancelled(notice)).await;
}

/// How a forwarded request is named in [`LifecycleError::Request`].
const FORWARDED: &str = "forwarded request";
