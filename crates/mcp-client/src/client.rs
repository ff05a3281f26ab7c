//! The MCP client side BotCraft presents to a server: client name "botcraft", the newest
//! protocol revision with an `initialize` handshake (a server that supports only older ones
//! answers with its own and rmcp goes on in that one), `sampling` and `elicitation` declared
//! so servers may ask — each such request is relayed to the client whose call is in flight
//! ([`crate::relay`]) or refused with the reason — and `notifications/tools/list_changed`
//! forwarded to the tool lists through a bounded channel, never waiting: one that finds it
//! full is dropped, so a storm of them queues nothing. Other notifications go to the
//! server's [`Relay`]; progress reaches it in wire order through [`crate::tap`].

#![allow(deprecated)] // sampling and logging are legacy in 2026-07-28; 2025-11-25 servers use them

use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, Implementation, LoggingMessageNotificationParam,
    ProtocolVersion, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use tokio::sync::mpsc;

use crate::relay::{Relay, ServerEvent};

/// The protocol version offered in `initialize`: the newest that still has the handshake.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::LATEST_WITH_INITIALIZE;
/// The client name sent in `initialize`.
pub const CLIENT_NAME: &str = "botcraft";

/// The handler of one server connection.
#[derive(Debug, Clone)]
pub struct ClientSide {
    list_changed: mpsc::Sender<()>,
    relay: Arc<Relay>,
}

impl ClientSide {
    /// `list_changed` hears each `notifications/tools/list_changed` as a `()`, put in only if
    /// there is room: a bounded channel (`mcp-lifecycle` gives it room for one, a listing
    /// asked for and not yet begun), so a server's storm of notifications queues nothing.
    pub fn new(list_changed: mpsc::Sender<()>, relay: Arc<Relay>) -> Self {
        Self {
            list_changed,
            relay,
        }
    }
}

impl ClientSide {
    /// The relay of the server this handler speaks to.
    pub fn relay(&self) -> Arc<Relay> {
        Arc::clone(&self.relay)
    }
}

impl ClientHandler for ClientSide {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder()
            .enable_sampling()
            .enable_elicitation()
            .build();
        ClientConfig::new(
            capabilities,
            Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(PROTOCOL_VERSION)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.relay.create_message(params).await
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.relay.create_elicitation(request).await
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.relay.publish(ServerEvent::Log(params));
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.relay
            .publish(ServerEvent::ResourceUpdated { uri: params.uri });
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relay.publish(ServerEvent::ResourceListChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relay.publish(ServerEvent::PromptListChanged);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // Full: a re-listing is already asked for and has not begun, so it sees this change
        // too. Closed: nobody follows this connection's tool list any more.
        let _ = self.list_changed.try_send(());
    }
}
