//! MCP messages on a byte stream, for rmcp: [`LineTransport`] frames JSON-RPC one message
//! per line (MCP's stdio transport) over any reader and writer, as rmcp's own does, at less
//! cost per message: large reads, `tools/call` and its answer decoded in one pass by their
//! tag ([`decode`]; a result of text blocks alone without buffering its blocks:
//! `text_result`), writes coalesced. A client's requests can also go past rmcp's service
//! loop on the connection's [`DirectLane`] ([`lane`]), and a server's `tools/call` requests be
//! served past it ([`DirectServing`], [`served`]). [`stdio()`] is this process's stdin
//! and stdout as one.
//!
//! Used by every stdio face of BotCraft: the client side of the manager's child servers
//! (`mcp-client`), `botcraft mcp-stdio` (`mcp-gateway`) and the forge servers (`server-kit`).

pub mod decode;
pub mod lane;
mod methods;
pub mod served;
pub mod stdio;
mod text_result;
pub mod transport;

pub use decode::{PendingCalls, Side};
pub use lane::{DirectLane, LaneClosed, LaneSendError, Sent};
pub use served::DirectServing;
pub use stdio::stdio;
pub use text_result::decode_tool_result;
pub use transport::{DEFAULT_MAX_LINE_LENGTH, DEFAULT_MAX_QUEUED, LineTransport};
