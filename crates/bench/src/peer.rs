//! A server process under measurement: spawned over stdio with a cleared
//! environment, driven by `rmcp`'s client, its peak memory read from /proc.

use std::path::PathBuf;
use std::process::Stdio;

use anyhow::Context;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::Value;

/// How to start a server.
#[derive(Debug, Clone)]
pub struct ServerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

pub struct Peer {
    client: RunningService<RoleClient, ClientConfig>,
    pid: Option<u32>,
}

impl Peer {
    pub async fn spawn(command: &ServerCommand) -> anyhow::Result<Self> {
        let mut process = tokio::process::Command::new(&command.program);
        process
            .args(&command.args)
            .env_clear()
            .envs(command.env.iter().map(|(k, v)| (k, v)));
        let (transport, _stderr) = TokioChildProcess::builder(process)
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("spawn {}", command.program.display()))?;
        let pid = transport.id();
        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("botcraft-bench", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let client = config.serve(transport).await.context("initialize")?;
        Ok(Self { client, pid })
    }

    pub async fn list_tools(&self) -> anyhow::Result<usize> {
        Ok(self.client.list_all_tools().await?.len())
    }

    /// Call a tool; returns (isError, joined text).
    pub async fn call(&self, tool: &str, arguments: &Value) -> anyhow::Result<(bool, String)> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(object) = arguments {
            params = params.with_arguments(object.clone());
        }
        let result = self.client.call_tool(params).await?;
        let text = result
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
            .collect::<Vec<_>>()
            .join("");
        Ok((result.is_error.unwrap_or(false), text))
    }

    /// Peak resident set size of the server process (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid?)).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    }

    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}
