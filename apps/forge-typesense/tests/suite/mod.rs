//! Shared helpers: the binary, environments, and waiting for stderr lines.

mod fake_typesense;
mod index;
mod real_typesense;
mod search;
mod startup;
mod upstream;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use test_support::StdioServer;

pub const BIN: &str = env!("CARGO_BIN_EXE_forge-typesense");

pub fn fixture_repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/repo")
}

/// PATH plus the given variables.
pub fn env_with(vars: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut env = StdioServer::base_env();
    for (name, value) in vars {
        env.insert((*name).to_owned(), (*value).to_owned());
    }
    env
}

pub async fn server_with(vars: &[(&str, &str)]) -> StdioServer {
    StdioServer::spawn(BIN, &[], &env_with(vars))
        .await
        .expect("spawn forge-typesense")
}

/// Wait (bounded) until the server has written a stderr line containing
/// `needle`, and return that line.
pub async fn stderr_line_with(server: &StdioServer, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(line) = server
            .stderr_lines()
            .into_iter()
            .find(|line| line.contains(needle))
        {
            return line;
        }
        assert!(
            Instant::now() < deadline,
            "no stderr line with {needle:?}; got {:#?}",
            server.stderr_lines()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Run `forge-typesense index ARGS` with exactly `vars` (plus PATH).
pub fn run_index(args: &[&str], vars: &[(&str, &str)]) -> std::process::Output {
    std::process::Command::new(BIN)
        .arg("index")
        .args(args)
        .env_clear()
        .envs(env_with(vars))
        .output()
        .expect("run forge-typesense index")
}
