//! `botcraft mcp-stdio --bot NAME`: a stdio MCP server that starts with nothing (seed 001).
//!
//! - **Start**: reads a bot manifest — `--manifest FILE` (bundled), else the cache
//!   `CACHE_DIR/BOT.json` written by an earlier run, else (bot `forge` only) the committed
//!   manifest built into the binary — and serves. No setting, file or service is needed to
//!   answer `initialize` and `tools/list`: for another bot with none, the tool list is empty
//!   and stderr says what to pass. Nothing at startup connects anywhere.
//! - **`tools/call`**: forwarded to `BOTCRAFT_URL`'s `/mcp` with `BOTCRAFT_API_KEY`
//!   ([`upstream`]). Every failure is that call's: an `isError` result stating the cause, one
//!   stderr line with a `stdio.*` reason code ([`failure`]).
//! - **Refresh**: when configured, after start the live list is fetched from BotCraft,
//!   written to the cache, and served from then on (`notifications/tools/list_changed` if it
//!   differs). A failed refresh is one reason-coded stderr line.
//! - **Exit**: 0 when the client closes stdin.
//!
//! `--server S` relays one server of the bot through BotCraft's `/mcp/S` ([`single`]);
//! `--local` serves the bot from a McpServerManager in this process, no HTTP at all
//! ([`local`]).

pub mod failure;
pub mod local;
pub mod plain_http;
pub mod server;
pub mod single;
pub mod upstream;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::task::AbortOnDropHandle;

pub use failure::{BRIDGE_NAME, BridgeFailure};
pub use server::{BridgeServer, BridgeState, NOT_CONFIGURED};
pub use upstream::{Upstream, UpstreamConfig, UpstreamError};

use crate::manifest::{BotManifest, cache_path};

/// Default wait for one answer from BotCraft (a tool call included).
pub const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(600);

/// The bridge's settings, parsed at the edge ([`McpStdioArgs`] or a test).
#[derive(Debug, Clone)]
pub struct BridgeOptions {
    pub bot: String,
    /// A bundled manifest; served instead of the cache.
    pub manifest: Option<PathBuf>,
    /// Where fetched manifests are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// `None` when BOTCRAFT_URL or BOTCRAFT_API_KEY is missing.
    pub upstream: Option<UpstreamConfig>,
    /// Fetch the live manifest after start (when configured).
    pub refresh: bool,
    /// `--server S`: relay that one server of the bot, everything MCP carries
    /// ([`single`]), instead of serving the bot's tools from a manifest.
    pub server: Option<String>,
}

/// The command-line and environment settings of `botcraft mcp-stdio` (flatten into a
/// subcommand).
#[derive(Clone, clap::Args)]
pub struct McpStdioArgs {
    /// The bot whose tools are served.
    #[arg(long)]
    pub bot: String,
    /// A bundled bot manifest (JSON) to serve instead of the cache.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Where fetched manifests are cached (default: $XDG_CACHE_HOME/botcraft/mcp-stdio or
    /// ~/.cache/botcraft/mcp-stdio; none when neither is set).
    #[arg(long, env = "BOTCRAFT_MCP_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// BotCraft's URL (its /mcp endpoint is used).
    #[arg(long, env = "BOTCRAFT_URL")]
    pub url: Option<String>,
    /// A bearer key of the bot.
    #[arg(long, env = "BOTCRAFT_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Longest wait for one answer from BotCraft, in seconds.
    #[arg(long, default_value_t = DEFAULT_UPSTREAM_TIMEOUT.as_secs())]
    pub timeout_secs: u64,
    /// Do not fetch the live tool list after start.
    #[arg(long)]
    pub no_refresh: bool,
    /// Relay one of the bot's MCP servers under its own names (BotCraft's /mcp/SERVER):
    /// tools, resources, prompts, completion, logging, sampling and elicitation.
    #[arg(long, value_name = "SERVER")]
    pub server: Option<String>,
}

/// Shows whether a key was given, never the key.
impl std::fmt::Debug for McpStdioArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpStdioArgs")
            .field("bot", &self.bot)
            .field("manifest", &self.manifest)
            .field("cache_dir", &self.cache_dir)
            .field("url", &self.url.as_deref().map(mcp_client::shown_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout_secs", &self.timeout_secs)
            .field("no_refresh", &self.no_refresh)
            .field("server", &self.server)
            .finish()
    }
}

