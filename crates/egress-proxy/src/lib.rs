//! Where a tool's web traffic may go. It owns:
//! - [`refused_class`] / [`AddressClass`]: which addresses are not the public internet (this
//!   host, private networks, link-local addresses where clouds serve instance metadata, …),
//!   and [`this_machine`] / [`OwnAddress`]: this machine's addresses and the networks its
//!   interfaces sit on, public ones included (`address`);
//! - [`EgressRules`]: the public internet plus the hosts an operator allows
//!   (`BOTCRAFT_BROWSER_ALLOW`), and [`Refusal`], why a destination is not (`rules`);
//! - [`EgressProxy`]: an HTTP proxy on loopback that applies them to every request a
//!   browser sends through it, after resolving its host (`proxy`).
//!
//! A prompt injection in a web page cannot have the browser read BotCraft's host, the
//! networks it sits in, or cloud credentials: the seeded Playwright sends its traffic here.
//! The host (`botcraft serve`, `mcp-stdio --local`) starts it; this crate knows no server.

mod address;
mod proxy;
mod rules;

pub use address::{AddressClass, OwnAddress, refused_class, this_machine};
pub use proxy::{EgressProxy, MAX_CONNECTIONS, MAX_TUNNELS, PLAIN_HTTP_LIFETIME, TUNNEL_IDLE};
pub use rules::{ALLOW_VARIABLE, EgressRules, MAX_ALLOWED, Refusal, RulesError};
