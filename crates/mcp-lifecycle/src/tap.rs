//! [`ProgressTap`]: the transport of a server connection, with progress notifications handed
//! to the server's [`Relay`] in the order they arrive. rmcp dispatches each notification on
//! a task of its own, so a `notifications/progress` sent just before a result could reach the
//! client after the result (and after the request's stream closed). The tap sees every
//! message in wire order, before rmcp's service loop, and queues progress for its caller;
//! a forwarded request waits for its queue to drain before it answers
//! ([`crate::McpServerManager::forward`]). For a remote server the tap also reports the end of
//! the transport: the connection's "exit".

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, JsonRpcNotification, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use tokio::sync::watch;

use crate::error::ExitInfo;
use crate::relay::Relay;

/// `inner`, with progress notifications queued on `relay` as they arrive.
pub(crate) struct ProgressTap<T> {
    inner: T,
    relay: Arc<Relay>,
    /// Told when the transport ends (a remote connection's "exit").
    lost: Option<Arc<watch::Sender<Option<ExitInfo>>>>,
}

impl<T> ProgressTap<T> {
    pub(crate) fn new(
        inner: T,
        relay: Arc<Relay>,
        lost: Option<Arc<watch::Sender<Option<ExitInfo>>>>,
    ) -> Self {
        Self { inner, relay, lost }
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
                lost.send_if_modified(|exit| {
                    let first = exit.is_none();
                    if first {
                        *exit = Some(ExitInfo {
                            code: None,
                            signal: None,
                        });
                    }
                    first
                });
            }
            return None;
        };
        if let JsonRpcMessage::Notification(JsonRpcNotification {
            notification: ServerNotification::ProgressNotification(progress),
            ..
        }) = &message
        {
            self.relay.enqueue_progress(progress.params.clone());
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