impl McpStdioArgs {
    /// The options, with the default cache folder taken from `XDG_CACHE_HOME` or `HOME` (as
    /// given by `env`, the edge's view of the environment).
    pub fn into_options(self, env: impl Fn(&str) -> Option<String>) -> BridgeOptions {
        let cache_dir = self.cache_dir.or_else(|| {
            env("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| {
                    env("HOME")
                        .filter(|v| !v.is_empty())
                        .map(|home| PathBuf::from(home).join(".cache"))
                })
                .map(|base| base.join("botcraft").join("mcp-stdio"))
        });
        let upstream = match (self.url, self.api_key) {
            (Some(url), Some(api_key)) if !url.is_empty() && !api_key.is_empty() => {
                Some(UpstreamConfig {
                    url,
                    api_key,
                    timeout: Duration::from_secs(self.timeout_secs.max(1)),
                    proxy_in_env: UpstreamConfig::proxy_named(&env),
                })
            }
            _ => None,
        };
        BridgeOptions {
            bot: self.bot,
            manifest: self.manifest,
            cache_dir,
            upstream,
            refresh: !self.no_refresh,
            server: self.server,
        }
    }
}

/// The bridge could not serve at all (stdio itself failed).
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("MCP over stdio failed to start: {0}")]
    Initialize(Box<rmcp::service::ServerInitializeError>),
    #[error("the MCP server task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// The manifest to serve at start and a sentence on where it came from: `--manifest FILE`;
/// else the cache; else, for the seeded bot, the manifest built into the binary; else none,
/// with what to pass.
fn initial_manifest(options: &BridgeOptions) -> (BotManifest, String) {
    let empty = || BotManifest {
        bot: options.bot.clone(),
        instructions: None,
        tools: Vec::new(),
    };
    if let Some(path) = &options.manifest {
        return match BotManifest::load(path, &options.bot) {
            Ok(manifest) => (manifest, format!("from {}", path.display())),
            Err(error) => (empty(), format!("no manifest ({error})")),
        };
    }
    let cached = options
        .cache_dir
        .as_ref()
        .map(|dir| cache_path(dir, &options.bot));
    let cache_error = match &cached {
        Some(path) => match BotManifest::load(path, &options.bot) {
            Ok(manifest) => return (manifest, format!("from {}", path.display())),
            Err(error) => Some(error),
        },
        None => None,
    };
    if let Some(manifest) = crate::manifest::built_in(&options.bot) {
        return (
            manifest,
            "from the manifest built into this binary".to_owned(),
        );
    }
    let tried = match (&cached, &cache_error) {
        (
            Some(path),
            Some(crate::manifest::ManifestError::File(server_kit::manifest::ManifestError::Read {
                ..
            })),
        )
        | (Some(path), None) => {
            format!("no cached manifest at {}", path.display())
        }
        (Some(_), Some(error)) => error.to_string(),
        (None, _) => "no cache folder".to_owned(),
    };
    (
        empty(),
        format!(
            "(no manifest for bot {}: {tried}; pass --manifest FILE, or set BOTCRAFT_URL and \
             BOTCRAFT_API_KEY so the bridge fetches and caches it)",
            options.bot
        ),
    )
}

/// Serve the bridge on this process's stdin/stdout until the client closes stdin.
pub async fn serve_stdio(options: BridgeOptions) -> Result<(), BridgeError> {
    if let Some(server) = options.server.clone() {
        return serve_single(options, server).await;
    }
    let (manifest, source) = initial_manifest(&options);
    let calls = match &options.upstream {
        Some(config) => format!(
            "tools/call goes to {}",
            mcp_client::shown_url(&upstream::endpoint_of(&config.url))
        ),
        None => "tools/call is unconfigured (set BOTCRAFT_URL and BOTCRAFT_API_KEY)".to_owned(),
    };
    eprintln!(
        "{BRIDGE_NAME}: ready — bot {}, {} tools {source}; {calls}; introspection works regardless",
        options.bot,
        manifest.tools.len()
    );
    // Stopped when serving ends (`serve_stdio` may be called on a runtime that goes on).
    let _anchor = options
        .upstream
        .as_ref()
        .and_then(|config| anchor_period(config.timeout))
        .map(|period| AbortOnDropHandle::new(tokio::spawn(keep_a_timer_armed(period))));
    let state = BridgeState::new(manifest, options.upstream.as_ref().map(Upstream::new));
    if options.refresh && options.upstream.is_some() {
        let cache = options
            .cache_dir
            .as_ref()
            .map(|dir| cache_path(dir, &options.bot));
        tokio::spawn(refresh(state.clone(), options.bot.clone(), cache));
    }
    local::serve_on(BridgeServer::new(state)).await
}

