//! An MCP client over a spawned server binary, for integration tests.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion, Tool,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

/// A running server under test.
pub struct StdioServer {
    pub client: RunningService<RoleClient, ClientConfig>,
    stderr: Arc<Mutex<Vec<String>>>,
    /// Told of every new stderr line.
    stderr_grew: Arc<tokio::sync::Notify>,
}

/// The interesting parts of a `tools/call` result.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    pub is_error: bool,
    pub text: String,
    pub structured: Option<Value>,
}

impl From<CallToolResult> for CallOutcome {
    fn from(result: CallToolResult) -> Self {
        let text = result
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|text| text.text.clone()))
            .collect::<Vec<_>>()
            .join("");
        CallOutcome {
            is_error: result.is_error.unwrap_or(false),
            text,
            structured: result.structured_content,
        }
    }
}

impl StdioServer {
    /// Spawn `program` with exactly `env` (plus nothing else: the environment
    /// is cleared) and complete the MCP handshake.
    pub async fn spawn(
        program: impl AsRef<Path>,
        args: &[&str],
        env: &BTreeMap<String, String>,
    ) -> anyhow::Result<Self> {
        let mut command = tokio::process::Command::new(program.as_ref());
        command.args(args).env_clear().envs(env);
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("spawn {}", program.as_ref().display()))?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        let grew = Arc::new(tokio::sync::Notify::new());
        if let Some(stderr) = stderr {
            let sink = Arc::clone(&lines);
            let told = Arc::clone(&grew);
            tokio::spawn(async move {
                let mut reader = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if let Ok(mut lines) = sink.lock() {
                        lines.push(line);
                    }
                    told.notify_waiters();
                }
            });
        }
        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("botcraft-test", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let client = config
            .serve(transport)
            .await
            .context("MCP initialize handshake")?;
        Ok(Self {
            client,
            stderr: lines,
            stderr_grew: grew,
        })
    }

    /// A minimal environment: `PATH` only.
    pub fn base_env() -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        env.insert("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned());
        env
    }

    pub async fn tools(&self) -> anyhow::Result<Vec<Tool>> {
        Ok(self.client.list_all_tools().await?)
    }

    /// Call `name` with `arguments` (a JSON object).
    pub async fn call(&self, name: &str, arguments: Value) -> anyhow::Result<CallOutcome> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(object) = arguments {
            params = params.with_arguments(object);
        }
        Ok(self.client.call_tool(params).await?.into())
    }

    /// Every stderr line so far.
    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr
            .lock()
            .map(|lines| lines.clone())
            .unwrap_or_default()
    }

    /// Wait (at most `limit`) for a stderr line containing `needle`; woken by each new line,
    /// never polling. The error lists the lines seen.
    pub async fn wait_for_stderr(
        &self,
        needle: &str,
        limit: std::time::Duration,
    ) -> anyhow::Result<()> {
        let found = tokio::time::timeout(limit, async {
            loop {
                // Registered before looking, so a line pushed in between still wakes us.
                let grew = self.stderr_grew.notified();
                tokio::pin!(grew);
                grew.as_mut().enable();
                if self.stderr_lines().iter().any(|l| l.contains(needle)) {
                    return;
                }
                grew.await;
            }
        })
        .await;
        found.map_err(|_| {
            anyhow::anyhow!(
                "no stderr line with {needle:?} within {limit:?}: {:?}",
                self.stderr_lines()
            )
        })
    }

    /// Close stdin and wait for the client task to end.
    pub async fn close(self) -> anyhow::Result<()> {
        self.client.cancel().await?;
        Ok(())
    }
}
