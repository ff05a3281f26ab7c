//! `McpServerManager` benchmarks, whole-process, in one run (numbers for docs/benchmarks.md):
//!
//! 1. `tools/call` latency through the manager vs a direct rmcp client to the same server
//!    (forge-bash `run` `echo hi`; the fake server's `echo`), interleaved in rounds;
//! 2. 1,000 concurrent calls spread over 10 servers through one manager;
//! 3. cold start to tools ready of the four forge servers, through the manager and direct;
//! 4. the RSS of this process with 20 servers configured (each started once, then stopped
//!    by the idle sweep) and with 5 of them running;
//! 5. the cost of one orphan sweep (`reaper::sweep`, run every second by `botcraft serve`)
//!    with no server and with 20 recorded servers below this process, and the machine's
//!    process table as it is and with 2,000 more processes;
//! 6. spawn → tools/list of each forge server, unconfined and sandboxed (Landlock).
//!
//! usage: `cargo bench -p mcp-lifecycle --bench manager -- [--bin-dir target/release]
//! [--only memory|latency|concurrent|cold-start|sweep|sandbox]`
//! (build first: `cargo build --release -p forge-bash -p forge-filesystem -p forge-discovery
//! -p forge-typesense -p test-support`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use mcp_lifecycle::{ManagerSettings, McpServerManager, ServerConfig};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{RoleClient, RunningService};
use serde_json::json;

const FORGE: [&str; 4] = [
    "forge-bash",
    "forge-filesystem",
    "forge-discovery",
    "forge-typesense",
];

fn env() -> BTreeMap<String, String> {
    ["PATH", "HOME", "LANG"]
        .iter()
        .filter_map(|k| Some(((*k).to_owned(), std::env::var(k).ok()?)))
        .collect()
}

fn config(name: &str, binary: &Path) -> ServerConfig {
    ServerConfig {
        id: String::new(),
        name: name.to_owned(),
        command: binary.display().to_string(),
        args: Vec::new(),
        env: BTreeMap::new(),
        remote: None,
        call_timeout: Duration::from_secs(60),
        init_timeout: Duration::from_secs(60),
        always_on: false,
        idle_timeout: Duration::from_secs(60),
        sandbox: sandbox::SandboxPolicy::default(),
        version: 0,
    }
}

async fn manager(dir: &Path) -> anyhow::Result<Arc<McpServerManager>> {
    let store = store::Store::connect(&store::sqlite_url(&dir.join("bench.db"))).await?;
    let settings = ManagerSettings {
        env: env(),
        health_interval: Duration::from_secs(3600),
        ..ManagerSettings::default()
    };
    Ok(McpServerManager::new(
        server_records::records(store),
        settings,
    ))
}

/// A direct rmcp client over a spawned child, as a baseline.
struct Direct {
    client: RunningService<RoleClient, ClientConfig>,
    _child: tokio::process::Child,
}

