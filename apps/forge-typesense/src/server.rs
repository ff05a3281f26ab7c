//! The MCP face of forge-typesense: `search_knowledge` and `get_file_summary`
//! (names and inputs as in seed §4), and how each failure becomes a
//! reason-coded tool error.

use schemars::JsonSchema;
use server_kit::{
    Identity, ReasonCode, Tool, ToolAnnotations, ToolCall, ToolFailure, ToolOutput, Toolbox,
    tool_spec,
};

use crate::client::{TypesenseClient, UpstreamError};
use crate::search::{
    FileSummaryParams, SearchKnowledgeParams, not_indexed, only_result, render_file_summary,
    render_results,
};

pub const SEARCH_KNOWLEDGE: &str = "search_knowledge";
pub const GET_FILE_SUMMARY: &str = "get_file_summary";

/// The toolbox: a client when Typesense is configured, else the
/// `not_configured` failure every call returns.
#[derive(Debug, Clone)]
pub struct KnowledgeSearch {
    client: Result<TypesenseClient, ToolFailure>,
}

impl KnowledgeSearch {
    pub fn new(client: Result<TypesenseClient, ToolFailure>) -> Self {
        Self { client }
    }

    fn client(&self) -> Result<&TypesenseClient, ToolFailure> {
        self.client.as_ref().map_err(Clone::clone)
    }

    async fn search_knowledge(&self, call: &ToolCall) -> Result<String, ToolFailure> {
        let params: SearchKnowledgeParams = call.parse()?;
        // Bad input is reported before a missing configuration: the model
        // can fix the one, not the other.
        params.limit()?;
        params.filter_by()?;
        let client = self.client()?;
        let search = params.search(client.collection())?;
        let response = client.multi_search(vec![search]).await.map_err(upstream)?;
        let (found, hits) = only_result(
            response,
            client.collection(),
            &client.shown_endpoint("/multi_search"),
        )
        .map_err(upstream)?;
        Ok(render_results(found, &hits))
    }

    async fn get_file_summary(&self, call: &ToolCall) -> Result<String, ToolFailure> {
        let params: FileSummaryParams = call.parse()?;
        let path = params.normalized_path()?;
        params.filter_by()?;
        let client = self.client()?;
        let search = params.search(client.collection())?;
        let response = client.multi_search(vec![search]).await.map_err(upstream)?;
        let (_, hits) = only_result(
            response,
            client.collection(),
            &client.shown_endpoint("/multi_search"),
        )
        .map_err(upstream)?;
        match hits.first() {
            Some(hit) => Ok(render_file_summary(hit, &path)),
            None => Err(not_indexed(&path, client.collection())),
        }
    }
}

fn upstream(error: UpstreamError) -> ToolFailure {
    ToolFailure::new(error.reason(), error.to_string())
}

/// The `not_configured` failure for a configuration problem.
pub fn not_configured(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new(ReasonCode::NotConfigured, message)
}

fn read_only(tool: Tool) -> Tool {
    tool.annotate(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(true),
    )
}

fn spec<P: JsonSchema>(name: &'static str, description: &'static str) -> Tool {
    read_only(tool_spec::<P>(name, description))
}

impl Toolbox for KnowledgeSearch {
    fn identity(&self) -> Identity {
        Identity {
            name: "forge-typesense",
            version: env!("CARGO_PKG_VERSION"),
            instructions: Some(
                "Search the organisation's knowledge base (the repository's markdown, indexed in \
                 Typesense) with `search_knowledge`; read one file's stored summary with \
                 `get_file_summary`."
                    .to_owned(),
            ),
        }
    }

    fn tools(&self) -> Vec<Tool> {
        vec![
            spec::<SearchKnowledgeParams>(
                SEARCH_KNOWLEDGE,
                "Search the knowledge base (Typesense) by keywords or natural language, optionally filtered by department, project, type, source, status, visibility or owner. Returns title, path, summary, a highlighted snippet and the score of each result.",
            ),
            spec::<FileSummaryParams>(
                GET_FILE_SUMMARY,
                "Get the stored title and summary of one indexed file by its path relative to the repository root.",
            ),
        ]
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolFailure> {
        let work = async {
            match call.name.as_str() {
                SEARCH_KNOWLEDGE => self.search_knowledge(&call).await,
                GET_FILE_SUMMARY => self.get_file_summary(&call).await,
                other => Err(ToolFailure::tool(format!("Unknown tool: {other}"))),
            }
        };
        tokio::select! {
            text = work => text.map(ToolOutput::text),
            () = call.cancel.cancelled() => {
                Err(ToolFailure::tool("The call was cancelled by the client."))
            }
        }
    }
}
