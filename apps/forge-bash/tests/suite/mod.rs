//! Shared helpers: a server under test with its own log and work
//! directories, a raw JSON-RPC driver for protocol-level tests, redaction
//! for snapshots, and bounded waits on conditions.

mod audit;
mod concurrency;
mod guard;
mod limits;
mod output;
mod shutdown;
mod startup;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;
use test_support::{CallOutcome, StdioServer};

pub const BIN: &str = env!("CARGO_BIN_EXE_forge-bash");

/// How long a bounded wait waits before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A forge-bash under test, with a temporary log dir (not created: the
/// server creates it on first use) and work dir (its cwd).
pub struct Harness {
    pub server: StdioServer,
    pub logs: PathBuf,
    pub work: PathBuf,
    _tmp: TempDir,
}

/// The environment a harness server gets: PATH plus the forge-bash
/// settings pointing into `tmp`, then `vars`.
pub fn harness_env(tmp: &Path, vars: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut env = StdioServer::base_env();
    let set = |env: &mut BTreeMap<String, String>, k: &str, v: &Path| {
        env.insert(k.to_owned(), v.display().to_string());
    };
    set(&mut env, "FORGE_BASH_LOG_DIR", &tmp.join("logs"));
    set(&mut env, "FORGE_BASH_CWD", &tmp.join("work"));
    set(&mut env, "FORGE_BASH_ENV_FILE", &tmp.join("no-environ"));
    for (k, v) in vars {
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    env
}

impl Harness {
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    pub async fn start_with(vars: &[(&str, &str)]) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        Self::start_in(tmp, vars).await
    }

    /// Start with a tempdir the test prepared (e.g. an env file in it).
    pub async fn start_in(tmp: TempDir, vars: &[(&str, &str)]) -> Self {
        let work = tmp.path().join("work");
        std::fs::create_dir_all(&work).expect("work dir");
        let env = harness_env(tmp.path(), vars);
        let server = StdioServer::spawn(BIN, &[], &env)
            .await
            .expect("spawn forge-bash");
        Self {
            server,
            logs: tmp.path().join("logs"),
            work,
            _tmp: tmp,
        }
    }

    pub async fn run(&self, command: &str) -> CallOutcome {
        self.server
            .call("run", json!({ "command": command }))
            .await
            .expect("tools/call")
    }

    /// Every audit line so far, split into its fields.
    pub fn audit_records(&self) -> Vec<Vec<String>> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.logs)
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .filter(|path| {
                        path.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("audit-") && n.ends_with(".tsv"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
            .iter()
            .flat_map(|path| {
                let text = std::fs::read_to_string(path).expect("read audit log");
                assert!(text.ends_with('\n'), "audit log ends with a whole line");
                text.lines()
                    .map(|line| line.split('\t').map(str::to_owned).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Wait for the server to have written a stderr line containing `needle`.
    pub fn wait_for_stderr(&self, needle: &str) -> String {
        let found = wait_until(|| {
            self.server
                .stderr_lines()
                .into_iter()
                .find(|line| line.contains(needle))
        });
        found.unwrap_or_else(|| {
            panic!(
                "no stderr line with {needle:?}; stderr: {:#?}",
                self.server.stderr_lines()
            )
        })
    }

    /// Replace what differs between runs: durations and the log dir.
    pub fn redact(&self, text: &str) -> String {
        redact_ms(&text.replace(&self.logs.display().to_string(), "[LOGS]"))
    }
}

/// `| 123ms]` → `| [ms]]`, wherever it occurs.
pub fn redact_ms(text: &str) -> String {
    let pattern = regex::Regex::new(r"\| \d+ms\]").expect("regex");
    pattern.replace_all(text, "| [ms]]").into_owned()
}

/// Poll `check` until it gives `Some`, for at most [`PATIENCE`].
pub fn wait_until<T>(mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if start.elapsed() > PATIENCE {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait for a pid file written by a command (`echo $$ > file`).
pub fn wait_for_pid(path: &Path) -> i32 {
    wait_until(|| {
        let text = std::fs::read_to_string(path).ok()?;
        if !text.ends_with('\n') {
            return None;
        }
        text.trim().parse::<i32>().ok()
    })
    .unwrap_or_else(|| panic!("no pid in {}", path.display()))
}

/// Assert `pid` dies within [`PATIENCE`]: its exit is awaited on a pidfd (it need not be
/// our child), a zombie counting as dead.
pub fn assert_dies(pid: i32, what: &str) {
    let Some(process) = u32::try_from(pid).ok().and_then(proc_tree::identify) else {
        return; // gone already
    };
    // On a thread of its own: async tests call this too, and a runtime cannot block inside one.
    let gone = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime")
                    .block_on(proc_tree::wait_gone(&[process].into(), PATIENCE))
            })
            .join()
            .expect("the waiting thread")
    });
    assert!(gone, "{what} (pid {pid}) is still alive");
}

/// A forge-bash spoken to in raw JSON-RPC lines (protocol-level tests:
/// stdin closing, signals).
pub struct RawServer {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl RawServer {
    pub fn spawn(env: &BTreeMap<String, String>) -> Self {
        let mut child = Command::new(BIN)
            .env_clear()
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn forge-bash");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    pub fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    /// The next line the server writes, as JSON.
    pub fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    /// initialize + notifications/initialized.
    pub fn handshake(&mut self) -> Value {
        self.send(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw-test", "version": "1.0.0"}}
        }));
        let answer = self.receive();
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    /// Send a `run` call without waiting for its answer.
    pub fn start_run(&mut self, id: u64, command: &str) {
        self.send(&json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "run", "arguments": {"command": command}}
        }));
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Wait (bounded) for the server to exit.
    pub fn wait_exit(&mut self) -> ExitStatus {
        wait_until(|| self.child.try_wait().ok().flatten())
            .unwrap_or_else(|| panic!("forge-bash did not exit within {PATIENCE:?}"))
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
