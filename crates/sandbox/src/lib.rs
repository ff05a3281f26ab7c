//! The sandbox of every tool process BotCraft starts. It owns:
//! - [`SandboxPolicy`]: a server's policy as stored with its config and shown by the API, the
//!   CLI and the dashboard (`policy`);
//! - [`Plan`]: the concrete allow-list of one spawn, from the policy and the [`SpawnContext`]
//!   (`plan`): system folders read-only, the workspace and a private temporary folder
//!   read-write, the program's folders read and execute, BotCraft's data folder never;
//! - [`Prepared`]: its enforcement with Landlock and no_new_privs, built in the parent and
//!   entered by the child between fork and exec (`enter`), and [`availability`], what this
//!   kernel offers;
//! - [`SyscallFilter`]: the seccomp filter entered last, which refuses Unix sockets of a
//!   server's own making (Landlock has no rule for a socket file) unless its policy allows
//!   them, and, where the policy's network is not `"all"`, the sockets, sends and options
//!   Landlock's TCP rules do not see, UDP included unless the policy may need a name looked
//!   up, which a resolver does over UDP (`syscall_filter`).
//!
//! The launcher (`mcp-lifecycle`) decides when to use it; this crate knows no server.

mod enter;
mod plan;
mod policy;
mod syscall_filter;

pub use enter::{Availability, Prepared, SandboxError, availability};
pub use plan::{
    DEVICES, NetworkPlan, NetworkRules, Plan, SYSTEM_READ_ONLY, SpawnContext, network_plan,
};
pub use policy::{
    MAX_ENTRY_LEN, MAX_PATHS, MAX_PORTS, NetworkEntry, NetworkPolicy, PolicyError, SandboxPolicy,
    names_a_host, port_of,
};
pub use syscall_filter::{InetSockets, SyscallFilter};
