//! `mcp-bench`: whole-process benchmarks of stdio MCP servers, ours next to a
//! reference peer in the same run. Owns the scenarios (spawn → tools/list,
//! one tool call repeated) and the measurements (latency percentiles, peak RSS).

mod peer;
mod report;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use serde_json::Value;

use crate::peer::{Peer, ServerCommand};
use crate::report::Samples;

#[derive(Parser)]
#[command(about = "Whole-process MCP server benchmarks")]
struct Cli {
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Subcommand)]
enum Scenario {
    /// Spawn the server, initialize, answer tools/list, close; repeated.
    Spawn {
        #[arg(long, default_value_t = 20)]
        iterations: usize,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// One server process; call one tool repeatedly with the same arguments.
    Call {
        #[arg(long)]
        tool: String,
        /// The arguments, a JSON object.
        #[arg(long)]
        args: String,
        #[arg(long, default_value_t = 20)]
        iterations: usize,
        /// Calls made before timing starts.
        #[arg(long, default_value_t = 1)]
        warmup: usize,
        #[command(flatten)]
        server: ServerArgs,
    },
}

#[derive(clap::Args)]
struct ServerArgs {
    /// A label for the table.
    #[arg(long)]
    label: String,
    /// `NAME=VALUE` environment for the server (the environment is otherwise PATH only).
    #[arg(long = "env")]
    env: Vec<String>,
    /// The server command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

impl ServerArgs {
    fn command(&self) -> anyhow::Result<ServerCommand> {
        let mut env = vec![(
            "PATH".to_owned(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        )];
        for pair in &self.env {
            let (name, value) = pair
                .split_once('=')
                .with_context(|| format!("--env {pair}: expected NAME=VALUE"))?;
            env.push((name.to_owned(), value.to_owned()));
        }
        let (program, args) = self.command.split_first().context("empty command")?;
        Ok(ServerCommand {
            program: PathBuf::from(program),
            args: args.to_vec(),
            env,
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.scenario {
        Scenario::Spawn { iterations, server } => {
            let command = server.command()?;
            let mut samples = Samples::default();
            let mut peak_rss = 0;
            for _ in 0..iterations {
                let started = Instant::now();
                let peer = Peer::spawn(&command).await?;
                let tools = peer.list_tools().await?;
                samples.push(started.elapsed());
                if tools == 0 {
                    bail!("{}: tools/list returned no tools", server.label);
                }
                peak_rss = peak_rss.max(peer.peak_rss_kib().unwrap_or(0));
                peer.close().await;
            }
            println!(
                "{}",
                samples.row(&server.label, "spawn → tools/list", peak_rss)
            );
        }
        Scenario::Call {
            tool,
            args,
            iterations,
            warmup,
            server,
        } => {
            let arguments: Value = serde_json::from_str(&args).context("--args is not JSON")?;
            let command = server.command()?;
            let peer = Peer::spawn(&command).await?;
            let mut first: Option<String> = None;
            for _ in 0..warmup {
                let (is_error, text) = peer.call(&tool, &arguments).await?;
                if is_error {
                    bail!("{}: {tool} failed: {}", server.label, excerpt(&text));
                }
                first.get_or_insert(text);
            }
            let mut samples = Samples::default();
            for _ in 0..iterations {
                let started = Instant::now();
                let (is_error, text) = peer.call(&tool, &arguments).await?;
                samples.push(started.elapsed());
                if is_error {
                    bail!("{}: {tool} failed: {}", server.label, excerpt(&text));
                }
                first.get_or_insert(text);
            }
            let peak = peer.peak_rss_kib().unwrap_or(0);
            peer.close().await;
            println!("{}", samples.row(&server.label, &tool, peak));
            if let Some(text) = first {
                eprintln!(
                    "{}: {tool} answered {} bytes, {} lines: {}",
                    server.label,
                    text.len(),
                    text.lines().count(),
                    excerpt(&text)
                );
            }
        }
    }
    Ok(())
}

fn excerpt(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let cut: String = line.chars().take(100).collect();
    cut
}
