//! Shared fixtures: temp workspace and repository roots, a server spawned on
//! them with a cleared environment, and helpers to call tools.

mod edit;
mod empty_trash;
mod listing;
mod manifest;
mod paths;
mod read;
mod search;
mod startup;
mod trash;
mod write;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;
use test_support::{CallOutcome, StdioServer};

pub const BIN: &str = env!("CARGO_BIN_EXE_forge-filesystem");

/// A server over a fresh workspace root and a fresh repository root.
pub struct Fixture {
    pub server: StdioServer,
    _workspace: TempDir,
    _repo: TempDir,
    /// Real path of WORKSPACE_ROOT.
    pub ws: PathBuf,
    /// Real path of REPO_ROOT.
    pub repo: PathBuf,
}

impl Fixture {
    pub async fn start() -> Self {
        let workspace = tempfile::tempdir().expect("workspace tempdir");
        let repo = tempfile::tempdir().expect("repo tempdir");
        let ws = fs::canonicalize(workspace.path()).expect("realpath ws");
        let repo_path = fs::canonicalize(repo.path()).expect("realpath repo");
        let mut env = StdioServer::base_env();
        env.insert("WORKSPACE_ROOT".into(), ws.display().to_string());
        env.insert("REPO_ROOT".into(), repo_path.display().to_string());
        let server = spawn(&env).await;
        Self {
            server,
            _workspace: workspace,
            _repo: repo,
            ws,
            repo: repo_path,
        }
    }

    /// A server whose repository is its workspace root, with `FORGE_FS_PROTECTED` set to
    /// `protected`.
    pub async fn start_protected(protected: &str) -> Self {
        let workspace = tempfile::tempdir().expect("workspace tempdir");
        let unused = tempfile::tempdir().expect("repo tempdir");
        let ws = fs::canonicalize(workspace.path()).expect("realpath ws");
        let mut env = StdioServer::base_env();
        env.insert("WORKSPACE_ROOT".into(), ws.display().to_string());
        env.insert("REPO_ROOT".into(), ws.display().to_string());
        env.insert("FORGE_FS_PROTECTED".into(), protected.to_owned());
        let server = spawn(&env).await;
        Self {
            server,
            _workspace: workspace,
            _repo: unused,
            repo: ws.clone(),
            ws,
        }
    }

    pub async fn call(&self, tool: &str, arguments: Value) -> CallOutcome {
        self.server
            .call(tool, arguments)
            .await
            .unwrap_or_else(|error| panic!("{tool} call failed at the protocol level: {error:#}"))
    }

    /// Call and expect success; the text.
    pub async fn ok(&self, tool: &str, arguments: Value) -> String {
        let outcome = self.call(tool, arguments.clone()).await;
        assert!(
            !outcome.is_error,
            "{tool} {arguments} failed: {}",
            outcome.text
        );
        outcome.text
    }

    /// Call and expect an error result; the text.
    pub async fn err(&self, tool: &str, arguments: Value) -> String {
        let outcome = self.call(tool, arguments.clone()).await;
        assert!(
            outcome.is_error,
            "{tool} {arguments} should fail but said: {}",
            outcome.text
        );
        outcome.text
    }

    /// Replace the roots' real paths with `[WS]` / `[REPO]`.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.ws.display().to_string(), "[WS]")
            .replace(&self.repo.display().to_string(), "[REPO]")
    }

    pub fn ws_path(&self, relative: &str) -> PathBuf {
        self.ws.join(relative)
    }

    pub fn repo_path(&self, relative: &str) -> PathBuf {
        self.repo.join(relative)
    }
}

pub async fn spawn(env: &BTreeMap<String, String>) -> StdioServer {
    StdioServer::spawn(BIN, &[], env)
        .await
        .expect("forge-filesystem starts and completes the handshake")
}

/// Write `content` at `root/relative`, creating parent folders.
pub fn put(root: &Path, relative: &str, content: &str) {
    let path = root.join(relative);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("mkdir -p");
    }
    fs::write(&path, content).expect("write fixture file");
}

/// Every path under `root` (relative, sorted), folders marked with `/`.
pub fn tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let entry = entry.expect("entry");
            let path = entry.path();
            let relative = path
                .strip_prefix(root)
                .expect("under root")
                .display()
                .to_string();
            let kind = entry.file_type().expect("file type");
            if kind.is_dir() {
                out.push(format!("{relative}/"));
                stack.push(path);
            } else {
                out.push(relative);
            }
        }
    }
    out.sort();
    out
}

/// The stderr line containing `needle`. The server writes it before it
/// answers the call, so it is already in the pipe; this only lets the
/// reader task catch up, without sleeping.
pub async fn stderr_line(server: &StdioServer, needle: &str) -> Option<String> {
    for _ in 0..100_000 {
        if let Some(line) = server
            .stderr_lines()
            .into_iter()
            .find(|line| line.contains(needle))
        {
            return Some(line);
        }
        tokio::task::yield_now().await;
    }
    None
}
