//! What every command that hosts MCP servers in its own process shares (`serve` and the
//! local aggregator `mcp-stdio --local`): opening the store (seeding an empty one) and the
//! McpServerManager's settings (the environment servers may read, the subreaper, cgroups).

use std::path::{Path, PathBuf};

use anyhow::Context;
use mcp_lifecycle::ManagerSettings;
use store::Store;

use crate::config::DataArgs;
use crate::seed::{SeedSettings, list, missing_roots};

/// The store of `data`, private on disk; seeded from `seed` when it has no server and no bot.
pub async fn open_store(data: &DataArgs, seed: Option<&SeedSettings>) -> anyhow::Result<Store> {
    let url = data.database_url()?;
    // The data folder (pid registry, a generated key, the SQLite file) is private even when
    // it already exists wider (a Kubernetes emptyDir is 0777).
    crate::config::create_private_dir(&data.data_dir)?;
    let store = Store::connect(&url).await.context("open the database")?;
    data.protect_database_files();
    if let Some(seed) = seed
        && store.servers().await?.is_empty()
        && store.bots().await?.is_empty()
    {
        let config = seed.config()?;
        let report = store.seed(&config).await.context("seed")?;
        eprintln!(
            "botcraft: empty store seeded: servers {}; bot forge",
            list(&report.servers_created)
        );
        for warning in missing_roots(&config) {
            eprintln!("botcraft: {warning}");
        }
    }
    Ok(store)
}

/// `--server-env` / `BOTCRAFT_SERVER_ENV`, for every command that runs MCP servers.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerEnvArgs {
    /// Variables MCP server configs may read through `${VAR}`, besides TYPESENSE_URL,
    /// TYPESENSE_SEARCH_KEY and BROWSER_EGRESS_PROXY (comma-separated). BotCraft's own
    /// secrets never resolve.
    #[arg(
        long,
        env = "BOTCRAFT_SERVER_ENV",
        default_value = "",
        value_name = "NAMES"
    )]
    pub server_env: String,
    /// Hosts the browser may reach although they are not on the public internet
    /// (comma-separated `host`, `host:port` or `[IPv6]:port`: `localhost:5173,10.0.0.5`).
    /// Everything else of this host and its networks, cloud metadata addresses included, is
    /// refused by the egress proxy BotCraft starts for it.
    #[arg(
        long,
        env = "BOTCRAFT_BROWSER_ALLOW",
        default_value = "",
        value_name = "HOSTS"
    )]
    pub browser_allow: String,
}

/// The variable server configs name BotCraft's egress proxy by (`${BROWSER_EGRESS_PROXY}`;
/// the seeded Playwright's `PLAYWRIGHT_MCP_PROXY_SERVER`).
pub const EGRESS_PROXY_VARIABLE: &str = "BROWSER_EGRESS_PROXY";

/// The browser's egress proxy (`egress_proxy`), started for this process unless the
/// operator names a proxy of their own in `BROWSER_EGRESS_PROXY`; its URL reaches server
/// configs as `${BROWSER_EGRESS_PROXY}`. Serves while the value is kept.
pub async fn egress_proxy(
    args: &ServerEnvArgs,
    settings: &mut ManagerSettings,
) -> anyhow::Result<Option<egress_proxy::EgressProxy>> {
    let rules = egress_proxy::EgressRules::parse(&args.browser_allow)?;
    if settings
        .env
        .get(EGRESS_PROXY_VARIABLE)
        .is_some_and(|url| !url.trim().is_empty())
    {
        eprintln!(
            "botcraft: the browser's traffic goes to the proxy in {EGRESS_PROXY_VARIABLE} (BotCraft's egress rules, BOTCRAFT_BROWSER_ALLOW included, are not applied)"
        );
        return Ok(None);
    }
    let proxy = egress_proxy::EgressProxy::start(rules)
        .await
        .context("start the browser's egress proxy")?;
    settings
        .env
        .insert(EGRESS_PROXY_VARIABLE.to_owned(), proxy.url());
    Ok(Some(proxy))
}

/// How this process hosts MCP servers.
pub struct HostOptions<'a> {
    /// `BOTCRAFT_SERVER_ENV`: variables server configs may read besides the defaults.
    pub server_env: &'a str,
    /// Put each server in a cgroup of its own where the machine allows it.
    pub cgroups: bool,
    /// Where running servers are recorded so the next start reaps leftovers.
    pub pid_registry: Option<PathBuf>,
    pub run_as: Option<mcp_lifecycle::RunAs>,
    /// OAuth for remote servers that ask for it ([`oauth_settings`]).
    pub oauth: Option<mcp_lifecycle::OAuthSettings>,
    /// The sandbox of every stdio server ([`sandbox_settings`]); `None`: unconfined.
    pub sandbox: Option<mcp_lifecycle::SandboxSettings>,
}

