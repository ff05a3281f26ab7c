//! `McpProcess`: one running server — the child, its rmcp client, its stderr tail, and the
//! stop sequence (close stdin, grace, TERM the group, grace, KILL the group, with the `/proc`
//! snapshot of descendants signalled too).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::cgroup::ServerCgroup;
use rmcp::model::{
    ClientRequest, ListToolsRequest, PaginatedRequestParams, PingRequest, ServerResult, Tool,
};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use rmcp::{Peer, ServiceError};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};

use mcp_client::{
    ClientSide, ConnectionLoss, ExitInfo, PipeConnection, RemoteConnection, StatelessLink,
    handshake,
};

use crate::config::ServerConfig;
use crate::error::{LifecycleError, ListLimit};
use crate::handshake::handshake_error;
use crate::hygiene::{self, PidRegistry, ProcessId};
use crate::in_process::{IN_PROCESS_PIPE_BYTES, InProcessServer};
use crate::launcher;
use crate::stderr_tail::StderrTail;

/// A running MCP server: a child process, or a server inside BotCraft's process.
pub struct McpProcess {
    server: String,
    backing: Backing,
    peer: Peer<RoleClient>,
    /// The connection's progress on the server's relay.
    connection: mcp_client::ConnectionId,
    /// A pipe's requests past rmcp's service loop (a child, an in-process server).
    lane: Option<mcp_client::DirectLane>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ClientSide>>>,
    exit: watch::Receiver<Option<ExitInfo>>,
    stderr: StderrTail,
    stderr_task: Mutex<Option<JoinHandle<()>>>,
    started_at: Instant,
    registry: Option<Arc<PidRegistry>>,
    /// Set when the manager declared this server unresponsive (before stopping it): what the
    /// requests still in flight on it fail with.
    unresponsive: std::sync::OnceLock<LifecycleError>,
    /// Set when a listing started this server leaving out `${VAR}`s of unset variables: the
    /// error any other use meets (the process serves the listing only).
    listing_only: std::sync::OnceLock<LifecycleError>,
}

/// What runs the server.
enum Backing {
    /// A child process, leader of its own process group.
    Child {
        pid: u32,
        identity: Option<ProcessId>,
        tree: KnownTree,
        cgroup: Option<Arc<ServerCgroup>>,
    },
    /// A task of this process, spoken to over an in-memory pipe.
    InProcess { task: AbortHandle },
    /// A remote server; "exits" when the connection is lost or closed.
    Remote {
        /// As shown ([`mcp_client::shown_url`]).
        url: String,
        lost: Arc<ConnectionLoss>,
        /// The 2026-07-28 link (streamable HTTP only), opened when first needed.
        link: Option<Arc<StatelessLink>>,
    },
}

/// How [`McpProcess::start`] runs a server process.
pub struct StartOptions<'a> {
    /// Its sandbox for this spawn (`None`: unconfined).
    pub(crate) confinement: Option<crate::confinement::Confinement>,
    /// The user it runs as (`None`: BotCraft's).
    pub run_as: Option<&'a crate::run_as::RunAs>,
    /// Lines of stderr kept.
    pub stderr_lines: usize,
    /// How long a failed start waits for the tree to go.
    pub stop_grace: Duration,
    /// Where the process is recorded while it runs.
    pub registry: Option<Arc<PidRegistry>>,
    /// Fired to abandon the start: the tree is ended, the start fails at once.
    pub cancel: tokio_util::sync::CancellationToken,
    /// The server's own cgroup, when the machine gives BotCraft one.
    pub cgroup: Option<ServerCgroup>,
}

const NO_EXIT: ExitInfo = ExitInfo::NONE;

/// Pages one listing follows at most.
pub const MAX_LIST_PAGES: usize = 100;
/// Tools one server may list.
pub const MAX_LISTED_TOOLS: usize = 10_000;
/// Bytes of tool definitions (as JSON) one server may list: a list this large is held in
/// memory, cached in the store and copied to every face, so its pages' sizes are summed.
pub const MAX_LISTED_TOOL_BYTES: usize = 32 * 1024 * 1024;

