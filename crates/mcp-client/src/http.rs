//! The HTTP side of remote connections: the client BotCraft connects with, and URLs as they
//! may be shown.
//!
//! Rules:
//! - One `reqwest` client per manager (connections pooled across servers), with **no
//!   redirects**: a redirect to another host would carry the server's headers (its token).
//! - A URL is shown (logs, errors, health) as `observability::shown_url` shows it (owned
//!   there, re-exported here): its user information, query and fragment replaced by `…`,
//!   since tokens are sometimes passed there. Header values are never shown anywhere.

use std::time::Duration;

/// How long a TCP connect to a remote server may take (a call has its own timeout too).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP client remote servers are reached with.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("botcraft/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "the HTTP client for remote MCP servers fell back to defaults");
            reqwest::Client::new()
        })
}

pub use observability::{cut_urls, shown_url};
