//! One MCP client connection, the client side BotCraft presents to a server.
//!
//! - [`ClientSide`] is the handler: client name "botcraft", the newest revision with a
//!   handshake (2025-11-25), `sampling` and `elicitation` declared and relayed to the client
//!   whose call is in flight ([`Relay`]), `tools/list_changed` reported to its owner
//!   (on a bounded channel, never queued beyond it).
//! - [`handshake`] / [`handshake_over`]: `initialize` over a pipe (a child's stdio, an
//!   in-process server) or any rmcp transport, within an init timeout, abandoned when the
//!   server exits or the start is cancelled; a pipe's connection comes with its
//!   [`mcp_wire::DirectLane`] for requests past rmcp's service loop.
//! - [`connect`]: a remote server over streamable HTTP or HTTP+SSE ([`sse`]), with a token
//!   or challengeable ([`Auth`], [`challenge_in`]), its 2026-07-28 link
//!   ([`StatelessLink`]), the `traceparent` header on each POST, progress in wire order
//!   ([`ProgressTap`]), and its loss as the connection's exit ([`ConnectionLoss`]).
//! - [`Subscribers`]: the resource subscriptions BotCraft's clients hold on a server,
//!   counted, so that one client's `resources/unsubscribe` never ends another's.
//!
//! It knows no store, no manager and no bots: spawning, sandboxing, restarts, health and
//! tool lists are `mcp-lifecycle`'s, which builds on this crate.

mod auth;
mod client;
mod handshake;
mod http;
mod loss;
pub mod relay;
mod remote;
pub mod sse;
mod stateless_link;
pub mod subscribers;
mod tap;
mod trace_header;

pub use auth::{Auth, challenge_in};
pub use client::{CLIENT_NAME, ClientSide, PROTOCOL_VERSION};
pub use handshake::{HandshakeFailure, PipeConnection, handshake, handshake_over};
pub use http::{cut_urls, http_client, shown_url};
pub use loss::{ConnectionLoss, ExitInfo};
pub use mcp_wire::{DirectLane, lane};
pub use relay::{ConnectionId, PROGRESS_BACKLOG, Relay, Unattended};
pub use remote::{ConnectError, RemoteConnection, RemoteTarget, RemoteTransport, connect};
pub use stateless_link::StatelessLink;
pub use subscribers::{MAX_RESOURCE_URI_BYTES, Subscribers};
pub use tap::ProgressTap;