/// Counts what is written to it, keeping nothing.
#[derive(Default)]
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::fmt::Debug for McpProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpProcess")
            .field("server", &self.server)
            .field("pid", &self.pid())
            .finish_non_exhaustive()
    }
}

/// Owns the child for the task that waits on it. Dropped before the child exited (the
/// runtime shutting down with the server still running): SIGKILL the group and every
/// descendant found in `/proc` — a `setsid` grandchild too, which the kill-on-drop of the
/// group alone would miss. Runs before the child's own kill-on-drop, while the tree is whole.
struct ChildGuard {
    child: Box<dyn process_wrap::tokio::ChildWrapper>,
    pid: u32,
    identity: Option<ProcessId>,
    exited: bool,
    /// The tree as last seen (after `initialize`): what a drop kills besides what it finds.
    tree: KnownTree,
    cgroup: Option<Arc<ServerCgroup>>,
    /// The sandbox of this spawn: its private temporary folder lives as long as the child.
    _confinement: Option<crate::confinement::Confinement>,
}

/// The descendants of a server as last seen, shared by its guard and its handle: a server
/// that exits before a drop can look for them orphans them to PID 1, out of `/proc`'s
/// parent links, but not out of this set.
type KnownTree = Arc<Mutex<BTreeSet<ProcessId>>>;

/// Every process of a server's tree as seen now: its descendants, the known tree and the
/// members of its cgroup.
fn tree_now(pid: u32, tree: &KnownTree, cgroup: Option<&ServerCgroup>) -> BTreeSet<ProcessId> {
    let mut snapshot = tree.lock().map(|t| t.clone()).unwrap_or_default();
    snapshot.extend(hygiene::descendants(pid));
    if let Some(cgroup) = cgroup {
        snapshot.extend(cgroup.members());
    }
    snapshot
}

/// SIGKILL the group of `pid` (when still its own), its cgroup, and every process of the
/// known tree and of the current one that is still the same process.
fn kill_known_tree(
    pid: u32,
    identity: Option<ProcessId>,
    tree: &KnownTree,
    cgroup: Option<&ServerCgroup>,
) {
    let snapshot = tree_now(pid, tree, cgroup);
    if let Some(cgroup) = cgroup {
        cgroup.kill();
    }
    hygiene::signal_tree(
        pid,
        identity.map(|p| p.start_time),
        &snapshot,
        Signal::SIGKILL,
    );
}

impl ChildGuard {
    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        let status = self.child.wait().await;
        self.exited = true;
        status
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if !self.exited {
            kill_known_tree(self.pid, self.identity, &self.tree, self.cgroup.as_deref());
        }
    }
}

/// The last handle of a server that still runs is gone (the runtime dropped its tasks, say):
/// end the tree *before* the fields go. Dropping the client first would close the server's
/// stdin, and a server that exits on EOF orphans a `setsid` grandchild to PID 1 before the
/// child guard could find it.
impl Drop for McpProcess {
    fn drop(&mut self) {
        if let Backing::Child {
            pid,
            identity,
            tree,
            cgroup,
        } = &self.backing
        {
            kill_known_tree(*pid, *identity, tree, cgroup.as_deref());
        }
    }
}

fn exit_info(status: std::process::ExitStatus) -> ExitInfo {
    use std::os::unix::process::ExitStatusExt;
    ExitInfo {
        code: status.code(),
        signal: status.signal(),
    }
}

