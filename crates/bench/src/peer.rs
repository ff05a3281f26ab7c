//! A server under measurement, driven by `rmcp`'s client: a process spawned over
//! stdio with a cleared environment, or an MCP endpoint over streamable HTTP
//! (given the pid of the process behind it, when known). Peak memory is read
//! from /proc.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;

use anyhow::Context;
use http::{HeaderMap, HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;

use crate::legacy_sse::LegacySseTransport;

/// How to start a server.
#[derive(Debug, Clone)]
pub struct ServerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// An MCP endpoint over streamable HTTP.
#[derive(Debug, Clone)]
pub struct HttpEndpoint {
    pub url: String,
    /// `(name, value)` pairs sent with every request.
    pub headers: Vec<(String, String)>,
    /// The process serving the endpoint, for its peak memory.
    pub rss_pid: Option<u32>,
    /// The HTTP+SSE transport of 2024-11-05 instead of streamable HTTP.
    pub legacy_sse: bool,
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
        let client = client_config()
            .serve(transport)
            .await
            .context("initialize")?;
        Ok(Self { client, pid })
    }

    /// Connect to a streamable HTTP endpoint and initialize. `Authorization: Bearer T`
    /// goes through rmcp's auth header (it refuses `Authorization` as a custom header).
    pub async fn connect(endpoint: &HttpEndpoint) -> anyhow::Result<Self> {
        if endpoint.legacy_sse {
            return Self::connect_legacy_sse(endpoint).await;
        }
        let mut config = StreamableHttpClientTransportConfig::with_uri(endpoint.url.as_str());
        let mut custom = HashMap::new();
        for (name, value) in &endpoint.headers {
            if name.eq_ignore_ascii_case("authorization") {
                let token = value.strip_prefix("Bearer ").with_context(|| {
                    format!("--header {name}: only `Bearer TOKEN` is supported")
                })?;
                config = config.auth_header(token.trim());
                continue;
            }
            let name = HeaderName::try_from(name.as_str())
                .with_context(|| format!("--header: bad header name {name:?}"))?;
            let value = HeaderValue::try_from(value.as_str())
                .with_context(|| format!("--header {name}: bad value"))?;
            custom.insert(name, value);
        }
        let transport = StreamableHttpClientTransport::from_config(config.custom_headers(custom));
        let client = client_config()
            .serve(transport)
            .await
            .with_context(|| format!("initialize {}", endpoint.url))?;
        Ok(Self {
            client,
            pid: endpoint.rss_pid,
        })
    }

    async fn connect_legacy_sse(endpoint: &HttpEndpoint) -> anyhow::Result<Self> {
        let mut headers = HeaderMap::new();
        for (name, value) in &endpoint.headers {
            headers.insert(
                HeaderName::try_from(name.as_str())
                    .with_context(|| format!("--header: bad header name {name:?}"))?,
                HeaderValue::try_from(value.as_str())
                    .with_context(|| format!("--header {name}: bad value"))?,
            );
        }
        let transport = LegacySseTransport::connect(&endpoint.url, headers).await?;
        let client = client_config()
            .serve(transport)
            .await
            .with_context(|| format!("initialize {}", endpoint.url))?;
        Ok(Self {
            client,
            pid: endpoint.rss_pid,
        })
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
        crate::usage::vm_hwm_kib(self.pid?)
    }

    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("botcraft-bench", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
}
