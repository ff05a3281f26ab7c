//! MCP messages on a byte stream, for rmcp: [`LineTransport`] frames JSON-RPC one message
//! per line (MCP's stdio transport) over any reader and writer, as rmcp's own does, at less
//! cost per message: large reads, `tools/call` and its answer decoded in one pass by their
//! tag ([`decode`]), writes coalesced. [`stdio()`] is this process's stdin and stdout as one.
//!
//! Used by every stdio face of BotCraft: the client side of the manager's child servers
//! (`mcp-client`), `botcraft mcp-stdio` (`mcp-gateway`) and the forge servers (`server-kit`).

pub mod decode;
mod methods;
pub mod stdio;
pub mod transport;

pub use decode::{PendingCalls, Side};
pub use stdio::stdio;
pub use transport::{DEFAULT_MAX_LINE_LENGTH, DEFAULT_MAX_QUEUED, LineTransport};
