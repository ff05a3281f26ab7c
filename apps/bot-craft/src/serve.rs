//! `botcraft serve`: open the store (seeding it on first run), start the always-on MCP
//! servers with a progress line each, serve the HTTP API, and on SIGTERM/SIGINT drain the
//! chat streams, stop every child within a deadline and exit 0.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use http_api::{AppState, default_native_tools};
use mcp_lifecycle::{McpServerManager, ServerState};
use tokio_util::sync::CancellationToken;

use crate::config::{DataArgs, ModelArgs};
use crate::seed::SeedSettings;

mod api;
mod credentials;
mod drain;
mod gateway;
mod telemetry;

pub(crate) use telemetry::flush_traces;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The address to listen on (port 0 picks a free port; the chosen address is printed).
    #[arg(long, env = "BOTCRAFT_ADDR", default_value = "127.0.0.1:3000")]
    addr: SocketAddr,
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// Admin keys (comma-separated) for `Authorization: Bearer`; default: a key generated
    /// once into DATA_DIR/api-key.
    #[arg(long, env = "BOTCRAFT_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Chat keys (comma-separated) for a chat front end: `POST /api/ai/chat`, reading bots
    /// and their tools, tool search. Every other route answers 403 to them.
    #[arg(long, env = "BOTCRAFT_CHAT_KEYS", hide_env_values = true)]
    chat_keys: Option<String>,
    /// Key of the OpenAI(-compatible) provider, for bots on `openai:MODEL`.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    openai_api_key: Option<String>,
    /// OpenAI-compatible endpoint (vLLM, llama.cpp, Ollama: e.g. http://localhost:11434/v1).
    #[arg(long, env = "OPENAI_BASE_URL")]
    openai_base_url: Option<String>,
    /// Key of Anthropic, for bots on `anthropic:MODEL`.
    #[arg(long, env = "ANTHROPIC_API_KEY", hide_env_values = true)]
    anthropic_api_key: Option<String>,
    /// Anthropic endpoint override (default https://api.anthropic.com).
    #[arg(long, env = "ANTHROPIC_BASE_URL")]
    anthropic_base_url: Option<String>,
    /// Seed settings, used when the store is empty on start.
    #[command(flatten)]
    seed: SeedSettings,
    /// Do not seed an empty store.
    #[arg(long)]
    no_seed: bool,
    /// On shutdown, how long running chat streams may take to finish before they are cut.
    #[arg(long, default_value = "10", value_name = "SECONDS")]
    drain_seconds: u64,
    /// On shutdown, how long stopping every MCP server may take.
    #[arg(long, default_value = "15", value_name = "SECONDS")]
    stop_seconds: u64,
    /// Request bodies larger than this are refused (413).
    #[arg(long, default_value_t = http_api::DEFAULT_MAX_BODY_BYTES, value_name = "BYTES")]
    max_body_bytes: usize,
    /// A client must send a request's header within this (and a kept-alive connection idle
    /// this long is closed).
    #[arg(
        long,
        env = "BOTCRAFT_HEADER_READ_TIMEOUT_SECONDS",
        default_value = "10",
        value_name = "SECONDS"
    )]
    header_read_timeout_seconds: u64,
    /// A request's body must arrive within this, or its connection is closed.
    #[arg(
        long,
        env = "BOTCRAFT_BODY_READ_TIMEOUT_SECONDS",
        default_value = "60",
        value_name = "SECONDS"
    )]
    body_read_timeout_seconds: u64,
    /// Connections open at once; more wait to be accepted.
    #[arg(
        long,
        env = "BOTCRAFT_MAX_CONNECTIONS",
        default_value_t = http_api::listener::DEFAULT_MAX_CONNECTIONS,
        value_name = "N"
    )]
    max_connections: usize,
    /// A client that reads nothing of an answer for this long has its connection closed (a
    /// chat turn it held is cancelled, its provider request with it).
    #[arg(
        long,
        env = "BOTCRAFT_WRITE_STALL_SECONDS",
        default_value = "30",
        value_name = "SECONDS"
    )]
    write_stall_seconds: u64,
    /// Chat turns running at once; past it, 429 `too_many_streams` with `Retry-After`.
    #[arg(
        long,
        env = "BOTCRAFT_MAX_CHAT_STREAMS",
        default_value_t = http_api::chat_streams::DEFAULT_MAX_CHAT_STREAMS,
        value_name = "N"
    )]
    max_chat_streams: usize,
    /// Chat turns running at once for one key; past it, 429 `too_many_streams`.
    #[arg(
        long,
        env = "BOTCRAFT_MAX_CHAT_STREAMS_PER_KEY",
        default_value_t = http_api::chat_streams::DEFAULT_MAX_CHAT_STREAMS_PER_KEY,
        value_name = "N"
    )]
    max_chat_streams_per_key: usize,
    /// Bytes of a chat turn's output held for a client that reads slower than the model
    /// writes; past it the turn stops reading the model until the client catches up.
    #[arg(
        long,
        env = "BOTCRAFT_CHAT_BUFFER_BYTES",
        default_value_t = inference::DEFAULT_EVENT_BUFFER_BYTES,
        value_name = "BYTES"
    )]
    chat_buffer_bytes: usize,
    /// `/mcp` sessions one bot may hold; opening one more closes its least recently used.
    #[arg(
        long,
        env = "BOTCRAFT_MCP_MAX_SESSIONS_PER_BOT",
        default_value_t = mcp_gateway::DEFAULT_MAX_SESSIONS_PER_BOT,
        value_name = "N"
    )]
    mcp_max_sessions_per_bot: usize,
    /// Put each MCP server in a cgroup v2 of its own where the machine allows it (`off`:
    /// never; trees are then tracked by the subreaper and /proc alone).
    #[arg(
        long,
        env = "BOTCRAFT_CGROUPS",
        default_value = "auto",
        value_parser = ["auto", "off"],
        value_name = "auto|off"
    )]
    cgroups: String,
    /// List the tools of every server never listed for its config in the background (at
    /// start, and when a server is added or changed), starting and stopping it (`off`: a
    /// server's tools are known once something starts it).
    #[arg(
        long,
        env = "BOTCRAFT_LIST_TOOLS",
        default_value = "auto",
        value_parser = ["auto", "off"],
        value_name = "auto|off"
    )]
    list_tools: String,
    /// An `/mcp` session unused this long is closed.
    #[arg(
        long,
        env = "BOTCRAFT_MCP_SESSION_IDLE_SECONDS",
        default_value = "1800",
        value_name = "SECONDS"
    )]
    mcp_session_idle_seconds: u64,
    /// A chat request with more messages is refused (413 `too_many_messages`).
    #[arg(
        long,
        env = "BOTCRAFT_MAX_CHAT_MESSAGES",
        default_value_t = http_api::DEFAULT_MAX_CHAT_MESSAGES,
        value_name = "N"
    )]
    max_chat_messages: usize,
    /// A provider silent for this long (before or during a stream) has stalled.
    #[arg(long, default_value = "120", value_name = "SECONDS")]
    provider_idle_seconds: u64,
    /// Keys of the `/mcp` gateway, one bot each: `forge=KEY1,other=KEY2` (a key names its
    /// bot). Bot keys made with `botcraft keys create --role bot` work too.
    #[arg(long, env = mcp_gateway::BOT_KEYS_ENV, hide_env_values = true)]
    bot_keys: Option<String>,
    /// `Host` values `/mcp` accepts besides loopback (comma-separated), for a deployment
    /// behind a domain (DNS-rebinding protection).
    #[arg(long, env = "BOTCRAFT_ALLOWED_HOSTS", value_delimiter = ',')]
    allowed_hosts: Vec<String>,
    /// Browser origins (`https://app.example.com`) that may call BotCraft besides its own
    /// pages (comma-separated). A request from any other page is refused (403).
    #[arg(long, env = "BOTCRAFT_ALLOWED_ORIGINS", value_delimiter = ',')]
    allowed_origins: Vec<String>,
    #[command(flatten)]
    server_env: crate::host::ServerEnvArgs,
    /// Run every MCP server process as this Unix user (a name, or UID[:GID]) instead of
    /// BotCraft's own, so tools cannot read BotCraft's data folder or memory. Needs root, or
    /// CAP_SETUID, CAP_SETGID and CAP_KILL (the image gives them to the binary).
    /// When BotCraft runs as root and this is unset, they run as `nobody`; `same` keeps them
    /// as BotCraft's own user (said at start).
    #[arg(long, env = "BOTCRAFT_TOOL_USER", value_name = "USER")]
    tool_user: Option<String>,
    /// Sandbox each stdio MCP server by its stored policy (Landlock, no new privileges), or
    /// not at all (`off`, said at start).
    #[arg(long, env = "BOTCRAFT_SANDBOX", value_enum, default_value = "auto")]
    sandbox: crate::host::SandboxMode,
    /// Log format on stderr.
    #[arg(long, env = "BOTCRAFT_LOG_FORMAT", default_value = "text")]
    log_format: observability::LogFormat,
    /// This replica's name, when several replicas share one data folder: its pid registry is
    /// then `DATA_DIR/pids.ID`, so no replica reaps another's servers.
    #[arg(long, env = "BOTCRAFT_REPLICA_ID", value_name = "ID")]
    replica_id: Option<String>,
    /// On SIGTERM or SIGINT, how long to go on serving with `/api/health/ready` answering 503
    /// ("draining") before new connections are refused, so a load balancer takes this replica
    /// out first. A second signal ends the wait.
    #[arg(
        long,
        env = "BOTCRAFT_UNREADY_SECONDS",
        default_value = "0",
        value_name = "SECONDS"
    )]
    unready_seconds: u64,
    /// How long a person has to answer a tool's approval request; an answer given later is
    /// refused and the model told so.
    #[arg(
        long,
        env = "BOTCRAFT_APPROVAL_TTL_SECONDS",
        default_value_t = http_api::DEFAULT_APPROVAL_TTL.as_secs(),
        value_name = "SECONDS"
    )]
    approval_ttl_seconds: u64,
    /// How many days a stored tool vector (and a server's vector set) no index of any replica
    /// has used is kept before it is deleted; the vectors of live indexes are kept whatever
    /// their age. At least 1.
    #[arg(
        long,
        env = "BOTCRAFT_TOOL_VECTOR_RETENTION_DAYS",
        default_value = "30",
        value_name = "DAYS",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    tool_vector_retention_days: u64,
    /// The address browsers reach BotCraft at (`https://bots.example.com`), for OAuth
    /// redirects and the client ID metadata document; default: the address listened on.
    #[arg(long, env = "BOTCRAFT_PUBLIC_URL", value_name = "URL")]
    public_url: Option<String>,
}

