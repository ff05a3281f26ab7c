//! An MCP server run inside the test process (rmcp's server over an in-memory pipe), with a
//! probe that records each start (on tokio's clock) and each ping, fails its first starts on
//! request, and holds a call until released. No real I/O: tests of it run on paused time.
//!
//! [`Lists`] is another: a tool list the test sets, its `tools/list` requests counted (and
//! their answers held while the test says so), and its side of the connection, through which
//! the test sends `notifications/tools/list_changed`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig as RmcpServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
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

/// A server whose tools are what the test set last, which counts its `tools/list` requests
/// and answers them only while open (it starts open), and whose side of the connection the
/// test can take to send notifications. Shared by every start.
#[derive(Clone)]
pub struct Lists {
    tools: Arc<Mutex<Vec<String>>>,
    /// Tools per `tools/list` page (`nextCursor` the next one's start); all at once when 0.
    page: Arc<std::sync::atomic::AtomicUsize>,
    listed: watch::Sender<usize>,
    open: watch::Sender<bool>,
    peer: watch::Sender<Option<Peer<RoleServer>>>,
}

impl Lists {
    pub fn new(tools: &[&str]) -> Self {
        let lists = Self {
            tools: Arc::default(),
            page: Arc::default(),
            listed: watch::channel(0).0,
            open: watch::channel(true).0,
            peer: watch::channel(None).0,
        };
        lists.set(tools);
        lists
    }

    /// The tools of the next `tools/list` answers.
    pub fn set(&self, tools: &[&str]) {
        let names: Vec<String> = tools.iter().map(|name| (*name).to_owned()).collect();
        match self.tools.lock() {
            Ok(mut current) => *current = names,
            Err(poisoned) => *poisoned.into_inner() = names,
        }
    }

    /// `tools/list` answers in pages of `tools` tools.
    pub fn paged(self, tools: usize) -> Self {
        self.page.store(tools, std::sync::atomic::Ordering::SeqCst);
        self
    }

    /// `tools/list` answers wait while closed; opening lets them go.
    pub fn answer(&self, open: bool) {
        self.open.send_replace(open);
    }

    /// The `tools/list` requests received so far (counted on arrival, held or not).
    pub fn listed(&self) -> usize {
        *self.listed.borrow()
    }

    /// Resolves once `n` `tools/list` requests have arrived.
    pub async fn until_listed(&self, n: usize) -> anyhow::Result<()> {
        self.listed
            .subscribe()
            .wait_for(|listed| *listed >= n)
            .await?;
        Ok(())
    }

    /// The server's side of the latest connection, once it is served.
    pub async fn peer(&self) -> anyhow::Result<Peer<RoleServer>> {
        let mut peers = self.peer.subscribe();
        let peer = peers.wait_for(|peer| peer.is_some()).await?;
        (*peer)
            .clone()
            .ok_or_else(|| anyhow::anyhow!("the in-process server was never served"))
    }
}

struct ListsHandler(Lists);

impl ServerHandler for ListsHandler {
    fn get_info(&self) -> RmcpServerConfig {
        RmcpServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.0.listed.send_modify(|n| *n += 1);
        let mut open = self.0.open.subscribe();
        let _ = open.wait_for(|open| *open).await;
        let names = match self.0.tools.lock() {
            Ok(tools) => tools.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        let page = self.0.page.load(std::sync::atomic::Ordering::SeqCst);
        if page == 0 {
            return Ok(ListToolsResult::with_all_items(
                names.iter().map(|name| tool(name)).collect(),
            ));
        }
        let start: usize = request
            .and_then(|request| request.cursor)
            .and_then(|cursor| cursor.parse().ok())
            .unwrap_or(0);
        let end = (start + page).min(names.len());
        let mut result = ListToolsResult::with_all_items(
            names[start.min(end)..end]
                .iter()
                .map(|name| tool(name))
                .collect(),
        );
        result.next_cursor = (end < names.len()).then(|| end.to_string());
        Ok(result)
    }
}

impl InProcessServer for Lists {
    fn serve(&self, io: DuplexStream) -> BoxFuture<'static, ()> {
        let lists = self.clone();
        Box::pin(async move {
            if let Ok(running) = ListsHandler(lists.clone())
                .serve(tokio::io::split(io))
                .await
            {
                lists.peer.send_replace(Some(running.peer().clone()));
                let _ = running.waiting().await;
            }
        })
    }
}