impl McpProcess {
    /// Spawn `config` with `env`, complete `initialize` within the config's init timeout.
    /// `client` is the handler of the connection (tool-list changes, the server's relay).
    pub async fn start(
        config: &ServerConfig,
        env: &std::collections::BTreeMap<String, String>,
        options: StartOptions<'_>,
        client: ClientSide,
    ) -> Result<Self, LifecycleError> {
        let StartOptions {
            confinement,
            run_as,
            stderr_lines,
            stop_grace,
            registry,
            cancel,
            cgroup,
        } = options;
        // Spawned and recorded under the registry's gate: the orphan sweep never sees this
        // child before it is known as a server.
        let (spawned, identity) = {
            let _gate = registry.as_ref().map(|registry| registry.spawn_gate());
            let spawned =
                launcher::spawn(config, env, run_as, cgroup.as_ref(), confinement.as_ref())?;
            let identity = hygiene::identify(spawned.pid);
            if let (Some(registry), Some(identity)) = (&registry, identity) {
                registry.record(identity);
            }
            (spawned, identity)
        };
        let pid = spawned.pid;
        let cgroup = cgroup.filter(|cgroup| {
            let inside = cgroup.holds(pid);
            if !inside {
                tracing::debug!(server = %config.name, "the server did not land in its cgroup; tracked by /proc only");
            }
            inside
        });
        let cgroup = cgroup.map(Arc::new);
        let stderr = StderrTail::new(stderr_lines);
        let stderr_task = stderr.drain(&config.name, spawned.stderr);
        let (exit_tx, exit) = watch::channel(None);
        let tree = KnownTree::default();
        let mut guard = ChildGuard {
            child: spawned.child,
            pid,
            identity,
            exited: false,
            tree: Arc::clone(&tree),
            cgroup: cgroup.clone(),
            _confinement: confinement,
        };
        tokio::spawn(async move {
            // Owns the child: dropping it (runtime shutdown) kills the tree.
            let info = match guard.wait().await {
                Ok(status) => exit_info(status),
                Err(_) => NO_EXIT,
            };
            let _ = exit_tx.send(Some(info));
        });
        match handshake(
            config.init_timeout,
            spawned.stdout,
            spawned.stdin,
            &exit,
            client,
            &cancel,
        )
        .await
        {
            Ok(PipeConnection {
                service,
                lane,
                connection,
            }) => Ok(Self {
                server: config.name.clone(),
                connection,
                backing: Backing::Child {
                    pid,
                    identity,
                    tree: {
                        if let Ok(mut known) = tree.lock() {
                            *known = hygiene::descendants(pid);
                        }
                        tree
                    },
                    cgroup,
                },
                peer: service.peer().clone(),
                lane: Some(lane),
                service: tokio::sync::Mutex::new(Some(service)),
                exit: exit.clone(),
                stderr: stderr.clone(),
                stderr_task: Mutex::new(Some(stderr_task)),
                started_at: Instant::now(),
                unresponsive: std::sync::OnceLock::new(),
                listing_only: std::sync::OnceLock::new(),
                registry: registry.clone(),
            }),
            Err(failure) => {
                // Take the tree down before reading what it left on stderr.
                let snapshot = tree_now(pid, &KnownTree::default(), cgroup.as_deref());
                if let Some(cgroup) = &cgroup {
                    cgroup.kill();
                }
                hygiene::signal_tree(
                    pid,
                    identity.map(|p| p.start_time),
                    &snapshot,
                    Signal::SIGKILL,
                );
                let mut exit_wait = exit.clone();
                let _ = tokio::time::timeout(stop_grace, exit_wait.wait_for(Option::is_some)).await;
                hygiene::wait_gone(&snapshot, stop_grace).await;
                if let (Some(registry), Some(identity)) = (&registry, identity) {
                    registry.forget(identity);
                }
                // The pipe closes when the last holder exits; bounded either way.
                let _ = tokio::time::timeout(stop_grace, stderr_task).await;
                let exit_now = *exit.borrow();
                Err(handshake_error(config, failure, exit_now, stderr.lines()))
            }
        }
    }