impl Direct {
    async fn start(binary: &Path) -> anyhow::Result<Self> {
        let mut child = tokio::process::Command::new(binary)
            .env_clear()
            .envs(env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawn {}", binary.display()))?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = child.stdout.take().context("stdout")?;
        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("botcraft-bench", "0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let client = config.serve((stdout, stdin)).await?;
        Ok(Self {
            client,
            _child: child,
        })
    }

    async fn call(&self, tool: &str, args: &serde_json::Value) -> anyhow::Result<()> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(object) = args.as_object() {
            params = params.with_arguments(object.clone());
        }
        let result = self.client.call_tool(params).await?;
        ensure!(result.is_error != Some(true), "{tool} failed: {result:?}");
        Ok(())
    }

    async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

fn quantile(samples: &[Duration], q: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn latency(
    dir: &Path,
    label: &str,
    binary: &Path,
    tool: &str,
    args: serde_json::Value,
) -> anyhow::Result<()> {
    const ROUNDS: usize = 10;
    const PER_ROUND: usize = 100;
    let manager = manager(dir).await?;
    manager.add_server(config(label, binary));
    let direct = Direct::start(binary).await?;
    let arguments = args.as_object().cloned();
    for _ in 0..20 {
        direct.call(tool, &args).await?;
        manager.call_tool(label, tool, arguments.clone()).await?;
    }
    let (mut through, mut straight) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        for _ in 0..PER_ROUND {
            let started = Instant::now();
            direct.call(tool, &args).await?;
            straight.push(started.elapsed());
        }
        for _ in 0..PER_ROUND {
            let started = Instant::now();
            let result = manager.call_tool(label, tool, arguments.clone()).await?;
            through.push(started.elapsed());
            ensure!(result.is_error != Some(true), "{label}: {tool} failed");
        }
    }
    let p50 = (quantile(&straight, 0.5), quantile(&through, 0.5));
    let p99 = (quantile(&straight, 0.99), quantile(&through, 0.99));
    let overhead = (p50.1.as_secs_f64() / p50.0.as_secs_f64() - 1.0) * 100.0;
    println!(
        "| {label} `{tool}` | {} | direct rmcp client | {} | {} | |",
        straight.len(),
        ms(p50.0),
        ms(p99.0)
    );
    println!(
        "| {label} `{tool}` | {} | through McpServerManager | {} | {} | {overhead:+.1}% |",
        through.len(),
        ms(p50.1),
        ms(p99.1)
    );
    direct.close().await;
    manager.stop_all().await;
    Ok(())
}

async fn concurrent(dir: &Path, fake: &Path) -> anyhow::Result<()> {
    let manager = manager(dir).await?;
    let names: Vec<String> = (0..10).map(|i| format!("fake-{i}")).collect();
    for name in &names {
        manager.add_server(config(name, fake));
        manager.start_server(name).await?;
    }
    for round in 0..3 {
        let started = Instant::now();
        let calls = (0..1000).map(|i| {
            let manager = manager.clone();
            let name = names[i % names.len()].clone();
            tokio::spawn(async move {
                manager
                    .call_tool(
                        &name,
                        "echo",
                        json!({"text": format!("call {i}")}).as_object().cloned(),
                    )
                    .await
            })
        });
        let results = futures::future::join_all(calls).await;
        let elapsed = started.elapsed();
        let errors = results
            .iter()
            .filter(|r| !matches!(r, Ok(Ok(result)) if result.is_error != Some(true)))
            .count();
        println!(
            "| round {} | 1000 | 10 | {} | {:.0} | {errors} |",
            round + 1,
            ms(elapsed),
            1000.0 / elapsed.as_secs_f64()
        );
    }
    manager.stop_all().await;
    Ok(())
}

async fn cold_start(dir: &Path, bin_dir: &Path) -> anyhow::Result<()> {
    const RUNS: usize = 10;
    let manager = manager(dir).await?;
    for name in FORGE {
        let binary = bin_dir.join(name);
        manager.add_server(config(name, &binary));
        let (mut through, mut straight) = (Vec::new(), Vec::new());
        let mut tools = 0;
        for _ in 0..RUNS {
            let started = Instant::now();
            tools = manager.get_tools(name).await?.len();
            through.push(started.elapsed());
            manager.stop_server(name).await?;
            let started = Instant::now();
            let direct = Direct::start(&binary).await?;
            let listed = direct.client.list_all_tools().await?.len();
            straight.push(started.elapsed());
            ensure!(listed == tools, "{name}: {listed} vs {tools} tools");
            direct.close().await;
        }
        println!(
            "| {name} | {tools} | {} | {} | {} | {} |",
            ms(quantile(&straight, 0.5)),
            ms(quantile(&through, 0.5)),
            ms(quantile(&straight, 0.9)),
            ms(quantile(&through, 0.9)),
        );
    }
    manager.stop_all().await;
    Ok(())
}

/// Spawn → initialize → tools/list of each forge server, unconfined and sandboxed (the policy
/// `botcraft serve` applies: Landlock ruleset built, private folder made by the child),
/// interleaved run by run so both sides see the same machine.
async fn sandbox_cost(dir: &Path, bin_dir: &Path) -> anyhow::Result<()> {
    const RUNS: usize = 20;
    let workspace = dir.join("sandbox-workspace");
    let data = dir.join("sandbox-data");
    std::fs::create_dir_all(&workspace)?;
    std::fs::create_dir_all(&data)?;
    let tmp_root = mcp_lifecycle::ToolTmpRoot::create()?;
    let availability = sandbox::availability();
    ensure!(
        availability != sandbox::Availability::Unavailable,
        "this kernel has no Landlock: nothing to measure"
    );
    let plain = manager(dir).await?;
    let store = store::Store::connect(&store::sqlite_url(&dir.join("bench-sandbox.db"))).await?;
    let confined = McpServerManager::new(
        server_records::records(store),
        ManagerSettings {
            env: env(),
            health_interval: Duration::from_secs(3600),
            sandbox: Some(mcp_lifecycle::SandboxSettings {
                workspace: Some(workspace.clone()),
                forbidden: vec![data.clone()],
                availability,
                tmp_root: tmp_root.path().to_path_buf(),
            }),
            ..ManagerSettings::default()
        },
    );
    for name in FORGE {
        let binary = bin_dir.join(name);
        plain.add_server(config(name, &binary));
        confined.add_server(config(name, &binary));
        let (mut open, mut boxed) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            let started = Instant::now();
            let tools = plain.get_tools(name).await?.len();
            open.push(started.elapsed());
            plain.stop_server(name).await?;
            let started = Instant::now();
            let sandboxed = confined.get_tools(name).await?.len();
            boxed.push(started.elapsed());
            confined.stop_server(name).await?;
            ensure!(sandboxed == tools, "{name}: {sandboxed} vs {tools} tools");
        }
        let (p50_open, p50_boxed) = (quantile(&open, 0.5), quantile(&boxed, 0.5));
        println!(
            "| {name} | {} | {} | {:.2} | {} | {} |",
            ms(p50_open),
            ms(p50_boxed),
            p50_boxed.as_secs_f64() / p50_open.as_secs_f64().max(1e-9),
            ms(quantile(&open, 0.9)),
            ms(quantile(&boxed, 0.9)),
        );
    }
    plain.stop_all().await;
    confined.stop_all().await;
    Ok(())
}

async fn memory(dir: &Path, fake: &Path) -> anyhow::Result<()> {
    let me = std::process::id();
    let row = |state: &str, kib: u64, children: &str| {
        println!("| {state} | {:.1} | {children} |", kib as f64 / 1024.0);
    };
    row(
        "runtime only, before the store and the manager",
        rss_kib(me),
        "",
    );
    let manager = manager(dir).await?;
    let names: Vec<String> = (0..20).map(|i| format!("idle-{i}")).collect();
    for name in &names {
        let mut config = config(name, fake);
        config.idle_timeout = Duration::from_millis(1);
        manager.add_server(config);
    }
    row(
        "store + manager, 20 servers configured, never started",
        rss_kib(me),
        "",
    );
    for name in &names {
        manager.get_tools(name).await?;
    }
    let stopped = manager
        .stop_idle_servers_at(tokio::time::Instant::now() + Duration::from_secs(1))
        .await;
    ensure!(stopped.len() == 20, "{} of 20 idle-stopped", stopped.len());
    row(
        "20 servers, each started once then idle-stopped (tool lists cached)",
        rss_kib(me),
        "",
    );
    for name in names.iter().take(5) {
        manager.start_server(name).await?;
    }
    let children: u64 = manager
        .get_all_statuses()
        .iter()
        .filter_map(|s| s.pid)
        .map(rss_kib)
        .sum();
    row(
        "5 of them running again",
        rss_kib(me),
        &format!("{:.1} (5 fake servers)", children as f64 / 1024.0),
    );
    manager.stop_all().await;
    Ok(())
}

/// `extra` sleeping processes that are not ours (re-parented away once their shell exits),
/// in one process group, killed with it when dropped (and gone within a minute should the
/// bench itself be killed).
struct Crowd(nix::unistd::Pid);

impl Crowd {
    fn spawn(extra: usize) -> anyhow::Result<Self> {
        use std::os::unix::process::CommandExt;
        let mut shell = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(
                "i=0; while [ $i -lt {extra} ]; do sleep 60 & i=$((i+1)); done"
            ))
            .process_group(0)
            .spawn()?;
        let pgid = nix::unistd::Pid::from_raw(i32::try_from(shell.id())?);
        shell.wait()?;
        Ok(Self(pgid))
    }
}