/// This process's folder of private tool folders, said when it cannot be made.
pub fn tool_tmp_root() -> Option<mcp_lifecycle::ToolTmpRoot> {
    mcp_lifecycle::ToolTmpRoot::create()
        .inspect_err(|error| {
            eprintln!("botcraft: no folder for the tools' temporary folders: {error}")
        })
        .ok()
}

/// Whether BotCraft sandboxes its tool servers (`--sandbox`, `BOTCRAFT_SANDBOX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SandboxMode {
    /// Each stdio server by its stored policy, with Landlock where the kernel has it.
    Auto,
    /// None: every server runs as BotCraft runs it (said at start).
    Off,
}

/// The sandbox settings for this host: the workspace read-write and where servers start, the
/// data folder unreachable. Says at start what this kernel offers, never silently.
pub fn sandbox_settings(
    mode: SandboxMode,
    workspace: &Path,
    data_dir: &Path,
    tmp_root: Option<&mcp_lifecycle::ToolTmpRoot>,
) -> Option<mcp_lifecycle::SandboxSettings> {
    if mode == SandboxMode::Off {
        eprintln!(
            "botcraft: sandbox: off (BOTCRAFT_SANDBOX=off): MCP servers run unconfined, with BotCraft's own reach"
        );
        return None;
    }
    let Some(tmp_root) = tmp_root else {
        eprintln!(
            "botcraft: sandbox: off: no folder for the tools' private temporary folders could be made in {}",
            std::env::temp_dir().display()
        );
        return None;
    };
    let availability = sandbox::availability();
    match availability {
        // TCP rules came with ABI 4 (Linux 6.7).
        sandbox::Availability::Landlock { abi } if abi < 4 => {
            eprintln!(
                "botcraft: sandbox: landlock (ABI {abi}): each MCP server runs confined by its policy, but this kernel has no TCP rules (Linux 6.7): a server's list of ports is not enforced (the system-call filter still refuses the sockets such a rule would not see)"
            );
        }
        sandbox::Availability::Landlock { abi } => {
            eprintln!(
                "botcraft: sandbox: landlock (ABI {abi}): each MCP server runs confined by its policy"
            );
        }
        sandbox::Availability::Unavailable => eprintln!(
            "botcraft: sandbox: unavailable: this kernel has no Landlock, so MCP servers run unconfined (no new privileges and the system-call filter only); see docs/deployment.md"
        ),
    }
    let absolute = |path: &Path| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    Some(mcp_lifecycle::SandboxSettings {
        workspace: Some(absolute(workspace)),
        forbidden: vec![absolute(data_dir)],
        availability,
        tmp_root: tmp_root.path().to_path_buf(),
    })
}

/// BotCraft's key (`BOTCRAFT_SECRET_KEY(_FILE)`, or the one generated in the data folder)
/// bound to the store's share ([`store::Store::key_share`]), so that neither the key file
/// nor the database alone seals, opens or signs anything; and the key alone, to open what
/// was sealed before the binding.
pub struct Keys {
    pub bound: secrets::SecretKey,
    pub unbound: secrets::SecretKey,
}

/// The keys, or why there are none (said by the callers, which then go without).
pub async fn load_keys(data_dir: &Path, store: &store::Store) -> Result<Keys, String> {
    let unbound = secrets::SecretKey::load(|name| std::env::var(name).ok(), Some(data_dir))
        .map_err(|error| error.to_string())?;
    if let Some(warning) = unshared_key_warning(store.backend(), unbound.source()) {
        eprintln!("botcraft: {warning}");
    }
    let share = store
        .key_share()
        .await
        .map_err(|error| format!("the store's key share cannot be read: {error}"))?;
    Ok(Keys {
        bound: unbound.bound_to(share.as_bytes()),
        unbound,
    })
}

/// What to say when the key is the one made in this replica's data folder while the store is
/// PostgreSQL, which replicas share: each replica would have a key of its own (approvals one
/// signs refused by the others, tokens one seals unreadable by the others).
fn unshared_key_warning(backend: store::Backend, source: &secrets::KeySource) -> Option<String> {
    match (backend, source) {
        (store::Backend::Postgres, secrets::KeySource::Generated(path)) => Some(format!(
            "the secret key is the one in {}: if more than one BotCraft shares this PostgreSQL database, each needs this same key (approvals one signs, and OAuth tokens one seals, are refused by the others): point BOTCRAFT_SECRET_KEY_FILE at this file, or copy its value into BOTCRAFT_SECRET_KEY, on every replica (a new value would leave the stored OAuth tokens unreadable)",
            path.display()
        )),
        _ => None,
    }
}

