//! `botcraft mcp-stdio --bot NAME`: a stdio MCP server for one bot that starts with nothing.
//!
//! - Without `--local`: the forwarding bridge of `mcp_gateway::bridge` (tools/list from a
//!   manifest, tools/call forwarded to BOTCRAFT_URL's /mcp; `--server S` relays /mcp/S).
//! - With `--local`: the local aggregator. A McpServerManager in this process, over the
//!   store at `--data-dir` or `DATABASE_URL` (seeded when empty), serves the bot through the
//!   gateway's own MCP server on stdin/stdout (`mcp_gateway::bridge::local`): no HTTP hop,
//!   no second process. Servers start when first used, stop when idle, restart after a
//!   crash; on exit (stdin closed, SIGTERM, SIGINT) every server tree is stopped.

use std::sync::Arc;
use std::time::Duration;

use mcp_gateway::bridge::{McpStdioArgs, serve_stdio};
use mcp_lifecycle::McpServerManager;

use crate::config::DataArgs;
use crate::seed::SeedSettings;

#[derive(Debug, clap::Args)]
pub struct McpStdioCommand {
    #[command(flatten)]
    bridge: McpStdioArgs,
    /// Run the bot's MCP servers in this process (over the store at --data-dir or
    /// DATABASE_URL) instead of forwarding to a BotCraft over HTTP.
    #[arg(long)]
    local: bool,
    #[command(flatten)]
    data: DataArgs,
    /// With --local: seed settings, used when the store is empty.
    #[command(flatten)]
    seed: SeedSettings,
    /// With --local: the variables server configs may read.
    #[command(flatten)]
    server_env: crate::host::ServerEnvArgs,
    /// With --local: how long stopping every MCP server may take on exit.
    #[arg(long, default_value = "15", value_name = "SECONDS")]
    stop_seconds: u64,
}

pub async fn run(command: McpStdioCommand) -> anyhow::Result<()> {
    if command.local {
        return run_local(command).await;
    }
    // The bridge writes no log lines (stderr carries its reason codes); traces only.
    let telemetry = start_traces("off");
    let served = serve_stdio(command.bridge.into_options(|name| std::env::var(name).ok())).await;
    crate::serve::flush_traces(telemetry).await;
    served?;
    Ok(())
}

/// The `tracing` subscriber, with traces over OTLP when an endpoint is set. A stdio server
/// starts with nothing: a bad OpenTelemetry setting is said on stderr (reason
/// `stdio.not_configured`) and the bridge runs without traces.
fn start_traces(filter: &str) -> Option<observability::Telemetry> {
    let started = observability::TelemetrySettings::from_vars(|name| std::env::var(name).ok())
        .and_then(|settings| observability::Telemetry::start(&settings));
    let (telemetry, layer) = match started {
        Ok(Some((telemetry, layer))) => (Some(telemetry), Some(layer)),
        Ok(None) => (None, None),
        Err(error) => {
            eprintln!(
                "{}: reason=stdio.not_configured no traces: {error}",
                mcp_gateway::bridge::BRIDGE_NAME
            );
            (None, None)
        }
    };
    if let Err(error) =
        observability::init_tracing_with(observability::LogFormat::Text, filter, layer)
    {
        eprintln!("botcraft mcp-stdio: no logs: {error}");
    }
    telemetry
}

async fn run_local(command: McpStdioCommand) -> anyhow::Result<()> {
    // Logs go to stderr: stdout carries MCP alone.
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into());
    let telemetry = start_traces(&filter);
    let store = crate::host::open_store(&command.data, Some(&command.seed)).await?;
    // A pid registry of this process's own (`serve` or another aggregator may share the data
    // folder); each server also dies with this process (its parent-death signal).
    let registry = crate::host::local_pid_registry(&command.data.data_dir)?;
    let tool_tmp = crate::host::tool_tmp_root();
    let mut settings = crate::host::manager_settings(crate::host::HostOptions {
        server_env: &command.server_env.server_env,
        cgroups: true,
        pid_registry: Some(registry),
        run_as: None,
        sandbox: crate::host::sandbox_settings(
            crate::host::SandboxMode::Auto,
            &command.seed.workspace_root,
            &command.data.data_dir,
            tool_tmp.as_ref(),
        ),
        // Tokens a `serve` over the same store obtained are used (and refreshed) here too;
        // an authorization itself is started from `serve`.
        oauth: crate::host::oauth_settings(
            &crate::host::load_keys(&command.data.data_dir, &store).await,
            &std::env::var("BOTCRAFT_PUBLIC_URL")
                .unwrap_or_else(|_| "http://127.0.0.1:3000".to_owned()),
        ),
    });
    let _egress = crate::host::egress_proxy(&command.server_env, &mut settings).await?;
    let manager = McpServerManager::new(server_records::records(store.clone()), settings);
    manager.load_configs().await?;
    // On PostgreSQL, writes made through a `serve` reach this aggregator too.
    let _replicas = crate::host::follow_other_replicas(&store, &manager).await?;
    let health_loop = manager.start_health_check_loop();
    let toolsets = http_api::new_toolsets(&store, &manager, &http_api::default_native_tools());
    let bot = command.bridge.bot.clone();
    // A server of the bot never listed has no cached tools, so a desktop client would never
    // see them: list those once in the background (they idle-stop later); their tools reach
    // the client as `tools/list_changed`. Listing the cached ones starts nothing.
    {
        let (toolsets, bot) = (toolsets.clone(), bot.clone());
        tokio::spawn(async move {
            if let Err(error) = toolsets
                .load(&bot, toolset::ListPolicy::CachedThenStart)
                .await
            {
                eprintln!("botcraft: cannot list the tools of bot {bot}: {error}");
            }
        });
    }
    let backend = Arc::new(mcp_gateway::ToolsetBackend::new(toolsets));
    let served = tokio::select! {
        served = mcp_gateway::bridge::local::serve_local(backend, bot, command.bridge.server.clone()) => served,
        () = crate::serve::shutdown_signal() => Ok(()),
    };
    manager.begin_shutdown();
    let stop = Duration::from_secs(command.stop_seconds);
    if tokio::time::timeout(stop, manager.stop_all())
        .await
        .is_err()
    {
        eprintln!("botcraft: some MCP servers did not stop within {stop:?}");
    }
    health_loop.abort();
    // Every server is stopped: the registry goes, and a sweep still in flight writes nothing.
    manager.discard_pid_registry();
    store.close().await;
    crate::serve::flush_traces(telemetry).await;
    served?;
    Ok(())
}
