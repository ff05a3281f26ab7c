//! Playwright MCP (the seed's `playwright` server) through the manager: lazy start, a
//! navigation to a page this test serves on 127.0.0.1, the page's text in the snapshot, and
//! then proof that nothing it started — node, Chromium (which leaves the group with `setsid`)
//! and Chromium's children — outlives a stop, nor the SIGKILL of the process running the
//! manager. Fails, never skips, when Chromium or the npm package is missing.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, ensure};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use mcp_lifecycle::ServerState;
use store::McpServerSpec;

use super::harness::{Fixture, args, text};
use super::programs::{
    chromium, cmdline, example_binary, marked, node, npm_file, path_with_node, survivors, tree,
};

const PAGE_TEXT: &str = "Hello from the BotCraft lifecycle test";

/// The page this test serves on 127.0.0.1; its URL.
async fn serve_page() -> anyhow::Result<String> {
    test_support::serve_page(format!(
        "<!doctype html><html><head><title>lifecycle probe</title></head>\
         <body><h1>{PAGE_TEXT}</h1></body></html>"
    ))
    .await
}

/// How the server is launched: node running the package's cli.js, or the package's npm bin
/// (`#!/usr/bin/env node`), as `npx` would.
#[derive(Debug, Clone, Copy)]
enum Launch {
    Node,
    NpmBin,
}

/// The seed's arguments, plus `--output-dir` under `marker` (Playwright MCP otherwise writes
/// its snapshot files into its working directory: the crate's).
fn playwright_args(chromium: &str, marker: &Path) -> Vec<String> {
    let output = marker.join("output").display().to_string();
    [
        "--headless",
        "--isolated",
        "--no-sandbox",
        "--executable-path",
        chromium,
        "--output-dir",
        &output,
    ]
    .map(str::to_owned)
    .to_vec()
}

fn command(launch: Launch, marker: &Path) -> anyhow::Result<(String, Vec<String>)> {
    let chromium = chromium()?;
    let cli = npm_file("@playwright/mcp/cli.js")?;
    Ok(match launch {
        Launch::Node => {
            let mut args = vec![cli.display().to_string()];
            args.extend(playwright_args(chromium, marker));
            (node()?.display().to_string(), args)
        }
        Launch::NpmBin => (
            npm_file(".bin/playwright-mcp")?.display().to_string(),
            playwright_args(chromium, marker),
        ),
    })
}

/// A temp dir given to the server as TMPDIR and HOME: Playwright's `--isolated` profile
/// (`--user-data-dir`) goes under it and every process of the tree inherits it.
fn marker_dir() -> anyhow::Result<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let marker = dir.path().canonicalize()?;
    Ok((dir, marker))
}

async fn fixture(marker: &Path) -> anyhow::Result<Fixture> {
    let path = path_with_node()?;
    let marker = marker.display().to_string();
    Fixture::with(move |settings| {
        settings.stop_grace = Duration::from_secs(5);
        settings.env.insert("PATH".into(), path);
        settings.env.insert("TMPDIR".into(), marker.clone());
        settings.env.insert("HOME".into(), marker);
    })
    .await
}

async fn navigate_snapshot_and_stop(launch: Launch) -> anyhow::Result<()> {
    let (_dir, marker) = marker_dir()?;
    let fx = fixture(&marker).await?;
    let (program, arguments) = command(launch, &marker)?;
    fx.add_spec(
        McpServerSpec::new("playwright", program)
            .args(arguments)
            .timeout(60_000)
            .init_timeout(60_000),
    )
    .await?;
    let url = serve_page().await?;
    assert_eq!(fx.state("playwright"), Some(ServerState::Stopped));

    // Lazy start on the first call.
    let navigated = fx
        .manager
        .call_tool("playwright", "browser_navigate", args(json!({"url": url})))
        .await?;
    ensure!(
        navigated.is_error != Some(true),
        "{launch:?}: navigate failed: {}",
        text(&navigated)
    );
    let snapshot = fx
        .manager
        .call_tool("playwright", "browser_snapshot", args(json!({})))
        .await?;
    assert!(
        text(&snapshot).contains(PAGE_TEXT),
        "{launch:?}: the snapshot lacks the page text: {}",
        text(&snapshot)
    );

    let pid = fx.pid("playwright").context("no pid")?;
    let processes = tree(pid);
    let profile = format!("--user-data-dir={}", marker.display());
    let browsers: Vec<String> = processes
        .iter()
        .map(|p| cmdline(p.pid))
        .filter(|c| c.contains(&profile))
        .collect();
    ensure!(
        !browsers.is_empty(),
        "{launch:?}: no Chromium with a profile under {} in the tree: {:?}",
        marker.display(),
        processes.iter().map(|p| cmdline(p.pid)).collect::<Vec<_>>()
    );

    fx.manager.stop_server("playwright").await?;
    assert_eq!(fx.state("playwright"), Some(ServerState::Stopped));
    assert_eq!(
        survivors(&processes),
        Vec::new(),
        "{launch:?}: survivors of the tree"
    );
    assert_eq!(
        marked(&marker),
        Vec::new(),
        "{launch:?}: processes still using the profile dir"
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn playwright_via_node_navigates_reads_the_page_and_leaves_nothing_after_stop()
-> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    test_skip::need!(test_skip::needs::chromium());
    navigate_snapshot_and_stop(Launch::Node).await
}

#[tokio::test]
async fn playwright_via_its_npm_bin_navigates_reads_the_page_and_leaves_nothing_after_stop()
-> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    test_skip::need!(test_skip::needs::chromium());
    navigate_snapshot_and_stop(Launch::NpmBin).await
}

/// Poll `/proc` (every 50 ms, at most `limit`) until `done` holds; whether it did.
async fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while !done() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

#[tokio::test]
async fn sigkill_of_the_process_running_the_manager_leaves_no_playwright_process()
-> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    test_skip::need!(test_skip::needs::chromium());
    let (dir, marker) = marker_dir()?;
    let (program, arguments) = command(Launch::Node, &marker)?;
    let child_binary = example_binary("manager_child")?;
    let url = serve_page().await?;
    let mut child = tokio::process::Command::new(child_binary)
        .arg(dir.path())
        .arg("browser_navigate")
        .arg(json!({"url": url}).to_string())
        .arg("--")
        .arg(program)
        .args(arguments)
        .env_clear()
        .env("PATH", path_with_node()?)
        .env("TMPDIR", &marker)
        .env("HOME", &marker)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let child_pid = child.id().context("no child pid")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
        .await
        .context("the manager process did not get ready in 120 s")??
        .context("the manager process ended before it was ready")?;
    let server: u32 = ready
        .strip_prefix("ready ")
        .context("unexpected line")?
        .parse()?;
    let processes = tree(child_pid);
    ensure!(
        processes.iter().any(|p| p.pid == server)
            && processes
                .iter()
                .any(|p| cmdline(p.pid).contains("--user-data-dir=")),
        "the tree has no server or no Chromium: {:?}",
        processes.iter().map(|p| cmdline(p.pid)).collect::<Vec<_>>()
    );

    child.start_kill()?; // SIGKILL: no handler of the manager runs
    child.wait().await?;
    // Parent-death signal kills node; Chromium exits when its pipe to node closes.
    let all_gone = eventually(Duration::from_secs(30), || {
        survivors(&processes).is_empty() && marked(&marker).is_empty()
    })
    .await;
    assert!(
        all_gone,
        "survivors of the killed manager: {:?}, using the profile dir: {:?}",
        survivors(&processes),
        marked(&marker)
    );
    Ok(())
}
