//! A gateway for trying, testing and measuring `/mcp` without the rest of BotCraft: a store
//! in a temporary folder with one stdio MCP server (the command after `--`) bound to one bot,
//! the real `McpServerManager`, and `mcp_router` on a loopback port. Prints
//! `listening on http://127.0.0.1:PORT/mcp` on stdout once it accepts connections.
//!
//! `--open` drops the bearer key (every request is the bot): for the conformance suite,
//! which cannot send headers; the listener is loopback-only either way.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use mcp_gateway::{BotKeys, GatewayConfig, KeyPolicy, ToolsetBackend, mcp_router};
use mcp_lifecycle::{ManagerSettings, McpServerManager};
use store::{BindingSpec, BotSpec, McpServerSpec, Store};

#[derive(Debug, Parser)]
#[command(name = "mcp-gateway-demo")]
struct Cli {
    /// The bot's name.
    #[arg(long, default_value = "demo")]
    bot: String,
    /// The MCP server's name in the store.
    #[arg(long, default_value = "fake")]
    server: String,
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Bot keys, `bot=key,…` (the format of BOTCRAFT_BOT_KEYS).
    #[arg(long, env = "BOTCRAFT_BOT_KEYS", hide_env_values = true)]
    keys: Option<String>,
    /// No bearer key: every request is the bot (loopback only).
    #[arg(long)]
    open: bool,
    /// Server instructions stored for the server.
    #[arg(long)]
    instructions: Option<String>,
    /// The stdio MCP server command.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let dir = tempfile_dir()?;
    let store = Store::connect(&store::sqlite_url(&dir.join("store.db"))).await?;
    let (program, args) = cli.command.split_first().context("no server command")?;
    let mut spec = McpServerSpec::new(&cli.server, program).args(args.iter().cloned());
    if let Some(text) = &cli.instructions {
        spec = spec.instructions(text);
    }
    let server = store.create_server(&spec).await?;
    let bot = store.create_bot(&BotSpec::new(&cli.bot, "none")).await?;
    store
        .bind(&bot.id, &server.id, &BindingSpec::default())
        .await?;
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let manager = McpServerManager::new(
        server_records::records(store.clone()),
        ManagerSettings {
            env,
            ..ManagerSettings::default()
        },
    );
    manager.load_configs().await?;
    // The gateway lists from the cached tool lists and starts nothing: list once here.
    manager.get_tools(&server.name).await?;
    let policy = if cli.open {
        KeyPolicy::Open {
            bot: cli.bot.clone(),
        }
    } else {
        let keys = BotKeys::parse(cli.keys.as_deref().unwrap_or_default())?;
        anyhow::ensure!(!keys.is_empty(), "give --keys bot=key (or --open)");
        KeyPolicy::Keys(keys)
    };
    let toolsets = toolset::Toolsets::new(store.clone(), manager.clone(), ["tool_search"]);
    let backend = Arc::new(ToolsetBackend::new(toolsets));
    let app = mcp_router(backend, policy, &GatewayConfig::default());
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, cli.port))).await?;
    let address = listener.local_addr()?;
    println!("listening on http://{address}/mcp");
    std::io::stdout().flush()?;
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    manager.stop_all().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("mcp-gateway-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
