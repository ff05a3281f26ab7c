//! An MCP server run inside the test process (rmcp's server over an in-memory pipe), with a
//! probe that records each start (on tokio's clock) and each ping, fails its first starts on
//! request, and holds a call until released. No real I/O: tests of it run on paused time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig as RmcpServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServiceExt};
use tokio::io::DuplexStream;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use mcp_lifecycle::{InProcessServer, ServerConfig};

/// What the in-process server saw; shared by every start.
#[derive(Clone)]
pub struct Probe {
    starts: Arc<Mutex<Vec<Instant>>>,
    fail_first_starts: Arc<AtomicUsize>,
    pings: watch::Sender<usize>,
    holding: watch::Sender<usize>,
    release: Arc<Notify>,
}

impl Probe {
    /// A server whose first `fail_first_starts` starts end before `initialize`.
    pub fn new(fail_first_starts: usize) -> Self {
        Self {
            starts: Arc::default(),
            fail_first_starts: Arc::new(AtomicUsize::new(fail_first_starts)),
            pings: watch::channel(0).0,
            holding: watch::channel(0).0,
            release: Arc::default(),
        }
    }

    /// When each start began, on tokio's clock.
    pub fn starts(&self) -> Vec<Instant> {
        self.starts.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn pings(&self) -> usize {
        *self.pings.borrow()
    }

    /// Resolves once a `hold` call is being served.
    pub async fn until_holding(&self) -> anyhow::Result<()> {
        self.holding.subscribe().wait_for(|n| *n > 0).await?;
        Ok(())
    }

    /// Let one `hold` call answer.
    pub fn release(&self) {
        self.release.notify_one();
    }
}

/// A config for an in-process server named `name` (no store id: the tool list stays in memory).
pub fn config(name: &str) -> ServerConfig {
    ServerConfig {
        id: String::new(),
        name: name.to_owned(),
        command: "in-process".to_owned(),
        args: Vec::new(),
        env: Default::default(),
        remote: None,
        call_timeout: Duration::from_secs(3600),
        init_timeout: Duration::from_secs(30),
        always_on: false,
        idle_timeout: Duration::from_secs(60),
        sandbox: sandbox::SandboxPolicy::default(),
        version: 0,
    }
}

struct Handler(Probe);

fn tool(name: &str) -> Tool {
    let schema = serde_json::json!({"type": "object"});
    let schema = schema.as_object().cloned().unwrap_or_default();
    Tool::new(
        name.to_owned(),
        format!("in-process tool {name}"),
        Arc::new(schema),
    )
}

impl ServerHandler for Handler {
    fn get_info(&self) -> RmcpServerConfig {
        RmcpServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn ping(&self, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.0.pings.send_modify(|n| *n += 1);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            tool("echo"),
            tool("hold"),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "hold" {
            self.0.holding.send_modify(|n| *n += 1);
            self.0.release.notified().await;
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(request.name.to_string())]).into())
    }
}

impl InProcessServer for Probe {
    fn serve(&self, io: DuplexStream) -> BoxFuture<'static, ()> {
        let probe = self.clone();
        Box::pin(async move {
            if let Ok(mut starts) = probe.starts.lock() {
                starts.push(Instant::now());
            }
            let fail = probe
                .fail_first_starts
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if fail {
                return; // "exits" before initialize
            }
            if let Ok(running) = Handler(probe).serve(tokio::io::split(io)).await {
                let _ = running.waiting().await;
            }
        })
    }
}
