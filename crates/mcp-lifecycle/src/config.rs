//! What the lifecycle is given for each server: its config (from the store: the conversion
//! happens here, at the lifecycle's edge) and the variables passed through to every one.

use std::collections::BTreeMap;
use std::time::Duration;

/// One server, as the lifecycle runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The store's id (for the tool cache); empty for servers not in the store.
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
    /// The config's version: the store row's `updatedAt` (ms). Tools are listed once per
    /// version ([`crate::listing`]); 0 for servers not in the store.
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

/// The store's name of `transport` (errors, health).
pub fn transport_name(transport: RemoteTransport) -> &'static str {
    match transport {
        RemoteTransport::StreamableHttp => store::Transport::StreamableHttp.as_str(),
        RemoteTransport::Sse => store::Transport::Sse.as_str(),
    }
}

fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

impl From<&store::McpServer> for ServerConfig {
    fn from(server: &store::McpServer) -> Self {
        Self {
            id: server.id.clone(),
            name: server.name.clone(),
            command: server.command.clone(),
            args: server.args.clone(),
            env: server.env.clone(),
            remote: remote_endpoint(server),
            call_timeout: millis(server.timeout),
            init_timeout: millis(server.init_timeout),
            always_on: server.always_on,
            idle_timeout: millis(server.idle_timeout_ms),
            sandbox: server.sandbox.clone(),
            version: server.updated_at,
        }
    }
}

fn remote_endpoint(server: &store::McpServer) -> Option<RemoteEndpoint> {
    let transport = match server.transport {
        store::Transport::Stdio => return None,
        store::Transport::StreamableHttp => RemoteTransport::StreamableHttp,
        store::Transport::Sse => RemoteTransport::Sse,
    };
    Some(RemoteEndpoint {
        transport,
        url: server.url.clone().unwrap_or_default(),
        headers: server.headers.clone(),
    })
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