    /// Run `server` as a task of this process over an in-memory pipe and complete
    /// `initialize` within the config's init timeout. The server "exits" when its future
    /// ends (code 0) or is aborted by a stop (no code).
    pub async fn start_in_process(
        config: &ServerConfig,
        server: &dyn InProcessServer,
        client: ClientSide,
    ) -> Result<Self, LifecycleError> {
        let (client_end, server_end) = tokio::io::duplex(IN_PROCESS_PIPE_BYTES);
        let task = tokio::spawn(server.serve(server_end));
        let abort = task.abort_handle();
        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            let info = match task.await {
                Ok(()) => ExitInfo {
                    code: Some(0),
                    signal: None,
                },
                Err(_) => NO_EXIT,
            };
            let _ = exit_tx.send(Some(info));
        });
        let (read, write) = tokio::io::split(client_end);
        let never = tokio_util::sync::CancellationToken::new();
        match handshake(config.init_timeout, read, write, &exit, client, &never).await {
            Ok(PipeConnection {
                service,
                lane,
                connection,
            }) => Ok(Self {
                server: config.name.clone(),
                connection,
                backing: Backing::InProcess { task: abort },
                peer: service.peer().clone(),
                lane: Some(lane),
                service: tokio::sync::Mutex::new(Some(service)),
                exit,
                stderr: StderrTail::new(0),
                stderr_task: Mutex::new(None),
                started_at: Instant::now(),
                unresponsive: std::sync::OnceLock::new(),
                listing_only: std::sync::OnceLock::new(),
                registry: None,
            }),
            Err(failure) => {
                abort.abort();
                let exit_now = *exit.borrow();
                Err(handshake_error(config, failure, exit_now, Vec::new()))
            }
        }
    }

    /// A remote connection that completed `initialize`.
    pub(crate) fn remote(config: &ServerConfig, connection: RemoteConnection) -> Self {
        let RemoteConnection {
            service,
            url,
            lost,
            exit,
            link,
            connection,
        } = connection;
        Self {
            server: config.name.clone(),
            connection,
            backing: Backing::Remote { url, lost, link },
            peer: service.peer().clone(),
            lane: None,
            service: tokio::sync::Mutex::new(Some(service)),
            exit,
            stderr: StderrTail::new(0),
            stderr_task: Mutex::new(None),
            started_at: Instant::now(),
            unresponsive: std::sync::OnceLock::new(),
            listing_only: std::sync::OnceLock::new(),
            registry: None,
        }
    }

    /// Whether the server is reached over the network rather than run by BotCraft.
    pub fn is_remote(&self) -> bool {
        matches!(self.backing, Backing::Remote { .. })
    }

    /// The peer for a 2026-07-28 request to a remote server, with its connection on the relay:
    /// its link, opened the first time (`None` for a stdio server, an SSE one, or one without
    /// that revision).
    pub(crate) async fn stateless_peer(
        &self,
    ) -> Option<(Peer<RoleClient>, mcp_client::ConnectionId)> {
        match &self.backing {
            Backing::Remote {
                link: Some(link), ..
            } => link.peer().await,
            _ => None,
        }
    }

    /// The URL of a remote server, as shown.
    pub fn url(&self) -> Option<&str> {
        match &self.backing {
            Backing::Remote { url, .. } => Some(url),
            _ => None,
        }
    }

    /// `NeedsAuth`, when `error` carries the OAuth challenge of a server that may use OAuth.
    fn auth_challenge(&self, error: &ServiceError) -> Option<LifecycleError> {
        let Backing::Remote { url, lost, .. } = &self.backing else {
            return None;
        };
        if !lost.oauth {
            return None;
        }
        mcp_client::challenge_in(error).map(|challenge| LifecycleError::NeedsAuth {
            principal: None,
            server: self.server.clone(),
            url: url.clone(),
            hint: String::new(),
            challenge: Some(challenge),
        })
    }

    /// A remote connection that failed under a call: counted as lost, so that the next use
    /// connects again instead of reusing it.
    pub(crate) fn lose_connection(&self) {
        if let Backing::Remote { lost, .. } = &self.backing {
            lost.lose();
        }
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// The pid of the server's process; `None` for a server running in BotCraft's process.
    pub fn pid(&self) -> Option<u32> {
        match self.backing {
            Backing::Child { pid, .. } => Some(pid),
            Backing::InProcess { .. } | Backing::Remote { .. } => None,
        }
    }

    pub fn uptime(&self) -> Duration {
        self.started_at.elapsed()
    }

    /// Mark this server unresponsive: requests in flight on it (which its stop is about to
    /// end) fail with `error`, which says so, rather than with a broken pipe.
    pub(crate) fn mark_unresponsive(&self, error: LifecycleError) {
        let _ = self.unresponsive.set(error);
    }

    /// This process was started for a listing without some `${VAR}`s: `error` is what any
    /// other use of it meets.
    pub(crate) fn mark_listing_only(&self, error: LifecycleError) {
        let _ = self.listing_only.set(error);
    }

    /// Why this process serves a listing only, if it does.
    pub(crate) fn listing_only(&self) -> Option<&LifecycleError> {
        self.listing_only.get()
    }

    /// Why this server was declared unresponsive, if it was.
    pub(crate) fn unresponsive(&self) -> Option<LifecycleError> {
        self.unresponsive.get().cloned()
    }

    /// Whether the server answers `ping` within `timeout`: an answer of any kind counts
    /// (2026-07-28 servers have no ping and answer it with a JSON-RPC error).
    pub async fn answers_ping(&self, timeout: Duration) -> bool {
        match self.ping(timeout).await {
            Ok(()) => true,
            Err(LifecycleError::Request { source, .. }) => {
                matches!(source.as_ref(), ServiceError::McpError(_))
            }
            Err(_) => false,
        }
    }

    /// The last lines of stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lines()
    }

    /// How the process ended, once it has.
    pub fn exit_status(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// Resolves when the process has exited.
    pub async fn exited(&self) -> ExitInfo {
        let mut exit = self.exit.clone();
        match exit.wait_for(Option::is_some).await {
            Ok(info) => info.unwrap_or(NO_EXIT),
            Err(_) => NO_EXIT,
        }
    }

    fn request_error(&self, method: &'static str, error: ServiceError) -> LifecycleError {
        self.note_transport_failure(&error);
        if let Some(needs_auth) = self.auth_challenge(&error) {
            return needs_auth;
        }
        LifecycleError::Request {
            server: self.server.clone(),
            method,
            source: Arc::new(error),
        }
    }

    async fn request(
        &self,
        method: &'static str,
        request: ClientRequest,
        timeout: Duration,
    ) -> Result<ServerResult, LifecycleError> {
        let options = PeerRequestOptions::with_timeout(timeout);
        let handle = self
            .peer
            .send_request_with_option(request, options)
            .await
            .map_err(|error| self.request_error(method, error))?;
        handle
            .await_response()
            .await
            .map_err(|error| self.request_error(method, error))
    }

    /// Every tool, following `nextCursor` through all pages, all of them within `timeout`,
    /// at most [`MAX_LIST_PAGES`] pages, [`MAX_LISTED_TOOLS`] tools and
    /// [`MAX_LISTED_TOOL_BYTES`] of them (a server that pages
    /// forever or lists without end is refused, not followed). Never served from a cache.
    pub async fn list_tools(&self, timeout: Duration) -> Result<Vec<Tool>, LifecycleError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut tools = Vec::new();
        let mut bytes = ByteCount::default();
        let mut cursor = None;
        for _ in 0..MAX_LIST_PAGES {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Err(LifecycleError::RequestTimeout {
                    server: self.server.clone(),
                    method: "tools/list".to_owned(),
                    timeout,
                });
            }
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
            let page = match self.request("tools/list", request, left).await {
                Ok(ServerResult::ListToolsResult(page)) => page,
                Ok(_) => {
                    return Err(self.request_error("tools/list", ServiceError::UnexpectedResponse));
                }
                Err(error) => return Err(error),
            };
            let _ = serde_json::to_writer(&mut bytes, &page.tools);
            if bytes.0 > MAX_LISTED_TOOL_BYTES {
                return Err(LifecycleError::ToolListTooLong {
                    server: self.server.clone(),
                    limit: ListLimit::Bytes(MAX_LISTED_TOOL_BYTES),
                });
            }
            tools.extend(page.tools);
            if tools.len() > MAX_LISTED_TOOLS {
                return Err(LifecycleError::ToolListTooLong {
                    server: self.server.clone(),
                    limit: ListLimit::Tools(MAX_LISTED_TOOLS),
                });
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
        Err(LifecycleError::ToolListTooLong {
            server: self.server.clone(),
            limit: ListLimit::Pages(MAX_LIST_PAGES),
        })
    }

    /// The rmcp peer of the connection (forwarded requests).
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// The connection's progress on the server's relay (its peer's requests and its lane's).
    pub(crate) fn connection(&self) -> mcp_client::ConnectionId {
        self.connection
    }

    /// The pipe's lane past rmcp's service loop, for a server that can take it: a child or
    /// an in-process server on a revision before 2026-07-28 (from that revision on, rmcp
    /// accepts the server's own requests only while one of its requests is in flight, and it
    /// does not see the lane's).
    pub(crate) fn lane(&self) -> Option<&mcp_client::DirectLane> {
        let lane = self.lane.as_ref()?;
        let info = self.peer.peer_info()?;
        (info.protocol_version < rmcp::model::ProtocolVersion::V_2026_07_28).then_some(lane)
    }

    /// `ping`, answered within `timeout`.
    pub async fn ping(&self, timeout: Duration) -> Result<(), LifecycleError> {
        let request = ClientRequest::PingRequest(PingRequest::default());
        self.request("ping", request, timeout).await.map(|_| ())
    }

    /// The answer to `handle`'s request. A remote connection can be lost under a request
    /// without an answer ever coming (a server that forgot the session): the loss ends the
    /// wait with `Err` ([`LifecycleError::Disconnected`], `unsent` when the server refused
    /// the session, so the request can go again on a new connection).
    pub(crate) async fn await_answer(
        &self,
        handle: rmcp::service::RequestHandle<RoleClient>,
    ) -> Result<Result<ServerResult, ServiceError>, LifecycleError> {
        match &self.backing {
            Backing::Remote { url, lost, .. } => {
                let mut exit = self.exit.clone();
                tokio::select! {
                    response = handle.await_response() => Ok(response),
                    _ = exit.wait_for(Option::is_some) => Err(LifecycleError::Disconnected {
                        server: self.server.clone(),
                        url: url.clone(),
                        unsent: lost.was_refused(),
                    }),
                }
            }
            _ => Ok(handle.await_response().await),
        }
    }

    /// After a request failed on a remote connection: a transport failure (the server is
    /// gone, the stream broke) loses the connection, so the next use reconnects.
    fn note_transport_failure(&self, error: &ServiceError) {
        if self.is_remote()
            && matches!(
                error,
                ServiceError::TransportSend(_) | ServiceError::TransportClosed
            )
        {
            self.lose_connection();
        }
    }

    /// The error of a request (`method`, of tool or method `what`) that failed: that the
    /// server was declared unresponsive; on a remote connection, that it needs authorization
    /// or was lost (`unsent` when the request never left); else, if the server exited
    /// meanwhile (its pipe closes just before its exit status is known: waited for briefly),
    /// that it exited, with its exit status and stderr tail; otherwise the request error.
    pub(crate) async fn died_or(
        &self,
        what: &str,
        method: &'static str,
        error: ServiceError,
    ) -> LifecycleError {
        if let Some(unresponsive) = self.unresponsive() {
            return unresponsive;
        }
        self.note_transport_failure(&error);
        if let Backing::Remote { url, .. } = &self.backing {
            if let Some(needs_auth) = self.auth_challenge(&error) {
                return needs_auth;
            }
            return match error {
                ServiceError::TransportSend(_) | ServiceError::TransportClosed => {
                    LifecycleError::Disconnected {
                        server: self.server.clone(),
                        url: url.clone(),
                        unsent: matches!(error, ServiceError::TransportSend(_)),
                    }
                }
                error => self.request_error(method, error),
            };
        }
        if self.wait_exit(Duration::from_millis(500)).await
            && let Some(exit) = self.exit_status()
        {
            return LifecycleError::ExitedDuringCall {
                server: self.server.clone(),
                tool: what.to_owned(),
                exit,
                stderr_tail: self.stderr_tail(),
            };
        }
        self.request_error(method, error)
    }

    /// Stop: close stdin and wait `grace`; TERM the group and the snapshot of descendants,
    /// wait `grace`; KILL whatever is left. Returns when every process of the tree is gone
    /// (or after a last bounded wait). An in-process server is told to close the same way
    /// and aborted if it has not ended after `grace`.
    pub async fn stop(&self, grace: Duration) -> Option<ExitInfo> {
        match &self.backing {
            Backing::Child {
                pid,
                identity,
                tree,
                cgroup,
            } => {
                self.stop_child(*pid, *identity, tree, cgroup.as_deref(), grace)
                    .await;
            }
            Backing::InProcess { task } => {
                self.close_transport(grace).await;
                if !self.wait_exit(grace).await {
                    task.abort();
                    self.wait_exit(grace).await;
                }
            }
            Backing::Remote { .. } => {
                // Closing the transport ends the session (streamable HTTP sends its DELETE).
                self.close_transport(grace).await;
                self.lose_connection();
            }
        }
        self.exit_status()
    }

    async fn close_transport(&self, grace: Duration) {
        if let Some(service) = self.service.lock().await.take() {
            // Closing the transport closes the server's stdin.
            let _ = tokio::time::timeout(grace, service.cancel()).await;
        }
    }

    /// Wait at most `limit` for the exit; whether it came.
    async fn wait_exit(&self, limit: Duration) -> bool {
        let mut exit = self.exit.clone();
        tokio::time::timeout(limit, exit.wait_for(Option::is_some))
            .await
            .is_ok()
    }

    async fn stop_child(
        &self,
        pid: u32,
        identity: Option<ProcessId>,
        tree: &KnownTree,
        cgroup: Option<&ServerCgroup>,
        grace: Duration,
    ) {
        let start = identity.map(|p| p.start_time);
        let mut snapshot = tree_now(pid, tree, cgroup);
        self.close_transport(grace).await;
        let exited = self.wait_exit(grace).await;
        snapshot.extend(tree_now(pid, tree, cgroup));
        let leftovers = snapshot.iter().any(|p| hygiene::is_alive(*p));
        if !exited || leftovers {
            hygiene::signal_tree(pid, start, &snapshot, Signal::SIGTERM);
            self.wait_exit(grace).await;
            hygiene::wait_gone(&snapshot, grace).await;
        }
        if let Some(cgroup) = cgroup {
            snapshot.extend(cgroup.members());
            cgroup.kill();
        }
        hygiene::signal_tree(pid, start, &snapshot, Signal::SIGKILL);
        self.wait_exit(grace).await;
        hygiene::wait_gone(&snapshot, grace).await;
        if let (Some(registry), Some(identity)) = (&self.registry, identity) {
            registry.forget(identity);
        }
        let task = self
            .stderr_task
            .lock()
            .ok()
            .and_then(|mut task| task.take());
        if let Some(task) = task {
            let _ = tokio::time::timeout(grace, task).await;
        }
    }
}