/// OAuth for remote servers: tokens sealed with [`Keys`] (records sealed before the binding
/// still open, and are sealed anew when written), the browser sent back to `public_url`'s
/// `/oauth/callback`. Off, with the reason printed, when there is no usable key.
pub fn oauth_settings(
    keys: &Result<Keys, String>,
    public_url: &str,
) -> Option<mcp_lifecycle::OAuthSettings> {
    let keys = match keys {
        Ok(keys) => keys,
        Err(error) => {
            eprintln!("botcraft: OAuth for remote MCP servers is off: {error}");
            return None;
        }
    };
    let base = public_url.trim_end_matches('/');
    let client_metadata_url = http_api::routes::oauth::client_metadata_document(base, CLIENT_NAME)
        .map(|_| format!("{base}/oauth/client-metadata.json"));
    Some(mcp_lifecycle::OAuthSettings {
        redirect_uri: format!("{base}/oauth/callback"),
        sealer: keys.bound.sealer().with_previous(&keys.unbound),
        client_name: CLIENT_NAME.to_owned(),
        client_metadata_url,
        reconnect_hint: Some(mcp_lifecycle::ReconnectHint(std::sync::Arc::new(
            reconnect_hint,
        ))),
    })
}

/// What a `needs-auth` error tells the operator, in BotCraft's words: the manager's
/// principals are bots (by id), authorized through the dashboard or the API.
pub fn reconnect_hint(server: &str, bot: Option<&str>) -> String {
    match bot {
        None => format!(
            ": an operator must connect it (dashboard: Servers, {server}, Connect; or POST /api/servers/{server}/oauth/start and open the URL it returns)"
        ),
        Some(bot) => format!(
            " with bot {bot:?}'s own account: an operator must connect it for that bot (POST /api/servers/{server}/oauth/start?bot={bot} and open the URL it returns), or remove the bot's own authorization (DELETE /api/servers/{server}/oauth?bot={bot}) so that the bot uses the server's"
        ),
    }
}

/// How BotCraft names itself to authorization servers.
pub const CLIENT_NAME: &str = "BotCraft";

/// The address BotCraft is reached at when `BOTCRAFT_PUBLIC_URL` is not set: the one it
/// listens on (`localhost` for an unspecified address).
pub fn default_public_url(addr: std::net::SocketAddr) -> String {
    if addr.ip().is_unspecified() {
        format!("http://localhost:{}", addr.port())
    } else {
        format!("http://{addr}")
    }
}

/// The manager's settings; makes this process the subreaper of the servers first, so their
/// orphans (a killed forge-bash's commands, setsid grandchildren) re-parent to it and are
/// ended and reaped (`mcp_lifecycle::reaper`).
pub fn manager_settings(options: HostOptions<'_>) -> ManagerSettings {
    let reap_orphans = match mcp_lifecycle::reaper::become_subreaper() {
        Ok(()) => true,
        Err(error) => {
            eprintln!("botcraft: cannot become the subreaper of the MCP servers: {error}");
            false
        }
    };
    ManagerSettings {
        env: std::env::vars().collect(),
        env_policy: mcp_lifecycle::EnvPolicy::with_extra(options.server_env),
        pid_registry: options.pid_registry,
        run_as: options.run_as,
        reap_orphans,
        cgroups: options.cgroups,
        oauth: options.oauth,
        sandbox: options.sandbox,
        ..ManagerSettings::default()
    }
}

