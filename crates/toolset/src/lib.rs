//! A bot's tools, owned in one place.
//!
//! Owns the answer to "which tools may bot X use, under which names, and does listing them
//! start servers?" for every face of BotCraft (the chat turn, `/mcp`, `mcp-stdio`, the admin
//! API):
//!
//! - qualified naming ([`naming`]): `server__tool`, sanitised, ≤ 64 characters, never a
//!   reserved native tool name, with the reverse map every call is routed through;
//! - [`Toolsets::load`]: a bot's [`BotToolset`] by [`ListPolicy`]. Listing reads the
//!   manager's cached tool lists and starts nothing unless the policy says a server never
//!   listed may be started to list it;
//! - [`Toolsets::call`]: re-checks the binding (enabled, tool filter), holds a lease on the
//!   server for the call, and maps the manager's errors into one [`CallError`];
//! - [`Toolsets::approval_now`]: a bot's approval policies as last written ([`ApprovalNow`]),
//!   to gate calls of a toolset taken earlier;
//! - bindings held in memory, exact without a query: the store raises a version on every
//!   write of servers, bots or bindings, and a cache filled at an older version is dropped.
//!   A toolset is rebuilt only when a binding or a server's tool list changed (the manager
//!   hands out the same `Arc` for an unchanged list), so the warm path sends no query.
//!
//! `mcp-lifecycle` manages servers and knows nothing of bots; this crate maps bots to them.

mod approval_now;
mod error;
pub mod naming;
mod owner;
mod set;

pub use approval_now::ApprovalNow;
pub use error::{CallError, ToolsetError};
pub use naming::{QualifiedToolNames, ToolRoute};
pub use owner::{ListPolicy, Toolsets};
pub use set::{BotTool, BotToolset, ServerInstructions, UnavailableServer};
