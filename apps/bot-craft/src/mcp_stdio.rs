//! `botcraft mcp-stdio --bot NAME`: the stdio bridge of `mcp_gateway::bridge`, which starts
//! with nothing (tools/list from a manifest, tools/call forwarded to BOTCRAFT_URL's /mcp).

use mcp_gateway::bridge::{McpStdioArgs, serve_stdio};

pub async fn run(args: McpStdioArgs) -> anyhow::Result<()> {
    serve_stdio(args.into_options(|name| std::env::var(name).ok())).await?;
    Ok(())
}
