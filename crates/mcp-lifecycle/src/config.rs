//! What the lifecycle is given for each server: its config (from [`crate::ServerRecords`]:
//! the app converts its stored servers) and the variables passed through to every one.

use std::collections::BTreeMap;
use std::time::Duration;

/// One server, as the lifecycle runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The records' id of the server (for its tool cache and OAuth record); empty for a
    /// server given to the manager directly.
    pub id: String,
    pub name: String,
    /// The program of a stdio server (empty for a remote one).
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Where a remote server is reached; `None`: a child process over stdio.
    pub remote: Option<RemoteEndpoint>,
    pub call_timeout: Duration,
    pub init_timeout: Duration,
    pub always_on: bool,
    pub idle_timeout: Duration,
    /// How a stdio server's processes are confined (when the manager sandboxes at all:
    /// [`ManagerSettings::sandbox`]).
    pub sandbox: sandbox::SandboxPolicy,
    /// The config's version: when it was last written (ms; the store row's `updatedAt`).
    /// Tools are listed once per version ([`crate::listing`]); 0 for a server given directly.
    pub version: i64,
}

/// A remote server's address.
#[derive(Clone, PartialEq, Eq)]
pub struct RemoteEndpoint {
    pub transport: RemoteTransport,
    pub url: String,
    /// Sent with every request; values may hold `${VAR}` references, resolved at connect.
    pub headers: BTreeMap<String, String>,
}

/// The header values may be credentials: only their names are shown.
impl std::fmt::Debug for RemoteEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEndpoint")
            .field("transport", &self.transport)
            .field("url", &mcp_client::shown_url(&self.url))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

pub use mcp_client::RemoteTransport;

/// The config's name of `transport` (errors, health): the store's `transport` values, which
/// `server-records` holds equal.
pub fn transport_name(transport: RemoteTransport) -> &'static str {
    match transport {
        RemoteTransport::StreamableHttp => "streamable-http",
        RemoteTransport::Sse => "sse",
    }
}

/// Environment variables passed from BotCraft's environment to every server, when present.
/// Everything else a server sees comes from its config's `env`. The CA bundle variables are
/// the machine's trust (paths, no secret): a server run by `npx` or `uvx` behind a TLS-
/// inspecting proxy fetches its package only with them.
pub const PASSED_THROUGH_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TMPDIR",
    "TZ",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];
