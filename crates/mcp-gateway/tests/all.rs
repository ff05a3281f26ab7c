//! The integration tests of mcp-gateway: one binary, modules under `suite/`.

mod suite;