impl ServeArgs {
    /// Whether MCP servers run as another user (`--tool-user`, `BOTCRAFT_TOOL_USER`).
    pub fn runs_tools_as_another_user(&self) -> bool {
        self.tool_user
            .as_deref()
            .is_some_and(|user| !user.trim().is_empty() && user.trim() != SAME_USER)
    }
}

pub async fn run(mut args: ServeArgs) -> anyhow::Result<()> {
    credentials::warn_of_secret_flags();
    credentials::read_secret_files(&mut args)?;
    let (telemetry, trace_settings) = telemetry::start(args.log_format)?;
    let url = args.data.database_url()?;
    let _sole_replica = crate::host::claim_sqlite(&url)?;
    let seed = (!args.no_seed).then_some(&args.seed);
    let store = crate::host::open_store(&args.data, seed).await?;
    let secret_keys = crate::host::load_keys(&args.data.data_dir, &store).await;
    let keys = credentials::admin_keys(&args)?;
    let (pid_registry, _registry_claim) =
        crate::host::claim_pid_registry(&args.data.data_dir, args.replica_id.as_deref())?;
    let run_as = tool_user(args.tool_user.as_deref())?;
    if let Some(run_as) = &run_as {
        crate::host::open_workspace_to(run_as, &args.seed.workspace_root, &args.data.data_dir);
    }
    let tool_tmp = crate::host::tool_tmp_root();
    let sandbox = crate::host::sandbox_settings(
        args.sandbox,
        &args.seed.workspace_root,
        &args.data.data_dir,
        tool_tmp.as_ref(),
    );
    // Bound now (accepting starts once everything is ready) so that the OAuth redirect can
    // name the address, a free port chosen by the system included.
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("listen on {}", args.addr))?;
    let addr = listener.local_addr()?;
    let public_url = args
        .public_url
        .clone()
        .filter(|url| !url.trim().is_empty())
        .unwrap_or_else(|| crate::host::default_public_url(addr));
    let mut settings = crate::host::manager_settings(crate::host::HostOptions {
        server_env: &args.server_env.server_env,
        cgroups: args.cgroups == "auto",
        pid_registry: Some(pid_registry),
        run_as,
        oauth: crate::host::oauth_settings(&secret_keys, &public_url),
        sandbox,
    });
    settings.listing.enabled = args.list_tools == "auto";
    let _egress = crate::host::egress_proxy(&args.server_env, &mut settings).await?;
    if !settings.listing.enabled {
        eprintln!(
            "botcraft: tools are listed only when a server starts (BOTCRAFT_LIST_TOOLS=off): MCP clients and tool_search see a server's tools once something started it"
        );
    }
    let chat_keys = credentials::chat_keys(&args);
    // Bot keys as `BotKeys::parse` reads them (`BOT=KEY`, trimmed), named by their bot.
    let bot_keys: Vec<(String, &str)> = args
        .bot_keys
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .filter_map(|entry| entry.split_once('='))
        .map(|(bot, key)| (format!("bot {}", bot.trim()), key.trim()))
        .collect();
    let api_keys = args.api_key.is_some().then(|| {
        credentials::short_keys_warning(
            "BOTCRAFT_API_KEY",
            credentials::numbered(keys.iter().map(String::as_str)),
        )
    });
    for warning in [
        api_keys.flatten(),
        credentials::short_keys_warning(
            "BOTCRAFT_CHAT_KEYS",
            credentials::numbered(chat_keys.iter().map(String::as_str)),
        ),
        credentials::short_keys_warning(mcp_gateway::BOT_KEYS_ENV, bot_keys),
    ]
    .into_iter()
    .flatten()
    {
        eprintln!("botcraft: {warning}");
    }
    let secrets = credentials::known(&args, &keys, &chat_keys, &url, &trace_settings);
    if let Some(file) = &args.seed.tool_env_file {
        let withheld = mcp_lifecycle::Withheld {
            policy: &settings.env_policy,
            values: &secrets,
        };
        let written = mcp_lifecycle::write_deployment_env(file, &settings.env, &withheld)
            .with_context(|| format!("write BOTCRAFT_TOOL_ENV_FILE {}", file.display()))?;
        eprintln!(
            "botcraft: {} deployment variables (no secret) written to {} for tools{}",
            written.written,
            file.display(),
            match written.withheld.as_slice() {
                [] => String::new(),
                names => format!(
                    "; left out (credentials, or for the servers whose config names them): {}",
                    names.join(", ")
                ),
            }
        );
    }
    let manager = McpServerManager::new(server_records::records(store.clone()), settings);
    manager
        .load_configs()
        .await
        .context("load MCP server configs")?;
    let _replicas = crate::host::follow_other_replicas(&store, &manager).await?;
    let providers = api::providers(&args)?;
    let embedder = args.model.load().await?;
    let config = api::config(
        &args,
        api::Inputs {
            keys: &keys,
            chat_keys: &chat_keys,
            secrets,
            embedder,
            store: &store,
            public_url: &public_url,
            secret_keys: &secret_keys,
        },
    );
    if trace_settings.record_content {
        let redactor = config.redactor.clone();
        observability::record_content_with(move |text| redactor.redact(text));
    }
    let draining = config.draining.clone();
    let metrics = observability::BotCraftMetrics::new()?;
    record_server_metrics(&manager, &metrics);
    // Always-on servers start in the background: the API (and /api/health, which says what
    // is running) answers from the first moment; /api/health/ready says when they run.
    manager.reach_always_on();
    // Every server's tools known before anyone asks: those never listed for their config are
    // started, listed and stopped in the background.
    manager.list_unlisted();
    let health_loop = manager.start_health_check_loop();

    let turns = CancellationToken::new();
    crate::memory::give_back_after_bursts(config.chat_streams.clone(), turns.clone());
    let toolsets = http_api::new_toolsets(&store, &manager, &default_native_tools());
    let state = AppState {
        store: store.clone(),
        manager: manager.clone(),
        providers,
        toolsets: toolsets.clone(),
        native: default_native_tools(),
        config: Arc::new(config),
        shutdown: turns.clone(),
        metrics: metrics.clone(),
    };
    {
        let state = state.clone();
        let retention =
            Duration::from_secs(args.tool_vector_retention_days.saturating_mul(24 * 3600));
        tokio::spawn(async move {
            http_api::tool_loading::warm_tool_search(&state).await;
            http_api::tool_loading::keep_tool_vectors(&state, retention).await;
        });
    }
    eprintln!("botcraft: listening on http://{addr}");

    let stop_accepting = CancellationToken::new();
    let graceful = stop_accepting.clone();
    let sessions = CancellationToken::new();
    let router = http_api::app(state).merge(dashboard::router());
    let gateway = gateway::router(&args, &toolsets, &metrics, &store, &sessions)?;
    // In front of everything (the API, the dashboard and /mcp): the Origin rule, the
    // request's span, then a declared body over the limit refused before it is read (the
    // API's router keeps its own too, for when it is served alone). One layer, as each
    // `Router::layer` wraps every route once more and a request clones each wrapping.
    let origins = http_api::origin::OriginPolicy::new(&args.allowed_hosts, &args.allowed_origins);
    let router = router.merge(gateway).layer((
        http_api::origin::layer(origins),
        observability::TraceHttpLayer,
        http_api::routes::refuse_declared_oversize(args.max_body_bytes),
    ));
    // A header-read timeout (slowloris clients and idle connections end within seconds), a
    // connection cap, TCP_NODELAY (small SSE and JSON answers go out at once), graceful drain.
    let limits = http_api::listener::ConnectionLimits {
        header_read_timeout: Duration::from_secs(args.header_read_timeout_seconds.max(1)),
        body_read_timeout: Duration::from_secs(args.body_read_timeout_seconds.max(1)),
        max_connections: args.max_connections,
        write_stall_timeout: Duration::from_secs(args.write_stall_seconds.max(1)),
    };
    let mut server = tokio::spawn(http_api::listener::serve(
        listener, router, limits, graceful,
    ));
    tokio::select! {
        () = shutdown_signal() => {}
        result = &mut server => {
            manager.stop_all().await;
            flush_traces(telemetry).await;
            return result?.context("the HTTP server failed");
        }
    }

    drain::drain_and_stop(
        &args,
        drain::Running {
            draining,
            stop_accepting,
            sessions,
            turns,
            server,
            manager,
            health_loop,
            store,
            telemetry,
        },
    )
    .await
}

