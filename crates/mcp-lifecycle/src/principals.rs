//! Principals: whose OAuth credentials a connection goes out with. A connection is the
//! server's (no principal) or one principal's own, for a principal that holds an OAuth
//! record of its own for that server. A principal is an opaque id chosen by the layer above
//! (the app's principals are its bots, by id, and `toolset` says which bot a request is
//! for); the manager gives it no other meaning. Here: a principal's authorization as
//! reported ([`PrincipalAuthorization`]) and the config of its own connection
//! ([`principal_config`]); the connections are the manager's (`manager/principals.rs`).

use crate::config::ServerConfig;
use crate::state::ServerState;

/// A principal's own authorization for a server, as reported (the API, the dashboard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrincipalAuthorization {
    /// The principal, as the layer above named it.
    pub principal: String,
    /// A token is stored (it may need a refresh).
    pub authorized: bool,
    pub scopes: Vec<String>,
    /// The state of the principal's own connection (`needs-auth` when it holds no token).
    pub state: ServerState,
    pub last_error: Option<String>,
}

/// The config of a principal's own connection to the server of `config`: the server's,
/// connected only on demand.
pub(crate) fn principal_config(config: &ServerConfig) -> ServerConfig {
    ServerConfig {
        always_on: false,
        ..config.clone()
    }
}
