//! `McpServerManager`: every configured server, its state, and the rules that move it —
//! lazy start shared by concurrent first uses, explicit start/stop/restart, tool calls under
//! the server's timeout, and the tool lists. Elsewhere in the same impl: the restart loop
//! (`crate::restart`), statuses (`crate::state`), OAuth (`crate::oauth`), health
//! (`crate::health`).
//!
//! Not a singleton: build one with [`McpServerManager::new`] and pass the `Arc` around.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use rmcp::model::{CallToolResult, JsonObject, Tool};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::config::ServerConfig;
use crate::environment::server_env;
use crate::error::LifecycleError;
use crate::hygiene::PidRegistry;
use crate::in_process::InProcessServer;
use crate::process::McpProcess;
use crate::settings::ManagerSettings;
use crate::spans::StopReason;
use crate::state::ServerState;
use crate::tool_lists::ToolListEvent;
use mcp_client::ExitInfo;

mod health;
mod listing;
mod oauth;
mod principals;
mod restart;
mod start;
mod statuses;
mod tool_lists;

type StartFuture = Shared<BoxFuture<'static, Result<Arc<McpProcess>, LifecycleError>>>;

pub(crate) enum Phase {
    Stopped,
    Starting(StartFuture),
    Running(Arc<McpProcess>),
    Stopping,
    Error,
    /// A remote server that answered with an OAuth challenge: waits for an authorization
    /// (`crate::oauth`), not for a restart.
    NeedsAuth,
}

pub(crate) struct SlotState {
    pub phase: Phase,
    pub state_tx: watch::Sender<ServerState>,
    pub restarts: u32,
    pub consecutive_failures: u32,
    pub last_error: Option<LifecycleError>,
    pub last_exit: Option<ExitInfo>,
    pub last_stderr: Vec<String>,
    pub tools: Option<Arc<Vec<Tool>>>,
    /// The fingerprint of `tools` (`crate::tool_lists::fingerprinted`), set with them: a
    /// listing that finds the same one keeps their `Arc`.
    pub tools_hash: Option<String>,
    pub last_activity: tokio::time::Instant,
    /// Failed starts in a row, and when an on-demand start (a listing, a call) may try again.
    pub start_failures: u32,
    pub retry_at: Option<tokio::time::Instant>,
    /// The last `WWW-Authenticate` challenge of a `needs-auth` server.
    pub auth_challenge: Option<String>,
    /// Whether the tools are listed for the config's version ([`crate::listing`]).
    pub listing: crate::listing::Listing,
}

/// Who asks for a server to run: an operator or the manager itself (start now, whatever
/// failed before), or a listing or call that wants it (waits out the start backoff).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Demand {
    Explicit,
    OnUse,
    /// A tool listing ([`crate::listing`]): like `Explicit`, and a start it makes leaves out
    /// `${VAR}`s of unset variables; the process it starts so serves nothing else.
    Listing,
}

/// `process` for `demand`, unless it serves a listing only and this is not one: then what
/// a start for `demand` would have met (`NotConfigured`).
fn served(process: Arc<McpProcess>, demand: Demand) -> Result<Arc<McpProcess>, LifecycleError> {
    match process.listing_only() {
        Some(error) if demand != Demand::Listing => Err(error.clone()),
        _ => Ok(process),
    }
}

/// A condition on a slot, checked under its lock ([`McpServerManager::stop_slot_if`]).
pub(crate) type StillHolds = dyn Fn(&Slot, &SlotState) -> bool + Send + Sync;

/// Where a start finds its server ([`McpServerManager::ensure_slot_running`]).
enum Joined {
    Running(Arc<McpProcess>),
    Start(StartFuture),
    /// A stop is under way: its state's watch.
    Stopping(watch::Receiver<ServerState>),
}

impl Phase {
    pub fn state(&self) -> ServerState {
        match self {
            Self::Stopped => ServerState::Stopped,
            Self::Starting(_) => ServerState::Starting,
            Self::Running(_) => ServerState::Running,
            Self::Stopping => ServerState::Stopping,
            Self::Error => ServerState::Error,
            Self::NeedsAuth => ServerState::NeedsAuth,
        }
    }
}