/// Server metrics: the state gauge and restart counts are read from the manager at each
/// scrape; state changes (starts, crashes) are counted as they happen, and each start's end
/// is said on stderr (`botcraft: NAME running (pid P, T tools) in N ms`, or why it failed).
fn record_server_metrics(
    manager: &Arc<McpServerManager>,
    metrics: &observability::BotCraftMetrics,
) {
    {
        let (manager, recorder) = (manager.clone(), metrics.clone());
        metrics.registry().on_collect(move || {
            for status in manager.get_all_statuses() {
                recorder.set_server_state(&status.name, &status.state.to_string());
                recorder.observe_server_restarts(&status.name, status.restarts);
            }
        });
    }
    for status in manager.get_all_statuses() {
        let Ok(mut states) = manager.watch_state(&status.name) else {
            continue;
        };
        let (metrics, manager) = (metrics.clone(), Arc::downgrade(manager));
        tokio::spawn(async move {
            let mut started = None;
            while states.changed().await.is_ok() {
                let state = *states.borrow_and_update();
                metrics.server_state_changed(&status.name, &state.to_string());
                let Some(manager) = manager.upgrade() else {
                    return;
                };
                say_start(&manager, &status.name, state, &mut started);
            }
        });
    }
}

/// One stderr line as a start of `name` begins and as it ends (`started` holds when).
fn say_start(
    manager: &McpServerManager,
    name: &str,
    state: ServerState,
    started: &mut Option<Instant>,
) {
    match (state, started.take()) {
        (ServerState::Starting, _) => {
            eprintln!("botcraft: starting {name} …");
            *started = Some(Instant::now());
        }
        // A start seen only as it ended (the watch keeps the latest state) is said too.
        (ServerState::Running, at) => {
            let elapsed = at.map_or_else(String::new, |at| {
                format!(" in {} ms", at.elapsed().as_millis())
            });
            let status = manager
                .get_all_statuses()
                .into_iter()
                .find(|status| status.name == name);
            eprintln!(
                "botcraft: {name} running (pid {}, {} tools){elapsed}",
                status
                    .as_ref()
                    .and_then(|s| s.pid)
                    .map_or("?".to_owned(), |pid| pid.to_string()),
                status.and_then(|s| s.tool_count).unwrap_or(0),
            );
        }
        (ServerState::Error | ServerState::Stopped, Some(_)) => {
            let error = manager
                .last_error(name)
                .ok()
                .flatten()
                .map_or_else(|| "stopped".to_owned(), |e| e.to_string());
            eprintln!(
                "botcraft: {name} failed to start: {}",
                crate::terminal::printable(&error.to_string(), true)
            );
        }
        _ => {}
    }
}

