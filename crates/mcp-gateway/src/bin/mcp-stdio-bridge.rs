//! The stdio bridge on its own: the same as `botcraft mcp-stdio` (see `mcp_gateway::bridge`).

use std::process::ExitCode;

use clap::Parser;
use mcp_gateway::bridge::{BRIDGE_NAME, McpStdioArgs, serve_stdio};

/// A stdio MCP server for one BotCraft bot that starts with nothing: tools/list from a
/// manifest, tools/call forwarded to BotCraft's /mcp.
#[derive(Debug, Parser)]
#[command(name = "mcp-stdio-bridge", version)]
struct Cli {
    #[command(flatten)]
    args: McpStdioArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let options = cli.args.into_options(|name| std::env::var(name).ok());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("{BRIDGE_NAME}: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve_stdio(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{BRIDGE_NAME}: {error}");
            ExitCode::FAILURE
        }
    }
}