/// Make the workspace usable by tools that run as `run_as`: when it lies inside the data
/// folder (`scripts/run.sh`'s `.botcraft/workspace`), the data folder becomes traversable
/// (0711: no listing, and every file in it stays 0600; the sandbox keeps tools out of it
/// anyway); when BotCraft is root and the workspace is root's, it is handed to the tool user
/// (`chown -R`, symlinks not followed, files with other hard links left as they are), said
/// on stderr. Problems are said, never fatal.
pub fn open_workspace_to(run_as: &mcp_lifecycle::RunAs, workspace: &Path, data_dir: &Path) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let (Ok(workspace), Ok(data)) = (
        std::fs::canonicalize(workspace),
        std::fs::canonicalize(data_dir),
    ) else {
        return;
    };
    if workspace.starts_with(&data) && workspace != data {
        let traversable = std::fs::Permissions::from_mode(0o711);
        if let Err(error) = std::fs::set_permissions(&data, traversable) {
            eprintln!(
                "botcraft: the workspace {} is inside the data folder, which {} cannot enter: {error}",
                workspace.display(),
                run_as.label()
            );
        }
    }
    let root_owned = std::fs::metadata(&workspace).is_ok_and(|meta| meta.uid() == 0);
    if nix::unistd::geteuid().is_root() && root_owned {
        let (uid, gid) = (
            nix::unistd::Uid::from_raw(run_as.uid),
            nix::unistd::Gid::from_raw(run_as.gid),
        );
        let mut pending = vec![workspace.clone()];
        let mut failures = 0usize;
        while let Some(path) = pending.pop() {
            let meta = std::fs::symlink_metadata(&path);
            // A regular file with other names may be one outside too (a link to a system
            // file): root never hands that to the tool user.
            if meta
                .as_ref()
                .is_ok_and(|meta| meta.is_file() && meta.nlink() > 1)
            {
                failures += 1;
                continue;
            }
            if nix::unistd::fchownat(
                nix::fcntl::AT_FDCWD,
                &path,
                Some(uid),
                Some(gid),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .is_err()
            {
                failures += 1;
            }
            let is_dir = meta.is_ok_and(|meta| meta.is_dir());
            if is_dir && let Ok(entries) = std::fs::read_dir(&path) {
                pending.extend(entries.flatten().map(|entry| entry.path()));
            }
        }
        eprintln!(
            "botcraft: the workspace {} was root's: handed to {} so tools can write it{}",
            workspace.display(),
            run_as.label(),
            if failures > 0 {
                format!(" ({failures} entries could not be changed)")
            } else {
                String::new()
            }
        );
    }
}

/// The pid registry of one local aggregator (`mcp-stdio --local`):
/// `DATA_DIR/local/pids-PID`, one per process, because a registry is reaped whole when its
/// owner starts and `serve` or other aggregators may share the data folder. Registries left
/// by aggregators that died (no such process now) are reaped and removed first.
pub fn local_pid_registry(data_dir: &Path) -> anyhow::Result<PathBuf> {
    let dir = data_dir.join("local");
    crate::config::create_private_dir(&dir)?;
    let own = std::process::id();
    for entry in std::fs::read_dir(&dir)?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix("pids-"))
            .and_then(|pid| pid.parse::<u32>().ok())
            .filter(|pid| *pid != own)
            .and_then(|pid| i32::try_from(pid).ok())
            .filter(|pid| *pid > 0)
        else {
            continue;
        };
        // Only a pid that names no process is a dead owner (EPERM: alive, another user's).
        let owner_gone = matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
        if !owner_gone {
            continue;
        }
        let registry = mcp_lifecycle::hygiene::PidRegistry::new(entry.path());
        let reaped = registry.reap();
        if !reaped.is_empty() {
            eprintln!(
                "botcraft: reaped {} MCP server process(es) a dead local aggregator left",
                reaped.len()
            );
        }
        registry.discard();
    }
    Ok(dir.join(format!("pids-{own}")))
}

/// Replicas on one PostgreSQL store: hear the other replicas' writes (they reach every cache
/// through [`Store::changes`]) and apply those that touch servers to this replica's own
/// manager: a server added, changed or deleted elsewhere is loaded, reconfigured or stopped
/// here, and an always-on one started. `None` on SQLite, which has one replica. The
/// listening stops when the returned value is dropped.
pub async fn follow_other_replicas(
    store: &Store,
    manager: &std::sync::Arc<mcp_lifecycle::McpServerManager>,
) -> anyhow::Result<Option<FollowedReplicas>> {
    let mut changes = store.changes();
    let Some(listener) = store
        .listen_to_peers()
        .await
        .context("listen to the store's change channel")?
    else {
        return Ok(None);
    };
    let manager = std::sync::Arc::downgrade(manager);
    let task = tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let change = match changes.recv().await {
                Ok(change) => Some(change),
                Err(RecvError::Lagged(_)) => None,
                Err(RecvError::Closed) => return,
            };
            let touches_servers = match &change {
                Some(store::StoreChange::Server { .. } | store::StoreChange::Everything) | None => {
                    true
                }
                Some(_) => false,
            };
            let Some(manager) = manager.upgrade() else {
                return;
            };
            // OAuth records kept in memory are read again: another replica signed out,
            // authorized or refreshed.
            match &change {
                Some(store::StoreChange::OAuthRecord { mcp_server_id }) => {
                    manager.oauth_records_changed(Some(mcp_server_id)).await;
                }
                Some(store::StoreChange::Everything) | None => {
                    manager.oauth_records_changed(None).await;
                }
                Some(_) => {}
            }
            if touches_servers {
                match manager.load_configs().await {
                    Ok(()) => {
                        manager.reach_always_on();
                        tracing::info!(change = ?change, "server configs reloaded after a store change");
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot reload server configs after a store change")
                    }
                }
            }
        }
    });
    Ok(Some(FollowedReplicas {
        _listener: listener,
        task,
    }))
}