/// SIGTERM or SIGINT, listened to from this call on (not from the future's first poll): a
/// signal that comes between the call and the first poll is not lost (the second signal of
/// a drain, sent right after its message, was).
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut interrupt = signal(SignalKind::interrupt()).ok();
    async move {
        let term = async {
            match &mut term {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        let interrupt = async {
            match &mut interrupt {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = term => {}
            () = interrupt => {}
        }
    }
}

/// The user tools run as when BotCraft runs as root and none is named: root's tools would
/// read every file, and root reads BotCraft's `/proc/PID/environ` whatever it sets.
pub const ROOT_DEFAULT_TOOL_USER: &str = "nobody";

/// `BOTCRAFT_TOOL_USER` that keeps tools as BotCraft's own user, root included: an explicit,
/// loudly said choice (never the default).
pub const SAME_USER: &str = "same";

/// The user MCP servers run as, checked now: an unknown user, root, or a BotCraft that cannot
/// switch to it stops `serve` with the reason (never a server failing later on every start).
/// As root with none named, [`ROOT_DEFAULT_TOOL_USER`] (or 65534 where it has no entry).
fn tool_user(spec: Option<&str>) -> anyhow::Result<Option<mcp_lifecycle::RunAs>> {
    if spec.map(str::trim) == Some(SAME_USER) {
        eprintln!(
            "botcraft: BOTCRAFT_TOOL_USER={SAME_USER}: MCP servers run as BotCraft's own user{}",
            if nix::unistd::geteuid().is_root() {
                " (root: the sandbox still confines their files, but root's tools may read BotCraft's /proc/PID/environ; see docs/deployment.md)"
            } else {
                ""
            }
        );
        return Ok(None);
    }
    let Some(spec) = spec.map(str::trim).filter(|spec| !spec.is_empty()) else {
        if !nix::unistd::geteuid().is_root() {
            return Ok(None);
        }
        let run_as = mcp_lifecycle::RunAs::resolve(ROOT_DEFAULT_TOOL_USER)
            .or_else(|_| mcp_lifecycle::RunAs::resolve("65534:65534"))
            .context("the default tool user")?;
        eprintln!(
            "botcraft: running as root: MCP servers run as {} (set BOTCRAFT_TOOL_USER to choose another user)",
            run_as.label()
        );
        return Ok(Some(run_as));
    };
    let run_as = mcp_lifecycle::RunAs::resolve(spec).context("BOTCRAFT_TOOL_USER")?;
    if run_as.uid == nix::unistd::geteuid().as_raw() {
        anyhow::bail!(
            "BOTCRAFT_TOOL_USER: {} is BotCraft's own user; name another user, or unset it",
            run_as.label()
        );
    }
    run_as.check_capabilities().context("BOTCRAFT_TOOL_USER")?;
    eprintln!("botcraft: MCP servers run as {}", run_as.label());
    Ok(Some(run_as))
}
