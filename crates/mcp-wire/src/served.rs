//! [`DirectServing`]: a server's `tools/call` requests served past rmcp's service loop, on a
//! [`LineTransport`] whose other messages rmcp handles.
//!
//! Through rmcp, a request read by the transport goes to the service loop, which spawns a
//! task for the handler; the task sends its answer back to the loop through a channel, and
//! the loop spawns another task to write it (and wakes again to reap it). Once the server is
//! installed ([`DirectServing::install`], after `initialize`), the transport's reader starts
//! the handler's task itself for a `tools/call`, and that task writes the answer into the
//! transport's write queue (coalesced with whatever else is queued). The handler is called
//! as rmcp's loop calls it (`Service::handle_request`, which dispatches and checks as it
//! always does), with the request's `_meta` and extensions moved into its context.
//!
//! Served so are only the calls of a session on a revision before 2026-07-28 whose request
//! names no revision of its own: rmcp also tells its handlers, through task-locals of its
//! own, which request they serve, and from 2026-07-28 on that decides whether the handler
//! may send the client requests of its own; before it, it decides nothing on a pipe. Every
//! other message goes to rmcp. A `notifications/cancelled` for a call served here cancels
//! the call's context (and goes on to rmcp, which knows no such request), and a cancelled
//! call is not answered, as rmcp does not answer one. When the input ends, no more calls are
//! taken, and those running are given what rmcp gives its own handlers to answer (5 s after
//! the end of input, 2 s when the service was cancelled) before they are cancelled.
//!
//! [`LineTransport`]: crate::LineTransport

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{
    ClientRequest, ErrorData, GetExtensions as _, GetMeta as _, JsonRpcMessage, ProtocolVersion,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{Peer, RequestContext, Service};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::transport::Outgoing;

/// A future of the handler's answer.
type Answering = Pin<Box<dyn Future<Output = Result<ServerResult, ErrorData>> + Send>>;

/// A server's handler, as the transport calls it.
trait Handler: Send + Sync {
    fn handle(&self, request: ClientRequest, context: RequestContext<RoleServer>) -> Answering;
}

struct Installed<S>(S);

impl<S: Service<RoleServer> + Clone> Handler for Installed<S> {
    fn handle(&self, request: ClientRequest, context: RequestContext<RoleServer>) -> Answering {
        let service = self.0.clone();
        Box::pin(async move { service.handle_request(request, context).await })
    }
}

/// A handle on a server connection's direct serving; cloned freely.
#[derive(Clone)]
pub struct DirectServing {
    serving: Arc<Serving>,
}

impl std::fmt::Debug for DirectServing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectServing")
            .field("installed", &self.serving.installed.get().is_some())
            .finish()
    }
}

struct Serving {
    output: Arc<dyn Outgoing>,
    installed: OnceLock<(Box<dyn Handler>, Peer<RoleServer>)>,
    running: Mutex<Running>,
    /// Told when the last call being served ends.
    idle: Notify,
    /// Calls served here so far.
    served: AtomicU64,
}

struct Running {
    /// Calls are taken (until the input ends or the connection closes).
    taking: bool,
    /// The calls being served, by id: their serial number (an id the client uses again
    /// after a cancel names a new call) and their cancellation.
    calls: HashMap<RequestId, (u64, CancellationToken), foldhash::fast::RandomState>,
}

impl DirectServing {
    pub(crate) fn new(output: Arc<dyn Outgoing>) -> Self {
        Self {
            serving: Arc::new(Serving {
                output,
                installed: OnceLock::new(),
                running: Mutex::new(Running {
                    taking: true,
                    calls: HashMap::default(),
                }),
                idle: Notify::new(),
                served: AtomicU64::new(0),
            }),
        }
    }

    /// Serve `request` (a `tools/call` of id `id`) here, if it can be: `None` when it is
    /// served here, else it is handed back for rmcp.
    pub(crate) fn serve(
        &self,
        id: RequestId,
        request: ClientRequest,
    ) -> Option<(RequestId, ClientRequest)> {
        self.serving.serve(id, request)
    }

    /// The client cancelled request `id`: if it is served here, its context is cancelled and
    /// it will not be answered.
    pub(crate) fn cancel(&self, id: &RequestId) {
        self.serving.cancel(id);
    }

    /// The input ended: no more calls are taken; those being served go on.
    pub(crate) fn stop_taking(&self) {
        self.serving.running().taking = false;
    }

