//! The MCP client side BotCraft presents to a server: protocol 2025-11-25, client name
//! "botcraft", and `notifications/tools/list_changed` forwarded to the tool lists.

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::mpsc;

/// The protocol version offered in `initialize`.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;
/// The client name sent in `initialize`.
pub const CLIENT_NAME: &str = "botcraft";

/// The handler of one server connection.
#[derive(Debug, Clone)]
pub struct ClientSide {
    list_changed: mpsc::UnboundedSender<()>,
}

impl ClientSide {
    pub fn new(list_changed: mpsc::UnboundedSender<()>) -> Self {
        Self { list_changed }
    }
}

impl ClientHandler for ClientSide {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(PROTOCOL_VERSION)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }
}
