//! Locating test-support's server binaries (`src/bin/fake-mcp-server.rs`,
//! `src/bin/conformance-fixture.rs`) from any crate's tests.
//!
//! Cargo builds a package's binaries only for that package's own tests, so other crates get
//! the path from here: the binary is built once per test process with `cargo build` (the
//! `CARGO` that runs the tests) and its path read from Cargo's JSON messages.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use anyhow::Context;

static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
static FIXTURE: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// The path of the built `fake-mcp-server`, building it on first use.
pub fn fake_mcp_server_binary() -> anyhow::Result<PathBuf> {
    built(&BINARY, "fake-mcp-server")
}

/// The path of the built `conformance-fixture` ([`crate::conformance_fixture`] over stdio, or
/// over HTTP with `--http ADDR`), building it on first use.
pub fn conformance_fixture_binary() -> anyhow::Result<PathBuf> {
    built(&FIXTURE, "conformance-fixture")
}

/// `conformance-fixture --http fd:3 ARGS…` serving on `listener` (see
/// [`crate::loopback_listener`]), started and ready: the process and the URL of its `/mcp`
/// endpoint, as it printed it.
pub fn conformance_fixture_over_http(
    listener: std::net::TcpListener,
    args: &[&str],
) -> anyhow::Result<(crate::Served, String)> {
    let mut command = Command::new(conformance_fixture_binary()?);
    command
        .args(["--http", &format!("fd:{}", crate::HANDED_FD)])
        .args(args);
    let (served, line) = crate::Served::start_on(command, "listening on ", listener)?;
    let url = line
        .split("listening on ")
        .nth(1)
        .unwrap_or_default()
        .trim()
        .to_owned();
    Ok((served, url))
}

fn built(cell: &OnceLock<Result<PathBuf, String>>, name: &str) -> anyhow::Result<PathBuf> {
    cell.get_or_init(|| build(name).map_err(|error| format!("{error:#}")))
        .clone()
        .map_err(|error| anyhow::anyhow!(error))
}

fn build(name: &str) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "test-support",
            "--bin",
            name,
            "--message-format=json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .with_context(|| format!("run cargo build for {name}"))?;
    anyhow::ensure!(
        output.status.success(),
        "cargo build {name} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["target"]["name"] == name)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .with_context(|| format!("cargo reported no {name} executable"))
}
