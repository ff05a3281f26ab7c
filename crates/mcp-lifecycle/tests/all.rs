//! mcp-lifecycle's integration tests: one binary, real processes (the fake MCP server of
//! test-support with its fault modes), one test per lifecycle rule.

mod suite;
