//! The HTTP side of remote connections: the client BotCraft connects with, and URLs as they
//! may be shown.
//!
//! Rules:
//! - One `reqwest` client per manager (connections pooled across servers), with **no
//!   redirects**: a redirect to another host would carry the server's headers (its token).
//! - A URL is shown (logs, errors, health) as `scheme://host[:port]/path`, its query and
//!   fragment replaced by `?…`: tokens are sometimes passed there. Header values are never
//!   shown anywhere.

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

/// `url` as it may be shown: without its query and fragment (`?…` marks that there was one).
pub fn shown_url(url: &str) -> String {
    match url.find(['?', '#']) {
        Some(at) => format!("{}?…", &url[..at]),
        None => url.to_owned(),
    }
}

/// `text` with every URL-looking word cut to what [`shown_url`] shows (error messages of
/// reqwest and rmcp can carry a URL with its query).
pub fn cut_urls(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            if word.contains("://") {
                shown_url(word)
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn urls_are_shown_without_query_or_fragment() {
        let cases = [
            ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp"),
            (
                "https://mcp.example.com/mcp?api_key=s3cret",
                "https://mcp.example.com/mcp?…",
            ),
            ("http://127.0.0.1:9/sse#frag", "http://127.0.0.1:9/sse?…"),
        ];
        for (url, shown) in cases {
            assert_eq!(shown_url(url), shown);
        }
    }

    #[test]
    fn every_url_in_a_message_is_cut() {
        assert_eq!(
            cut_urls(
                "error sending request for url (https://h.example/mcp?key=s3cret) after 2 tries"
            ),
            "error sending request for url (https://h.example/mcp?… after 2 tries"
        );
    }
}
