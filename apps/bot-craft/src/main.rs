//! `botcraft`: the BotCraft binary. Thin wiring over the library crates; each subcommand lives
//! in its own module.

mod seed;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "botcraft",
    version,
    about = "BotCraft: a host for MCP servers and bots"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write the seed data (forge servers, Playwright, the `forge` bot); optionally import an
    /// `mcpServers` JSON file. Idempotent.
    Seed(seed::SeedArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("botcraft: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Seed(args) => seed::run(args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("botcraft: {error:#}");
            ExitCode::FAILURE
        }
    }
}