/// The period of [`keep_a_timer_armed`] for calls that wait up to `timeout`: half the wait
/// (so the timer it keeps is always due before any call's deadline), a minute at most.
/// `None` below 100 ms (a wait under 200 ms, which the command line does not allow): a
/// timer kept that short would wake the bridge more than it saves.
fn anchor_period(timeout: Duration) -> Option<Duration> {
    let period = (timeout / 2).min(Duration::from_secs(60));
    (period >= Duration::from_millis(100)).then_some(period)
}

/// Keep one timer always set, due within `period`. Each call sets a timer for its deadline
/// (`--timeout-secs`). tokio's timer wakes its driver (a write to an eventfd, and one more
/// `epoll_wait` after it) whenever a timer is set that is due before every other one, or
/// when there is no other, which, at one call at a time, was every call: the driver had
/// parked with no timer while the bridge waited for stdin. With this timer due first, a
/// call's timer wakes nothing (`strace -c` of the bridge: 2 writes and 3 `epoll_wait` per
/// call before, 1 and 2 after; docs/benchmarks.md). The cost: a few wake-ups per `period`
/// (a timer that far out sits in one of the timer wheel's coarse slots). Not on the
/// `--server` face, whose requests go through rmcp's client (not measured there).
async fn keep_a_timer_armed(period: Duration) {
    loop {
        // Not a wait for anything: this sleep is the timer kept set, re-set when it fires.
        tokio::time::sleep(period).await;
    }
}

/// `--server S`: relay that server of the bot over stdio until the client closes stdin.
async fn serve_single(options: BridgeOptions, server: String) -> Result<(), BridgeError> {
    let target = match &options.upstream {
        Some(config) => format!(
            "requests go to {}",
            mcp_client::shown_url(&single::SingleServerBridge::endpoint(config, &server))
        ),
        None => "unconfigured: tools/list is empty and every other request fails until BOTCRAFT_URL and BOTCRAFT_API_KEY are set".to_owned(),
    };
    eprintln!(
        "{BRIDGE_NAME}: ready — bot {}, MCP server {server}; {target}",
        options.bot
    );
    let bridge = single::SingleServerBridge::new(options.bot, server, options.upstream);
    local::serve_on(bridge).await
}

/// Fetch the live manifest, cache it, serve it.
async fn refresh(state: Arc<BridgeState>, bot: String, cache: Option<PathBuf>) {
    let Some(upstream) = state.upstream() else {
        return;
    };
    match upstream.listing().await {
        Ok(listing) => {
            let manifest = BotManifest {
                bot,
                instructions: listing.instructions,
                tools: listing.tools,
            };
            state.replace(manifest.clone()).await;
            if let Some(path) = cache
                && let Err(error) = manifest.save(&path)
            {
                eprintln!("{BRIDGE_NAME}: cannot cache the manifest: {error}");
            }
        }
        Err(error) => {
            let failure = BridgeFailure::new(
                error.reason(),
                format!("cannot refresh the manifest; serving the one loaded at start: {error}"),
            );
            eprintln!("{}", failure.stderr_line("tools/list"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_timer_is_due_before_any_calls_deadline() {
        let cases = [
            (Duration::from_secs(600), Some(Duration::from_secs(60))),
            (Duration::from_secs(60), Some(Duration::from_secs(30))),
            (Duration::from_secs(1), Some(Duration::from_millis(500))),
            (Duration::from_millis(200), Some(Duration::from_millis(100))),
            (Duration::from_millis(199), None),
            (Duration::ZERO, None),
        ];
        for (timeout, period) in cases {
            assert_eq!(anchor_period(timeout), period, "{timeout:?}");
            assert!(period.is_none_or(|period| period < timeout));
        }
    }
}