impl Drop for Crowd {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(self.0, nix::sys::signal::Signal::SIGKILL);
    }
}

/// The time of one orphan sweep, with `servers` recorded server processes below this one
/// (each a shell with one child) and a process table of the machine's size plus `extra`.
fn sweep_cost(dir: &Path) -> anyhow::Result<()> {
    let registry = mcp_lifecycle::hygiene::PidRegistry::new(dir.join("sweep.pids"));
    for (servers, extra) in [(0, 0), (0, 2_000), (20, 0), (20, 2_000)] {
        let _crowd = (extra > 0).then(|| Crowd::spawn(extra)).transpose()?;
        let mut children = Vec::new();
        for _ in 0..servers {
            let child = std::process::Command::new("/bin/sh")
                .args(["-c", "sleep 600 & wait"])
                .spawn()?;
            if let Some(process) = proc_tree::identify(child.id()) {
                registry.record(process);
            }
            children.push(child);
        }
        let table = proc_tree::process_table().len();
        let mut times: Vec<Duration> = (0..100)
            .map(|_| {
                let started = Instant::now();
                let swept = mcp_lifecycle::reaper::sweep(&registry);
                assert!(swept.killed.is_empty(), "the bench has no orphans");
                started.elapsed()
            })
            .collect();
        let tree = proc_tree::descendants(std::process::id()).len();
        for mut child in children {
            for below in proc_tree::descendants(child.id()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(i32::try_from(below.pid)?),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            child.kill()?;
            child.wait()?;
            if let Some(process) = proc_tree::identify(child.id()) {
                registry.forget(process);
            }
        }
        registry.reap();
        times.sort_unstable();
        let p50 = times[times.len() / 2];
        let p99 = times[times.len() * 99 / 100];
        println!(
            "| {tree} | {table} | {:.3} | {:.3} | {:.3} % |",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            p50.as_secs_f64() / mcp_lifecycle::reaper::SWEEP_INTERVAL.as_secs_f64() * 100.0,
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut bin_dir = PathBuf::from("target/release");
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bin-dir" => {
                bin_dir = PathBuf::from(args.next().context("--bin-dir needs a value")?);
            }
            "--only" => only = Some(args.next().context("--only needs a section")?),
            _ => {} // cargo bench passes --bench
        }
    }
    let run = |section: &str| only.as_deref().is_none_or(|o| o == section);
    if bin_dir.is_relative() {
        // cargo bench runs from the crate dir; paths are given from the repo root.
        bin_dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(bin_dir);
    }
    let fake = bin_dir.join("fake-mcp-server");
    let needs_servers = only.as_deref() != Some("sweep");
    for binary in FORGE.iter().map(|n| bin_dir.join(n)).chain([fake.clone()]) {
        ensure!(
            !needs_servers || binary.exists(),
            "{} is missing: build it with --release",
            binary.display()
        );
    }
    let dir = tempfile::tempdir()?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "machine: {} cores, load average at start {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );

    if run("memory") {
        // First, in a fresh process: RSS never shrinks back after the other sections.
        println!("\n### memory (VmRSS of the bench process; children apart)\n");
        println!("| state | manager process RSS MiB | server processes RSS MiB |");
        println!("|---|---|---|");
        memory(dir.path(), &fake).await?;
    }
    if run("latency") {
        println!("\n### tools/call latency (10 rounds × 100 calls each side, interleaved)\n");
        println!("| server tool | n | path | p50 ms | p99 ms | p50 overhead |");
        println!("|---|---|---|---|---|---|");
        let echo = json!({"text": "hi"});
        latency(dir.path(), "fake-mcp-server", &fake, "echo", echo).await?;
        let bash = bin_dir.join("forge-bash");
        let run_echo = json!({"command": "echo hi"});
        latency(dir.path(), "forge-bash", &bash, "run", run_echo).await?;
    }
    if run("concurrent") {
        println!("\n### 1,000 concurrent calls over 10 servers (fake-mcp-server `echo`)\n");
        println!("| run | calls | servers | wall ms | calls/s | errors |");
        println!("|---|---|---|---|---|---|");
        concurrent(dir.path(), &fake).await?;
    }
    if run("sweep") {
        println!("\n### orphan sweep (reaper::sweep; 100 sweeps per table size)\n");
        println!(
            "| processes below BotCraft | processes in /proc | p50 ms | p99 ms | p50 per sweep interval (1 s) |"
        );
        println!("|---|---|---|---|---|");
        sweep_cost(dir.path())?;
    }
    if run("cold-start") {
        println!("\n### cold start to tools ready (spawn → initialize → tools/list; 10 runs)\n");
        println!(
            "| server | tools | p50 ms direct | p50 ms manager | p90 ms direct | p90 ms manager |"
        );
        println!("|---|---|---|---|---|---|");
        cold_start(dir.path(), &bin_dir).await?;
    }
    if run("sandbox") {
        println!(
            "\n### the sandbox's cost: spawn → tools/list, unconfined vs sandboxed (20 runs each, interleaved)\n"
        );
        println!(
            "| server | p50 ms unconfined | p50 ms sandboxed | ratio p50 | p90 ms unconfined | p90 ms sandboxed |"
        );
        println!("|---|---|---|---|---|---|");
        sandbox_cost(dir.path(), &bin_dir).await?;
    }
    Ok(())
}
