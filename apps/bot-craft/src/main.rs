//! `botcraft`: the BotCraft binary. Thin wiring over the library crates (`http-api`,
//! `mcp-lifecycle`, `inference`, `store`); each subcommand lives in its own module.
//! `serve`, `seed` and `keys` use the database directly; `servers`, `bots`, `tools` and `chat` talk
//! to a running BotCraft through its admin API (`BOTCRAFT_URL`, `BOTCRAFT_API_KEY`).

mod bots;
mod chat;
mod config;
mod host;
mod keys;
mod mcp_stdio;
mod memory;
mod remote;
mod seed;
mod serve;
mod servers;
mod terminal;
mod tools;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::RemoteArgs;
use crate::remote::Remote;

#[derive(Debug, Parser)]
#[command(
    name = "botcraft",
    version,
    about = "BotCraft: a host for MCP servers and the chat inference that uses them"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the HTTP API (chat, health, admin); start the always-on MCP servers; seed an
    /// empty store first.
    Serve(Box<serve::ServeArgs>),
    /// Write the seed data (forge servers, Playwright, the `forge` bot); optionally import an
    /// `mcpServers` JSON file. Idempotent.
    Seed(seed::SeedArgs),
    /// API keys with roles (admin, chat, bot), in the database: create (shown once), list,
    /// revoke.
    Keys(keys::KeysArgs),
    /// MCP servers of a running BotCraft.
    Servers {
        #[command(flatten)]
        remote: RemoteArgs,
        #[command(subcommand)]
        command: servers::ServersCommand,
    },
    /// Bots and their bindings, on a running BotCraft.
    Bots {
        #[command(flatten)]
        remote: RemoteArgs,
        #[command(subcommand)]
        command: bots::BotsCommand,
    },
    /// Tools of a server or a bot; a test call.
    Tools {
        #[command(flatten)]
        remote: RemoteArgs,
        #[command(subcommand)]
        command: tools::ToolsCommand,
    },
    /// Chat with a bot: the answer streams to the terminal, tool calls shown as they run.
    Chat {
        #[command(flatten)]
        remote: RemoteArgs,
        #[command(flatten)]
        args: chat::ChatArgs,
    },
    /// A stdio MCP server for one bot that starts with nothing: tools/list from a manifest,
    /// tools/call forwarded to BOTCRAFT_URL's /mcp with BOTCRAFT_API_KEY (a bot key); or,
    /// with --local, the bot's servers run in this process (no HTTP hop).
    McpStdio(Box<mcp_stdio::McpStdioCommand>),
}

/// The runtime's worker threads for `serve`: `BOTCRAFT_WORKER_THREADS`, else half the cores
/// (at least one). BotCraft's work per request is small and mostly waiting; the MCP servers
/// it runs and the clients it answers need the other cores, and every extra worker adds
/// wake-ups across threads to each relayed message (on 2 cores, one worker gave /mcp 30%
/// lower latency and 40% less CPU per call than two; docs/benchmarks.md).
fn worker_threads() -> usize {
    if let Some(n) = std::env::var("BOTCRAFT_WORKER_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return n;
    }
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

fn main() -> ExitCode {
    // Not dumpable: a process of the same user (a command a tool server runs, say) cannot
    // read this process's /proc/PID/environ or memory, nor attach to it. Children are
    // dumpable again after their exec.
    if let Err(error) = nix::sys::prctl::set_dumpable(false) {
        eprintln!("botcraft: cannot mark the process non-dumpable: {error}");
    }
    let cli = Cli::parse();
    // Running MCP servers as another user needs CAP_SETUID, CAP_SETGID and CAP_KILL, which the
    // image gives the binary as permitted (not effective) file capabilities. Make them
    // effective now, before any thread exists: every runtime thread inherits them.
    if let Command::Serve(args) = &cli.command
        && args.runs_tools_as_another_user()
        && let Err(error) = mcp_lifecycle::run_as::raise_effective_capabilities()
    {
        eprintln!("botcraft: cannot raise the permitted capabilities: {error}");
    }
    // `mcp-stdio` relays one client's messages: on one thread, each hop between its tasks
    // (stdin, the MCP service, the manager's client, the server's pipes) is a queue push,
    // not a wake-up of another thread. `serve` has many clients: all cores.
    let runtime = if matches!(cli.command, Command::McpStdio(_)) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(worker_threads())
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("botcraft: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve::run(*args).await,
            Command::Seed(args) => seed::run(args).await,
            Command::Keys(args) => keys::run(args).await,
            Command::Servers { remote, command } => {
                servers::run(&Remote::new(&remote), command).await
            }
            Command::Bots { remote, command } => bots::run(&Remote::new(&remote), command).await,
            Command::Tools { remote, command } => tools::run(&Remote::new(&remote), command).await,
            Command::Chat { remote, args } => chat::run(&Remote::new(&remote), args).await,
            Command::McpStdio(args) => mcp_stdio::run(*args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // An error can carry a server's own text (its JSON-RPC message, its stderr).
            eprintln!(
                "botcraft: {}",
                terminal::printable(&format!("{error:#}"), true)
            );
            ExitCode::FAILURE
        }
    }
}