/// What [`follow_other_replicas`] runs; both stop when it is dropped.
pub struct FollowedReplicas {
    _listener: store::PeerListener,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FollowedReplicas {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// SQLite has one replica: the `serve` that holds this claim on database `url` is the only
/// one, and a second is refused with the reason. `None` for PostgreSQL or an in-memory
/// database.
pub fn claim_sqlite(url: &str) -> anyhow::Result<Option<std::fs::File>> {
    let Some(rest) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    else {
        return Ok(None);
    };
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() || path.contains(":memory:") {
        return Ok(None);
    }
    claim(
        Path::new(&format!("{path}.serve-lock")),
        &format!(
            "another `botcraft serve` already runs on the SQLite database {path}: SQLite has one \
             replica. Stop it first, or run several replicas on PostgreSQL (DATABASE_URL=postgres://…)"
        ),
    )
    .map(Some)
}

/// The pid registry of this replica in `data_dir`: `pids`, or `pids.ID` for
/// `BOTCRAFT_REPLICA_ID=ID`, claimed for as long as this process runs. A registry is reaped
/// whole when its owner starts, so two replicas on one registry would end each other's
/// servers: the second is refused with the reason instead.
pub fn claim_pid_registry(
    data_dir: &Path,
    replica: Option<&str>,
) -> anyhow::Result<(PathBuf, std::fs::File)> {
    let name = match replica.map(str::trim).filter(|id| !id.is_empty()) {
        Some(id) => {
            let valid = id.len() <= 64
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            anyhow::ensure!(
                valid,
                "BOTCRAFT_REPLICA_ID must be 1 to 64 letters, digits, '.', '_' or '-': {id:?}"
            );
            format!("pids.{id}")
        }
        None => "pids".to_owned(),
    };
    let registry = data_dir.join(&name);
    let lock = data_dir.join(format!("{name}.lock"));
    let file = claim(
        &lock,
        &format!(
            "another `botcraft serve` already uses the pid registry {}: each replica needs its \
             own data folder (BOTCRAFT_DATA_DIR) or replica id (BOTCRAFT_REPLICA_ID)",
            registry.display()
        ),
    )?;
    Ok((registry, file))
}

/// An exclusive lock on `path` (created if missing), held while the returned file is open:
/// let go when the process ends, however it ends. Held by another process: `refusal`.
fn claim(path: &Path, refusal: &str) -> anyhow::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!("{refusal}"),
        Err(std::fs::TryLockError::Error(error)) => {
            Err(error).with_context(|| format!("lock {}", path.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{reconnect_hint, unshared_key_warning};

    #[test]
    fn a_key_made_in_one_replicas_folder_is_said_of_with_postgresql_only() {
        use secrets::KeySource;
        let made = KeySource::Generated("/data/secret.key".into());
        let warning = unshared_key_warning(store::Backend::Postgres, &made).expect("said");
        assert!(warning.contains("/data/secret.key") && warning.contains("BOTCRAFT_SECRET_KEY"));
        assert_eq!(unshared_key_warning(store::Backend::Sqlite, &made), None);
        for given in [KeySource::Variable, KeySource::File("/run/key".into())] {
            assert_eq!(unshared_key_warning(store::Backend::Postgres, &given), None);
        }
    }

    #[test]
    fn a_needs_auth_error_names_the_dashboard_and_the_api_route_for_the_server_or_the_bot() {
        assert_eq!(
            reconnect_hint("hosted", None),
            ": an operator must connect it (dashboard: Servers, hosted, Connect; or POST /api/servers/hosted/oauth/start and open the URL it returns)"
        );
        assert_eq!(
            reconnect_hint("hosted", Some("b1")),
            " with bot \"b1\"'s own account: an operator must connect it for that bot (POST /api/servers/hosted/oauth/start?bot=b1 and open the URL it returns), or remove the bot's own authorization (DELETE /api/servers/hosted/oauth?bot=b1) so that the bot uses the server's"
        );
    }
}
