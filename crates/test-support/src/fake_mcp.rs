//! Locating the fake MCP server binary (`src/bin/fake-mcp-server.rs`) from any crate's tests.
//!
//! Cargo builds a package's binaries only for that package's own tests, so other crates get
//! the path from here: the binary is built once per test process with `cargo build` (the
//! `CARGO` that runs the tests) and its path read from Cargo's JSON messages.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use anyhow::Context;

static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// The path of the built `fake-mcp-server`, building it on first use.
pub fn fake_mcp_server_binary() -> anyhow::Result<PathBuf> {
    BINARY
        .get_or_init(|| build().map_err(|error| format!("{error:#}")))
        .clone()
        .map_err(|error| anyhow::anyhow!(error))
}

fn build() -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "test-support",
            "--bin",
            "fake-mcp-server",
            "--message-format=json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .context("run cargo build for fake-mcp-server")?;
    anyhow::ensure!(
        output.status.success(),
        "cargo build fake-mcp-server failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["target"]["name"] == "fake-mcp-server")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .context("cargo reported no fake-mcp-server executable")
}
