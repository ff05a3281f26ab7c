//! One integration binary: the router driven with `oneshot` (no socket) and served on a real
//! socket, against the fake LLM (both wire formats) and real MCP server processes.

mod suite;
