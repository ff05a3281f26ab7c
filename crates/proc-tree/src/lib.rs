//! Processes by identity, for everyone in BotCraft who starts or ends one.
//!
//! - [`ProcessId`]: a pid and its start time, so a pid the kernel reused is never taken for
//!   the process it named before ([`identify`], [`is_alive`]).
//! - [`subtree`] and [`descendants`]: the processes below a pid, from the `children` files of
//!   `/proc` (the cost follows the tree, not the machine), or from the whole [`process_table`].
//! - [`wait_gone`]: wait for processes that need not be our children, on pidfds.
//! - [`keeper`]: a command run under a small subreaper that ends the command's whole tree
//!   (`setsid` and double-forked descendants included) when the command is stopped or when
//!   its owner dies, even by SIGKILL.
//!
//! The host side (process groups of servers, the pid registry, the orphan sweep) is
//! `mcp-lifecycle`'s; it builds on this crate.

mod exit;
pub mod keeper;
mod table;

pub use exit::wait_gone;
pub use table::{Entry, ProcessId, below, descendants, identify, is_alive, process_table, subtree};
