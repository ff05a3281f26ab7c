//! A bot's own authorization of a server as reported ([`BotAuthorization`]) and the config
//! of a bot's own connection ([`bot_config`]); the connections are the manager's
//! (`manager/bot_connections.rs`).

use crate::config::ServerConfig;
use crate::state::ServerState;

/// A bot's own authorization for a server, as reported (the API, the dashboard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotAuthorization {
    pub bot_id: String,
    /// A token is stored (it may need a refresh).
    pub authorized: bool,
    pub scopes: Vec<String>,
    /// The state of the bot's own connection (`needs-auth` when it holds no token).
    pub state: ServerState,
    pub last_error: Option<String>,
}

/// The config of a bot's own connection to the server of `config`: the server's, connected
/// only on demand.
pub(crate) fn bot_config(config: &ServerConfig) -> ServerConfig {
    ServerConfig {
        always_on: false,
        ..config.clone()
    }
}
