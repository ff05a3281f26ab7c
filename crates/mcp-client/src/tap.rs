//! [`ProgressTap`]: the transport of a server connection, with progress notifications handed
//! to the server's [`Relay`] in the order they arrive. rmcp dispatches each notification on
//! a task of its own, so a `notifications/progress` sent just before a result could reach the
//! client after the result (and after the request's stream closed). The tap sees every
//! message in wire order, before rmcp's service loop, and queues progress for its caller;
//! a forwarded request waits for its queue to drain before it answers
//! (the manager's `forward`). For a remote server the tap also reports the end of
//! the transport: the connection's "exit".

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{JsonRpcError, JsonRpcMessage, JsonRpcNotification, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use crate::loss::ConnectionLoss;
use crate::relay::{ConnectionId, Relay};

/// `inner`, with progress notifications queued on `relay` as they arrive, as the progress of
/// one connection ([`Self::connection`]); dropped, the connection ends on the relay.
pub struct ProgressTap<T> {
    inner: T,
    relay: Arc<Relay>,
    connection: ConnectionId,
    /// Told when the transport ends (a remote connection's "exit").
    lost: Option<Arc<ConnectionLoss>>,
}

impl<T> ProgressTap<T> {
    pub fn new(inner: T, relay: Arc<Relay>, lost: Option<Arc<ConnectionLoss>>) -> Self {
        let connection = relay.connection();
        Self {
            inner,
            relay,
            connection,
            lost,
        }
    }

    /// The connection this transport carries: what routes its requests' progress
    /// ([`crate::relay::Registration::route_progress`]).
    pub fn connection(&self) -> ConnectionId {
        self.connection
    }
}

impl<T> Drop for ProgressTap<T> {
    fn drop(&mut self) {
        self.relay.connection_ended(self.connection);
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressTap<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let Some(message) = self.inner.receive().await else {
            if let Some(lost) = &self.lost {
                lost.lose();
            }
            return None;
        };
        if let (
            Some(lost),
            JsonRpcMessage::Error(JsonRpcError {
                id: None, error, ..
            }),
        ) = (&self.lost, &message)
        {
            // A remote server that answers a request with an error it cannot tie to it
            // refused the request wholesale (an unknown session, say): the connection is
            // no longer usable, and what was in flight on it may be sent again.
            tracing::debug!(code = error.code.0, "a remote server refused the session");
            lost.refuse();
        }
        if let JsonRpcMessage::Notification(JsonRpcNotification {
            notification: ServerNotification::ProgressNotification(progress),
            ..
        }) = &message
        {
            self.relay
                .enqueue_progress(self.connection, progress.params.clone());
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