impl SlotState {
    /// Move to `phase` and tell the watchers (every call notifies, even to the same state).
    pub fn set(&mut self, phase: Phase) {
        self.replace(phase);
    }

    pub fn replace(&mut self, phase: Phase) -> Phase {
        let state = phase.state();
        let previous = std::mem::replace(&mut self.phase, phase);
        self.state_tx.send_replace(state);
        previous
    }
}

/// One configured server.
pub(crate) struct Slot {
    /// Shared, not copied: every forwarded request reads it.
    pub config: Mutex<Arc<ServerConfig>>,
    /// Set for a server that runs in this process instead of as a child.
    pub in_process: Mutex<Option<Arc<dyn InProcessServer>>>,
    pub state: Mutex<SlotState>,
    pub in_flight: AtomicUsize,
    pub leases: AtomicUsize,
    /// Cancels the start in progress (a new token for each start).
    pub start_cancel: Mutex<CancellationToken>,
    /// The server's notifications and server-initiated requests (outlives restarts).
    pub relay: Arc<mcp_client::Relay>,
    /// Set on a principal's own connection to a remote server ([`crate::principals`]): the
    /// principal.
    pub principal: Option<String>,
    /// The principals' own connections to this server, by principal (empty but for OAuth
    /// servers).
    pub principal_slots: Mutex<BTreeMap<String, Arc<Slot>>>,
}

impl Slot {
    pub(crate) fn new(config: ServerConfig) -> Self {
        Self::with_principal(config, None)
    }

    pub(crate) fn with_principal(config: ServerConfig, principal: Option<String>) -> Self {
        Self {
            relay: mcp_client::Relay::new(config.name.clone()),
            principal,
            principal_slots: Mutex::new(BTreeMap::new()),
            config: Mutex::new(Arc::new(config)),
            in_process: Mutex::new(None),
            state: Mutex::new(SlotState {
                phase: Phase::Stopped,
                state_tx: watch::channel(ServerState::Stopped).0,
                restarts: 0,
                consecutive_failures: 0,
                last_error: None,
                last_exit: None,
                last_stderr: Vec::new(),
                tools: None,
                tools_hash: None,
                last_activity: tokio::time::Instant::now(),
                start_failures: 0,
                retry_at: None,
                auth_challenge: None,
                listing: crate::listing::Listing::default(),
            }),
            in_flight: AtomicUsize::new(0),
            leases: AtomicUsize::new(0),
            start_cancel: Mutex::new(CancellationToken::new()),
        }
    }

    /// Take `config` from the next start on, here and on the principals' own connections.
    pub fn set_config(&self, config: ServerConfig) {
        for own in self.principal_slots() {
            *own.config.lock().unwrap_or_else(|e| e.into_inner()) =
                Arc::new(crate::principals::principal_config(&config));
        }
        *self.config.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
    }

