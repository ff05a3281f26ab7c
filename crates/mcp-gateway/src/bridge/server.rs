//! The bridge's MCP server: `initialize` and `tools/list` from the manifest in memory,
//! `tools/call` forwarded upstream. A call that cannot be made (no settings, BotCraft
//! unreachable, an HTTP error, a bad answer, the tool failed) is a tool result with
//! `isError: true` stating why, and one reason-coded stderr line.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use server_kit::ReasonCode;
use tracing::Instrument as _;

use crate::bridge::failure::BridgeFailure;
use crate::bridge::upstream::Upstream;
use crate::gateway::GATEWAY_NAME;
use crate::manifest::BotManifest;

/// What `tools/call` says when the bridge has no upstream settings.
pub const NOT_CONFIGURED: &str = "tools/call is not configured: set BOTCRAFT_URL (BotCraft's address) and BOTCRAFT_API_KEY (a key of this bot)";

struct Served {
    manifest: Arc<BotManifest>,
    names: HashSet<String>,
}

impl Served {
    fn new(manifest: BotManifest) -> Self {
        let names = manifest.tools.iter().map(|t| t.name.to_string()).collect();
        Self {
            manifest: Arc::new(manifest),
            names,
        }
    }
}

/// Shared by the MCP handler and the manifest refresh.
pub struct BridgeState {
    served: RwLock<Served>,
    upstream: Option<Upstream>,
    peer: RwLock<Option<Peer<RoleServer>>>,
}

impl BridgeState {
    pub fn new(manifest: BotManifest, upstream: Option<Upstream>) -> Arc<Self> {
        Arc::new(Self {
            served: RwLock::new(Served::new(manifest)),
            upstream,
            peer: RwLock::new(None),
        })
    }

    pub fn manifest(&self) -> Arc<BotManifest> {
        self.served
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .manifest
            .clone()
    }

    pub fn upstream(&self) -> Option<&Upstream> {
        self.upstream.as_ref()
    }

    /// Serve `manifest` from now on; tells a connected client when the tools changed.
    pub async fn replace(&self, manifest: BotManifest) {
        let changed = {
            let mut served = self.served.write().unwrap_or_else(|e| e.into_inner());
            let changed = served.manifest.tools != manifest.tools;
            *served = Served::new(manifest);
            changed
        };
        let peer = self.peer.read().unwrap_or_else(|e| e.into_inner()).clone();
        if changed && let Some(peer) = peer {
            let _ = peer.notify_tool_list_changed().await;
        }
    }

    fn knows(&self, tool: &str) -> bool {
        self.served
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .names
            .contains(tool)
    }
}

/// The rmcp handler of the bridge.
#[derive(Clone)]
pub struct BridgeServer {
    state: Arc<BridgeState>,
}

impl BridgeServer {
    pub fn new(state: Arc<BridgeState>) -> Self {
        Self { state }
    }

    async fn forward(
        &self,
        request: CallToolRequestParams,
    ) -> Result<CallToolResult, BridgeFailure> {
        let Some(upstream) = self.state.upstream() else {
            return Err(BridgeFailure::new(
                ReasonCode::NotConfigured,
                NOT_CONFIGURED,
            ));
        };
        let result = upstream
            .call_tool(&request.name, request.arguments)
            .await
            .map_err(|error| BridgeFailure::new(error.reason(), error.to_string()))?;
        if result.is_error == Some(true) {
            let text = first_text(&result).unwrap_or("the tool reported an error");
            eprintln!(
                "{}",
                BridgeFailure::new(ReasonCode::ToolError, text).stderr_line(&request.name)
            );
        }
        Ok(result)
    }
}

fn first_text(result: &CallToolResult) -> Option<&str> {
    result
        .content
        .iter()
        .find_map(|block| block.as_text().map(|t| t.text.as_str()))
}

impl ServerHandler for BridgeServer {
    fn get_info(&self) -> ServerConfig {
        let manifest = self.state.manifest();
        let config = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(
            Implementation::new(GATEWAY_NAME, env!("CARGO_PKG_VERSION"))
                .with_title(format!("BotCraft bot {}", manifest.bot)),
        );
        match &manifest.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        *self.state.peer.write().unwrap_or_else(|e| e.into_inner()) = Some(context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.state.manifest().tools.clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !self.state.knows(&name) {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        }
        let span = crate::traced::received("tools/call", Some(&name), &context);
        let outcome = tokio::select! {
            () = context.ct.cancelled() => Err(BridgeFailure::new(
                ReasonCode::ToolError,
                "the call was cancelled by the client",
            )),
            // Boxed: rmcp spawns a task per request holding its largest handler's future,
            // and the HTTP exchange is most of it.
            outcome = Box::pin(self.forward(request).instrument(span.clone())) => outcome,
        };
        let answer = match outcome {
            Ok(result) => Ok(result.into()),
            Err(failure) => {
                eprintln!("{}", failure.stderr_line(&name));
                Ok(CallToolResult::error(vec![ContentBlock::text(failure.message)]).into())
            }
        };
        crate::traced::ended_call(&span, answer)
    }
}
