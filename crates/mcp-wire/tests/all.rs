//! mcp-wire's integration tests: one binary, the suites in `suite/`.
mod suite;
