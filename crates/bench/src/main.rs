//! `mcp-bench`: whole-process benchmarks of MCP servers, ours next to a
//! reference peer in the same run. Owns the scenarios (spawn → tools/list,
//! one tool call repeated, `load`: K calls in flight over a raw JSON-RPC client)
//! and the measurements (latency percentiles, throughput, CPU and peak RSS of the
//! measured process trees). A target is a stdio server command, or an HTTP endpoint
//! (`--url`: streamable HTTP, or HTTP+SSE with `--legacy-sse`).

mod legacy_sse;
mod load;
mod peer;
mod report;
mod usage;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use serde_json::Value;

use crate::peer::{HttpEndpoint, Peer, ServerCommand};
use crate::report::Samples;

#[derive(Parser)]
#[command(about = "Whole-process MCP server benchmarks")]
struct Cli {
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Subcommand)]
enum Scenario {
    /// Spawn the server (or connect to `--url`), initialize, answer tools/list, close; repeated.
    Spawn {
        #[arg(long, default_value_t = 20)]
        iterations: usize,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// One server process (or one HTTP session); call one tool repeatedly with the same arguments.
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
    /// K calls in flight over a raw JSON-RPC client, for each K; one JSON line per K with
    /// latency (p50, p99), throughput, CPU per call and peak RSS of the measured trees.
    Load {
        #[command(flatten)]
        load: LoadArgs,
        #[command(flatten)]
        server: ServerArgs,
    },
}

#[derive(clap::Args)]
struct LoadArgs {
    /// The tool called; several (comma-separated) are called in turn.
    #[arg(long, value_delimiter = ',', required = true)]
    tool: Vec<String>,
    /// HTTP: sessions opened; the workers of a phase share them in turn.
    #[arg(long, default_value_t = 1)]
    sessions: usize,
    /// The arguments, a JSON object.
    #[arg(long)]
    args: String,
    /// Timed calls at each depth.
    #[arg(long, default_value_t = 2000)]
    calls: usize,
    #[arg(long, default_value_t = 200)]
    warmup: usize,
    /// Calls in flight, one phase each (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    depth: Vec<usize>,
    /// A process whose tree's CPU and memory count too (the server behind `--url`, or the
    /// BotCraft a stdio bridge forwards to); repeatable.
    #[arg(long = "tree-pid")]
    tree_pids: Vec<u32>,
}

#[derive(clap::Args)]
struct ServerArgs {
    /// A label for the table.
    #[arg(long)]
    label: String,
    /// `NAME=VALUE` environment for the server (the environment is otherwise PATH only).
    #[arg(long = "env", conflicts_with = "url")]
    env: Vec<String>,
    /// A streamable HTTP MCP endpoint instead of a server command.
    #[arg(long)]
    url: Option<String>,
    /// `Name: value` sent with every HTTP request (`Authorization: Bearer KEY` included).
    #[arg(long = "header", requires = "url")]
    headers: Vec<String>,
    /// `--url` speaks the HTTP+SSE transport of MCP 2024-11-05 (GET opens the event
    /// stream, POSTs go to the endpoint it names), not streamable HTTP.
    #[arg(long, requires = "url")]
    legacy_sse: bool,
    /// The pid of the process serving `--url`, for the peak RSS column (else 0).
    #[arg(long, requires = "url")]
    rss_pid: Option<u32>,
    /// The server command and its arguments.
    #[arg(last = true, required_unless_present = "url", conflicts_with = "url")]
    command: Vec<String>,
}

/// What a scenario measures.
enum Target {
    Stdio(ServerCommand),
    Http(HttpEndpoint),
}

impl Target {
    async fn open(&self) -> anyhow::Result<Peer> {
        match self {
            Target::Stdio(command) => Peer::spawn(command).await,
            Target::Http(endpoint) => Peer::connect(endpoint).await,
        }
    }
}

impl ServerArgs {
    fn target(&self) -> anyhow::Result<Target> {
        let Some(url) = &self.url else {
            return self.command().map(Target::Stdio);
        };
        let mut headers = Vec::new();
        for header in &self.headers {
            let (name, value) = header
                .split_once(':')
                .with_context(|| format!("--header {header}: expected `Name: value`"))?;
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
        Ok(Target::Http(HttpEndpoint {
            url: url.clone(),
            headers,
            rss_pid: self.rss_pid,
            legacy_sse: self.legacy_sse,
        }))
    }

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
            let target = server.target()?;
            let what = match target {
                Target::Stdio(_) => "spawn → tools/list",
                Target::Http(_) => "connect → tools/list",
            };
            let mut samples = Samples::default();
            let mut peak_rss = 0;
            for _ in 0..iterations {
                let started = Instant::now();
                let peer = target.open().await?;
                let tools = peer.list_tools().await?;
                samples.push(started.elapsed());
                if tools == 0 {
                    bail!("{}: tools/list returned no tools", server.label);
                }
                peak_rss = peak_rss.max(peer.peak_rss_kib().unwrap_or(0));
                peer.close().await;
            }
            println!("{}", samples.row(&server.label, what, peak_rss));
        }
        Scenario::Call {
            tool,
            args,
            iterations,
            warmup,
            server,
        } => {
            let arguments: Value = serde_json::from_str(&args).context("--args is not JSON")?;
            let peer = server.target()?.open().await?;
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
        Scenario::Load { load, server } => {
            let arguments: Value =
                serde_json::from_str(&load.args).context("--args is not JSON")?;
            let wire = match server.target()? {
                Target::Stdio(command) => load::Wire::Stdio(command),
                Target::Http(endpoint) if endpoint.legacy_sse => load::Wire::LegacySse {
                    url: endpoint.url,
                    headers: endpoint.headers,
                },
                Target::Http(endpoint) => load::Wire::Http {
                    url: endpoint.url,
                    headers: endpoint.headers,
                },
            };
            let mut tree_pids = load.tree_pids.clone();
            tree_pids.extend(server.rss_pid);
            let spec = load::LoadSpec {
                label: server.label.clone(),
                tools: load.tool,
                sessions: load.sessions,
                arguments,
                calls: load.calls,
                warmup: load.warmup,
                depths: load.depth,
                tree_pids,
            };
            let (phases, rss) = load::run(&wire, &spec).await?;
            for phase in phases {
                let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
                let calls = phase.samples.len().max(1) as f64;
                println!(
                    "{}",
                    serde_json::json!({
                        "label": spec.label,
                        "depth": phase.depth,
                        "calls": phase.samples.len(),
                        "p50_us": us(phase.samples.quantile(0.5)),
                        "p99_us": us(phase.samples.quantile(0.99)),
                        "per_second": calls / phase.elapsed.as_secs_f64(),
                        "cpu_us": phase.cpu_micros,
                        "cpu_us_per_call": phase.cpu_micros as f64 / calls,
                        "peak_rss_kib": rss,
                    })
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