    /// The principals' own connections to this server.
    pub fn principal_slots(&self) -> Vec<Arc<Slot>> {
        self.principal_slots
            .lock()
            .map(|slots| slots.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The server's configuration as it is now (a later `set_config` does not change it).
    pub fn config(&self) -> Arc<ServerConfig> {
        self.config
            .lock()
            .map(|c| Arc::clone(&c))
            .unwrap_or_else(|e| Arc::clone(&e.into_inner()))
    }

    fn in_process(&self) -> Option<Arc<dyn InProcessServer>> {
        self.in_process
            .lock()
            .map(|server| server.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The token of the current (or next) start.
    pub fn start_cancel(&self) -> CancellationToken {
        self.start_cancel
            .lock()
            .map(|token| token.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// A fresh token for a start beginning now.
    fn new_start_cancel(&self) -> CancellationToken {
        let token = CancellationToken::new();
        match self.start_cancel.lock() {
            Ok(mut current) => *current = token.clone(),
            Err(poisoned) => *poisoned.into_inner() = token.clone(),
        }
        token
    }

    pub fn touch(&self) {
        self.lock().last_activity = tokio::time::Instant::now();
    }

    pub fn running(&self) -> Option<Arc<McpProcess>> {
        match &self.lock().phase {
            Phase::Running(process) => Some(process.clone()),
            _ => None,
        }
    }
}

pub(crate) struct Inner {
    pub records: Arc<dyn crate::records::ServerRecords>,
    pub settings: ManagerSettings,
    pub slots: Mutex<BTreeMap<String, Arc<Slot>>>,
    pub events: broadcast::Sender<ToolListEvent>,
    pub shutdown: CancellationToken,
    pub registry: Option<Arc<PidRegistry>>,
    /// BotCraft's cgroup, one child per server start (when the machine allows one).
    pub cgroups: Option<Arc<crate::cgroup::Cgroups>>,
    /// Wakes the orphan sweep (a server exited or was stopped).
    pub sweep_now: tokio::sync::Notify,
    /// The HTTP client of remote servers, made on the first connect.
    pub http: std::sync::OnceLock<reqwest::Client>,
    /// OAuth credentials of remote servers and the authorizations under way.
    pub oauth: crate::oauth::OAuthFlows,
    /// Held by the background listing run ([`crate::listing`]): one at a time.
    pub listing_run: tokio::sync::Mutex<()>,
}

/// The lifecycle of every MCP server. Cheap to share behind an `Arc`.
pub struct McpServerManager {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for McpServerManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerManager").finish_non_exhaustive()
    }
}

/// Decrements the in-flight count of a server when a call ends, however it ends.
pub(crate) struct InFlight(Arc<Slot>);

impl InFlight {
    pub(crate) fn new(slot: Arc<Slot>) -> Self {
        slot.in_flight.fetch_add(1, Ordering::SeqCst);
        slot.touch();
        Self(slot)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The manager's cgroups, while it lives.
fn strong_cgroups(inner: &std::sync::Weak<Inner>) -> Option<Arc<crate::cgroup::Cgroups>> {
    inner.upgrade().and_then(|inner| inner.cgroups.clone())
}

impl McpServerManager {
    /// A manager over `records` (the servers' configs, tool caches and OAuth records: the
    /// app's store). Reaps the processes a previous run left in the pid registry.
    pub fn new(
        records: Arc<dyn crate::records::ServerRecords>,
        settings: ManagerSettings,
    ) -> Arc<Self> {
        let registry = settings.pid_registry.clone().map(|path| {
            let registry = PidRegistry::new(path);
            let reaped = registry.reap();
            if !reaped.is_empty() {
                tracing::warn!(
                    ?reaped,
                    "reaped MCP server processes left by a previous run"
                );
            }
            Arc::new(registry)
        });
        let cgroups = settings
            .cgroups
            .then(crate::cgroup::Cgroups::create)
            .flatten();
        if let Some(cgroups) = &cgroups {
            let reaped = cgroups.reap_dead();
            if !reaped.is_empty() {
                tracing::warn!(?reaped, "killed the cgroups a previous run left");
            }
        }
        let (events, _) = broadcast::channel(64);
        let manager = Arc::new(Self {
            inner: Arc::new(Inner {
                records,
                settings,
                slots: Mutex::new(BTreeMap::new()),
                events,
                shutdown: CancellationToken::new(),
                registry,
                cgroups,
                sweep_now: tokio::sync::Notify::new(),
                http: std::sync::OnceLock::new(),
                oauth: crate::oauth::OAuthFlows::default(),
                listing_run: tokio::sync::Mutex::new(()),
            }),
        });
        if manager.inner.settings.reap_orphans {
            manager.spawn_sweeper();
        }
        manager
    }

    /// The orphan sweep (`reaper`), every `SWEEP_INTERVAL` and after each exit or stop,
    /// until shutdown. Needs the pid registry, which tells servers from orphans.
    fn spawn_sweeper(&self) {
        let Some(registry) = self.inner.registry.clone() else {
            tracing::warn!("orphan reaping needs the pid registry; not sweeping");
            return;
        };
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                let Some(strong) = inner.upgrade() else {
                    return;
                };
                let woken = async {
                    tokio::select! {
                        () = tokio::time::sleep(crate::reaper::SWEEP_INTERVAL) => false,
                        () = strong.sweep_now.notified() => false,
                        () = strong.shutdown.cancelled() => true,
                    }
                };
                let last = woken.await;
                drop(strong);
                let (registry, cgroups) = (registry.clone(), strong_cgroups(&inner));
                let swept = tokio::task::spawn_blocking(move || {
                    if let Some(cgroups) = cgroups {
                        cgroups.tidy();
                    }
                    crate::reaper::sweep(&registry)
                })
                .await
                .unwrap_or_default();
                if !swept.killed.is_empty() {
                    let pids: Vec<u32> = swept.killed.iter().map(|p| p.pid).collect();
                    tracing::warn!(?pids, "ended processes that MCP servers left behind");
                }
                if last {
                    return;
                }
            }
        });
    }

    /// Run the orphan sweep now (after a server exited or was stopped).
    pub(crate) fn sweep_soon(&self) {
        self.inner.sweep_now.notify_one();
    }

    pub(crate) fn slots(&self) -> Vec<(String, Arc<Slot>)> {
        self.inner
            .slots
            .lock()
            .map(|slots| slots.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    pub(crate) fn slot(&self, server: &str) -> Result<Arc<Slot>, LifecycleError> {
        self.inner
            .slots
            .lock()
            .ok()
            .and_then(|slots| slots.get(server).cloned())
            .ok_or_else(|| LifecycleError::UnknownServer {
                server: server.to_owned(),
            })
    }

    /// Read every server config from the records. New servers are added; changed configs take
    /// effect at the next start; servers gone from the records are stopped and dropped, and so
    /// is a server replaced by another of the same name (another id).
    pub async fn load_configs(&self) -> Result<(), LifecycleError> {
        let servers = self.inner.records.servers().await?;
        let mut removed = Vec::new();
        {
            let mut slots = self.inner.slots.lock().unwrap_or_else(|e| e.into_inner());
            for config in &servers {
                match slots.get(&config.name) {
                    // Another server under the same name (removed and added again between
                    // two reads): nothing of the old one (its process, its tools, the
                    // principals' connections) serves the new one.
                    Some(slot) if slot.config().id != config.id => {
                        if let Some(old) =
                            slots.insert(config.name.clone(), Arc::new(Slot::new(config.clone())))
                        {
                            removed.push(old);
                        }
                    }
                    Some(slot) => slot.set_config(config.clone()),
                    None => {
                        slots.insert(config.name.clone(), Arc::new(Slot::new(config.clone())));
                    }
                }
            }
            let names: Vec<String> = slots.keys().cloned().collect();
            for name in names {
                if !servers.iter().any(|s| s.name == name)
                    && let Some(slot) = slots.remove(&name)
                {
                    removed.push(slot);
                }
            }
        }
        for slot in removed {
            self.stop_with_principals(&slot, StopReason::Reconfigured)
                .await;
        }
        Ok(())
    }

    /// Add or replace one server config directly (servers not kept in the records).
    pub fn add_server(&self, config: ServerConfig) {
        self.put_slot(config, None);
    }

    /// Add or replace a server that runs inside this process: `config` gives its name,
    /// timeouts and idle rules (`command`, `args` and `env` are not used); `server` serves
    /// each start over an in-memory pipe.
    pub fn add_in_process_server(&self, config: ServerConfig, server: Arc<dyn InProcessServer>) {
        self.put_slot(config, Some(server));
    }

    fn put_slot(&self, config: ServerConfig, server: Option<Arc<dyn InProcessServer>>) {
        let mut slots = self.inner.slots.lock().unwrap_or_else(|e| e.into_inner());
        let slot = slots
            .entry(config.name.clone())
            .or_insert_with(|| Arc::new(Slot::new(config.clone())));
        slot.set_config(config);
        *slot.in_process.lock().unwrap_or_else(|e| e.into_inner()) = server;
    }

    /// Tool-list changes (`tools/list_changed` handled, tools refreshed at start); none for a
    /// listing that finds the same tools, already recorded for the config's version.
    pub fn subscribe(&self) -> broadcast::Receiver<ToolListEvent> {
        self.inner.events.subscribe()
    }

    /// Remove the pid registry's files for good, once every server is stopped and this
    /// process exits (a registry of its own, `mcp-stdio --local`): a sweep still running
    /// writes nothing after this.
    pub fn discard_pid_registry(&self) {
        if let Some(registry) = &self.inner.registry {
            registry.discard();
        }
    }

    /// Start `server` if it is not running; concurrent callers share one start.
    pub async fn start_server(&self, server: &str) -> Result<(), LifecycleError> {
        self.ensure_running(server).await.map(|_| ())
    }

    pub(crate) async fn ensure_running(
        &self,
        server: &str,
    ) -> Result<Arc<McpProcess>, LifecycleError> {
        let slot = self.slot(server)?;
        self.ensure_slot_running(server, &slot, Demand::Explicit)
            .await
    }

    pub(crate) async fn ensure_slot_running(
        &self,
        server: &str,
        slot: &Arc<Slot>,
        demand: Demand,
    ) -> Result<Arc<McpProcess>, LifecycleError> {
        loop {
            let stopping = match self.start_or_join(server, slot, demand)? {
                Joined::Running(process) => return served(process, demand),
                Joined::Start(start) => match start.await {
                    // A stop took the start over. A request that wants the server (a call)
                    // waits for the stop and starts it again, as for a stop under way; an
                    // explicit start or a listing does not undo the stop.
                    Err(LifecycleError::StartCancelled { .. }) if demand == Demand::OnUse => {
                        self.still_registered(server, slot)?;
                        continue;
                    }
                    started => return started.and_then(|process| served(process, demand)),
                },
                Joined::Stopping(stopping) => stopping,
            };
            // A stop under way (an idle stop, a listing's, an asked one) ends within its
            // grace and signals: wait for it, then start again. Refused, a start (a tool
            // call, `servers start`) would fail for a state of a few milliseconds. Only a
            // server the manager still has is started again: one removed or replaced while
            // it stops stays stopped.
            self.still_registered(server, slot)?;
            let mut changes = stopping;
            let _ = changes
                .wait_for(|state| *state != ServerState::Stopping)
                .await;
            self.still_registered(server, slot)?;
        }
    }

    /// `Ok` when `slot` is the manager's slot for `server` (not a principal's own, not one
    /// removed or replaced) and the manager is not shutting down (its stop is not undone);
    /// else why it is not started.
    fn still_registered(&self, server: &str, slot: &Arc<Slot>) -> Result<(), LifecycleError> {
        let current = self.slot(server)?;
        // A principal's own connection is registered under the server's slot.
        let registered = Arc::ptr_eq(&current, slot)
            || slot.principal.as_ref().is_some_and(|principal| {
                current
                    .principal_slots
                    .lock()
                    .ok()
                    .and_then(|own| own.get(principal).cloned())
                    .is_some_and(|own| Arc::ptr_eq(&own, slot))
            });
        if registered && !self.inner.shutdown.is_cancelled() {
            return Ok(());
        }
        let state = slot.lock();
        Err(LifecycleError::NotRunning {
            server: server.to_owned(),
            state: ServerState::Stopping,
            exit: state.last_exit,
            stderr_tail: state.last_stderr.clone(),
        })
    }

    /// The running process, the start to wait for (the one under way, or a new one), or the
    /// state's watch while a stop is under way; an error when the server may not start now.
    fn start_or_join(
        &self,
        server: &str,
        slot: &Arc<Slot>,
        demand: Demand,
    ) -> Result<Joined, LifecycleError> {
        let start = {
            let mut state = slot.lock();
            if demand == Demand::OnUse
                && matches!(state.phase, Phase::Error)
                && let Some(retry_at) = state.retry_at
            {
                let now = tokio::time::Instant::now();
                if now < retry_at {
                    return Err(LifecycleError::BackingOff {
                        server: server.to_owned(),
                        retry_in_ms: u64::try_from((retry_at - now).as_millis())
                            .unwrap_or(u64::MAX),
                        failures: state.start_failures,
                        cause: state
                            .last_error
                            .as_ref()
                            .map_or_else(String::new, ToString::to_string),
                    });
                }
            }
            if matches!(state.phase, Phase::NeedsAuth) && demand == Demand::OnUse {
                return Err(self.needs_auth_error(slot));
            }
            match &state.phase {
                // A remote connection lost a moment ago (its exit watcher has not run yet):
                // connect again rather than hand out the dead one.
                Phase::Running(process)
                    if process.is_remote() && process.exit_status().is_some() =>
                {
                    slot.new_start_cancel();
                    let start =
                        self.start_future(slot.clone(), "reconnect", demand == Demand::Listing);
                    state.set(Phase::Starting(start.clone()));
                    start
                }
                Phase::Running(process) => return Ok(Joined::Running(process.clone())),
                Phase::Starting(start) => start.clone(),
                Phase::Stopping => return Ok(Joined::Stopping(state.state_tx.subscribe())),
                Phase::Stopped | Phase::Error | Phase::NeedsAuth => {
                    slot.new_start_cancel();
                    let why = match demand {
                        Demand::OnUse => "on_demand",
                        Demand::Explicit => "explicit",
                        Demand::Listing => "listing",
                    };
                    let start = self.start_future(slot.clone(), why, demand == Demand::Listing);
                    state.set(Phase::Starting(start.clone()));
                    start
                }
            }
        };
        Ok(Joined::Start(start))
    }

    pub(crate) async fn stop_slot(&self, slot: &Arc<Slot>, why: StopReason) {
        self.stop_slot_in_span(slot, None)
            .instrument(crate::spans::stop(&slot.config().name, why))
            .await;
    }

    /// [`Self::stop_slot`] if `still` holds for the slot under its lock as the stop begins
    /// (an idle stop's check, made again where no request can pick the process up between
    /// the check and the stop); whether it stopped.
    pub(crate) async fn stop_slot_if(
        &self,
        slot: &Arc<Slot>,
        why: StopReason,
        still: &StillHolds,
    ) -> bool {
        self.stop_slot_in_span(slot, Some(still))
            .instrument(crate::spans::stop(&slot.config().name, why))
            .await
    }

    async fn stop_slot_in_span(&self, slot: &Arc<Slot>, still: Option<&StillHolds>) -> bool {
        let previous = {
            let mut state = slot.lock();
            if still.is_some_and(|still| !still(slot, &state)) {
                return false;
            }
            state.replace(Phase::Stopping)
        };
        let process = match previous {
            Phase::Running(process) => Some(process),
            Phase::Starting(start) => {
                // Abandon the start: its tree ends now, not when initialize times out.
                slot.start_cancel().cancel();
                start.await.ok()
            }
            Phase::Stopped | Phase::Stopping | Phase::Error | Phase::NeedsAuth => None,
        };
        if let Some(process) = process {
            process.stop(self.inner.settings.stop_grace).await;
            let mut state = slot.lock();
            state.last_exit = process.exit_status();
            state.last_stderr = process.stderr_tail();
        }
        slot.lock().set(Phase::Stopped);
        self.sweep_soon();
        true
    }

    /// Stop `server` (close stdin, TERM, KILL its whole tree).
    pub async fn stop_server(&self, server: &str) -> Result<(), LifecycleError> {
        let slot = self.slot(server)?;
        self.stop_with_principals(&slot, StopReason::Asked).await;
        Ok(())
    }

    /// Stop `slot` and the principals' own connections to it.
    pub(crate) async fn stop_with_principals(&self, slot: &Arc<Slot>, why: StopReason) {
        let own = slot.principal_slots();
        futures::future::join_all(own.iter().map(|own| self.stop_slot(own, why))).await;
        self.stop_slot(slot, why).await;
    }

    /// Stop, then start `server`.
    pub async fn restart_server(&self, server: &str) -> Result<(), LifecycleError> {
        self.stop_server(server).await?;
        self.start_server(server).await
    }

    /// The tools of `server`, starting it if needed.
    pub async fn get_tools(&self, server: &str) -> Result<Arc<Vec<Tool>>, LifecycleError> {
        let slot = self.slot(server)?;
        self.ensure_slot_running(server, &slot, Demand::OnUse)
            .await?;
        Ok(slot.lock().tools.clone().unwrap_or_default())
    }

    /// Call `tool` on `server` under the server's timeout, starting it if needed.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, LifecycleError> {
        self.call_tool_as(server, None, tool, arguments).await
    }

    /// [`Self::call_tool`] for `principal`: on the principal's own connection when it has
    /// OAuth credentials of its own for `server` ([`crate::principals`]), else on the
    /// server's. It takes the one request path, [`Self::forward`], with its recoveries.
    pub async fn call_tool_as(
        &self,
        server: &str,
        principal: Option<&str>,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, LifecycleError> {
        self.call_tool_until(server, principal, tool, arguments, CancellationToken::new())
            .await
    }

    /// [`Self::call_tool_as`], cancelled when `cancel` fires: the server is sent
    /// `notifications/cancelled` (so it can stop the work), and the call ends with
    /// [`LifecycleError::Cancelled`].
    pub async fn call_tool_until(
        &self,
        server: &str,
        principal: Option<&str>,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: CancellationToken,
    ) -> Result<CallToolResult, LifecycleError> {
        let mut params = rmcp::model::CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request =
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        let target = crate::ForwardFor {
            principal: principal.map(str::to_owned),
            ..crate::ForwardFor::default()
        };
        match self.forward(server, request, target, cancel).await? {
            rmcp::model::ServerResult::CallToolResult(result) => Ok(result),
            _ => Err(LifecycleError::Request {
                server: server.to_owned(),
                method: "tools/call",
                source: Arc::new(rmcp::ServiceError::UnexpectedResponse),
            }),
        }
    }

    /// Always-on is a state to reach: start every always-on server that is stopped (at boot,
    /// or one just created or switched on), concurrently. Each that fails is restarted with
    /// backoff up to the crash-loop limit; the failures are returned. Servers starting,
    /// running or waiting for a restart are left to what is already under way.
    pub async fn start_always_on_servers(&self) -> Vec<LifecycleError> {
        let stopped: Vec<(String, Arc<Slot>)> = self
            .slots()
            .into_iter()
            .filter(|(_, slot)| {
                slot.config().always_on && matches!(slot.lock().phase, Phase::Stopped)
            })
            .collect();
        let starts = stopped.iter().map(|(name, slot)| async move {
            let result = self.ensure_slot_running(name, slot, Demand::Explicit).await;
            (name, slot.clone(), result)
        });
        let mut failures = Vec::new();
        for (name, slot, result) in futures::future::join_all(starts).await {
            if let Err(error) = result {
                tracing::warn!(server = %name, %error, "always-on MCP server failed to start; retrying with backoff");
                self.schedule_restart(slot, false);
                failures.push(error);
            }
        }
        failures
    }

    /// [`Self::start_always_on_servers`] in the background; returns at once.
    pub fn reach_always_on(self: &Arc<Self>) {
        let manager = Arc::clone(self);
        tokio::spawn(async move { manager.start_always_on_servers().await });
    }

    /// Shutdown begins: starts in progress are abandoned at once (their trees ended, their
    /// callers answered), and nothing restarts. Servers keep running until [`Self::stop_all`].
    pub fn begin_shutdown(&self) {
        self.inner.shutdown.cancel();
        for (_, slot) in self.slots() {
            for slot in slot.principal_slots().iter().chain([&slot]) {
                if matches!(slot.lock().phase, Phase::Starting(_)) {
                    slot.start_cancel().cancel();
                }
            }
        }
    }

    /// Stop every server; no restart happens afterwards.
    pub async fn stop_all(&self) {
        self.inner.shutdown.cancel();
        let slots = self.slots();
        futures::future::join_all(
            slots
                .iter()
                .map(|(_, slot)| self.stop_with_principals(slot, StopReason::Shutdown)),
        )
        .await;
        if let Some(cgroups) = &self.inner.cgroups {
            // Every server cgroup went with its server: BotCraft's own can go too.
            cgroups.tidy();
            cgroups.remove_if_empty();
        }
    }
}