    /// The connection closes: the calls being served are given up to `limit` to answer (as
    /// rmcp gives its own handlers), then the rest are cancelled.
    pub(crate) async fn close_within(&self, limit: std::time::Duration) {
        let serving = &self.serving;
        let _ = tokio::time::timeout(limit, async {
            loop {
                let idle = serving.idle.notified();
                if serving.running().calls.is_empty() {
                    return;
                }
                idle.await;
            }
        })
        .await;
        serving.close();
    }

    /// The connection ended: every call still served is cancelled, and no more are taken.
    pub(crate) fn close(&self) {
        self.serving.close();
    }

    /// From now on, `tools/call` requests are served by `service` (the one rmcp serves on the
    /// same connection, whose `peer` this is). Only the first installation counts.
    pub fn install<S>(&self, service: S, peer: Peer<RoleServer>)
    where
        S: Service<RoleServer> + Clone,
    {
        let _ = self
            .serving
            .installed
            .set((Box::new(Installed(service)), peer));
    }

    /// How many calls are being served.
    pub fn running(&self) -> usize {
        self.serving.running().calls.len()
    }

    /// How many calls were served here (not by rmcp's loop) so far.
    pub fn served(&self) -> u64 {
        self.serving.served.load(Ordering::Relaxed)
    }
}

impl Serving {
    fn running(&self) -> std::sync::MutexGuard<'_, Running> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn serve(
        self: &Arc<Self>,
        id: RequestId,
        mut request: ClientRequest,
    ) -> Option<(RequestId, ClientRequest)> {
        let Some((handler, peer)) = self.installed.get() else {
            return Some((id, request));
        };
        let before_2026 = peer
            .peer_info()
            .is_some_and(|info| info.protocol_version < ProtocolVersion::V_2026_07_28);
        if !before_2026 || request.get_meta().protocol_version().is_some() {
            return Some((id, request));
        }
        let mut context = RequestContext::new(id.clone(), peer.clone());
        // The call's own token is the one `RequestContext::new` made (no second one per call);
        // the handler gets a child of it, as under rmcp, so a handler cancelling its own token
        // does not take back the answer.
        let cancel = context.ct.clone();
        context.ct = cancel.child_token();
        let serial = {
            let mut running = self.running();
            if !running.taking || running.calls.contains_key(&id) {
                // A closed connection, or an id already in use: rmcp's to handle.
                return Some((id, request));
            }
            let serial = self.served.fetch_add(1, Ordering::Relaxed);
            running.calls.insert(id.clone(), (serial, cancel.clone()));
            serial
        };
        // Taken only when there is one: asking for it mutably makes an empty one first.
        if !request.get_meta().is_empty() {
            context.meta = std::mem::take(request.get_meta_mut());
        }
        context.extensions = std::mem::take(request.extensions_mut());
        let answering = handler.handle(request, context);
        let serving = Arc::clone(self);
        tokio::spawn(
            async move {
                let answer = answering.await;
                if !serving.finish(&id, serial) || cancel.is_cancelled() {
                    return;
                }
                // As rmcp does: the call's context ends with its answer.
                cancel.cancel();
                let message: ServerJsonRpcMessage = match answer {
                    Ok(result) => JsonRpcMessage::response(result, id),
                    Err(error) => JsonRpcMessage::error(error, Some(id)),
                };
                let written = match serving.output.queue_answer(&message) {
                    Ok(()) => crate::transport::flush_soon(&*serving.output).await,
                    Err(error) => Err(error),
                };
                if let Err(error) = written {
                    tracing::error!(%error, "fail to response message");
                }
            }
            .instrument(tracing::Span::current()),
        );
        None
    }

    /// The call `id` of number `serial` ended: `false` when it had been cancelled (or the
    /// connection closed). A later call under the same id is left as it is.
    fn finish(&self, id: &RequestId, serial: u64) -> bool {
        let mut running = self.running();
        let ended = match running.calls.get(id) {
            Some((current, _)) if *current == serial => running.calls.remove(id).is_some(),
            _ => false,
        };
        if running.calls.is_empty() {
            self.idle.notify_waiters();
        }
        ended
    }

    fn cancel(&self, id: &RequestId) {
        let cancelled = {
            let mut running = self.running();
            let cancelled = running.calls.remove(id);
            if running.calls.is_empty() {
                self.idle.notify_waiters();
            }
            cancelled
        };
        if let Some((_, cancel)) = cancelled {
            cancel.cancel();
        }
    }

    fn close(&self) {
        let calls = {
            let mut running = self.running();
            running.taking = false;
            std::mem::take(&mut running.calls)
        };
        for (_, cancel) in calls.into_values() {
            cancel.cancel();
        }
    }
}
