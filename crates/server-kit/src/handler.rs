//! The rmcp `ServerHandler` over a [`Toolbox`].

use std::collections::HashSet;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::toolbox::{ToolCall, Toolbox};

/// Serves a [`Toolbox`] over MCP. Cheap to clone.
pub struct KitServer<T: Toolbox> {
    toolbox: Arc<T>,
    tools: Arc<Vec<Tool>>,
    names: Arc<HashSet<String>>,
}

// Not derived: a derive would ask the toolbox to be `Clone`, and only the `Arc`s are cloned.
impl<T: Toolbox> Clone for KitServer<T> {
    fn clone(&self) -> Self {
        Self {
            toolbox: Arc::clone(&self.toolbox),
            tools: Arc::clone(&self.tools),
            names: Arc::clone(&self.names),
        }
    }
}

impl<T: Toolbox> KitServer<T> {
    pub fn new(toolbox: T) -> Self {
        let tools = toolbox.tools();
        let names = tools.iter().map(|tool| tool.name.to_string()).collect();
        Self {
            toolbox: Arc::new(toolbox),
            tools: Arc::new(tools),
            names: Arc::new(names),
        }
    }

    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    pub fn toolbox(&self) -> &T {
        &self.toolbox
    }

    /// Run one call the way `tools/call` does: failures become `isError`
    /// results and one stderr line with the reason code; an unknown tool is a
    /// JSON-RPC `invalid_params` error (protocol misuse).
    pub async fn dispatch(&self, call: ToolCall) -> Result<CallToolResult, ErrorData> {
        if !self.names.contains(&call.name) {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", call.name),
                None,
            ));
        }
        let name = call.name.clone();
        match self.toolbox.call(call).await {
            Ok(output) => Ok(output.into_result()),
            Err(failure) => {
                let server = self.toolbox.identity().name;
                eprintln!("{}", failure.stderr_line(server, &name));
                Ok(CallToolResult::error(vec![ContentBlock::text(
                    failure.message,
                )]))
            }
        }
    }
}

impl<T: Toolbox> ServerHandler for KitServer<T> {
    fn get_info(&self) -> ServerConfig {
        let identity = self.toolbox.identity();
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(identity.name, identity.version));
        match identity.instructions {
            Some(instructions) => config.with_instructions(instructions),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = ToolCall {
            name: request.name.to_string(),
            arguments: request.arguments.unwrap_or_default(),
            cancel: context.ct.clone(),
        };
        self.dispatch(call).await.map(Into::into)
    }
}
