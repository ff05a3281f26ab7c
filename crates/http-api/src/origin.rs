//! The `Origin` rule of every route BotCraft serves (the API, the dashboard, `/mcp`): a
//! request from a browser page of another site is refused before any handler runs, so a web
//! page the user visits cannot drive a local BotCraft (cross-site requests, DNS rebinding).
//!
//! A request passes when it carries no `Origin` (curl, SDKs, MCP clients), or when its
//! `Origin` is
//! - the same origin as the request itself (`Origin`'s host and port equal `Host`, the
//!   dashboard's own page) and that host is allowed (loopback, or `BOTCRAFT_ALLOWED_HOSTS`),
//!   so a rebound name (`evil.example` resolving to 127.0.0.1) does not pass; or
//! - listed in `BOTCRAFT_ALLOWED_ORIGINS` (`scheme://host[:port]`, compared exactly).
//!
//! Anything else is `403 {"error": {"code": "origin_not_allowed"}}`.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::header::{HOST, ORIGIN};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Which origins may send requests.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl OriginPolicy {
    /// Loopback hosts plus `extra_hosts`; `origins` as listed (trailing `/` ignored).
    pub fn new(extra_hosts: &[String], origins: &[String]) -> Self {
        let hosts = ["localhost", "127.0.0.1", "[::1]", "::1"]
            .into_iter()
            .map(str::to_owned)
            .chain(
                extra_hosts
                    .iter()
                    .map(|host| host.trim().to_ascii_lowercase()),
            )
            .filter(|host| !host.is_empty())
            .collect();
        let origins = origins
            .iter()
            .map(|origin| origin.trim().trim_end_matches('/').to_ascii_lowercase())
            .filter(|origin| !origin.is_empty())
            .collect();
        Self { hosts, origins }
    }

    /// Whether a request with this `Origin` and `Host` passes. Allocation-free: it runs on
    /// every request (ASCII case is ignored, as the lists are kept lowercase).
    pub fn allows(&self, origin: Option<&str>, host: Option<&str>) -> bool {
        let Some(origin) = origin else {
            return true;
        };
        let origin = origin.trim().trim_end_matches('/');
        if self
            .origins
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(origin))
        {
            return true;
        }
        let Some(authority) = strip_prefix_ignoring_case(origin, "http://")
            .or_else(|| strip_prefix_ignoring_case(origin, "https://"))
        else {
            return false;
        };
        let Some(host) = host else {
            return false;
        };
        let name = host_name(host);
        authority.eq_ignore_ascii_case(host)
            && self
                .hosts
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(name))
    }
}

/// `text` without `prefix`, compared ignoring ASCII case.
fn strip_prefix_ignoring_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// The name part of `host[:port]` (an IPv6 literal keeps its brackets).
fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority
            .find(']')
            .map_or(authority, |end| &authority[..=end]);
    }
    authority.split(':').next().unwrap_or(authority)
}

impl crate::precheck::Precheck for std::sync::Arc<OriginPolicy> {
    fn refuse(&self, request: &Request) -> Option<Response> {
        let headers = request.headers();
        // An Origin that is there but not visible ASCII is no allowed origin (absent, it
        // would pass as a request from no page).
        let origin = match headers.get(ORIGIN).map(|value| value.to_str()) {
            None => None,
            Some(Ok(origin)) => Some(origin),
            Some(Err(_)) => Some(""),
        };
        let host = headers.get(HOST).and_then(|value| value.to_str().ok());
        if self.allows(origin, host) {
            return None;
        }
        Some(
            ApiError::new(
                axum::http::StatusCode::FORBIDDEN,
                "origin_not_allowed",
                "this Origin may not send requests to BotCraft (BOTCRAFT_ALLOWED_ORIGINS lists the allowed ones)",
            )
            .into_response(),
        )
    }
}

/// The Origin rule as a layer, for `Router::layer` (in front of every route). Give the
/// router's other layers in the same call (`router.layer((origin::layer(policy), other))`):
/// each `Router::layer` wraps every route once more, and a request clones each wrapping.
pub fn layer(policy: OriginPolicy) -> crate::precheck::PrecheckLayer<Arc<OriginPolicy>> {
    crate::precheck::PrecheckLayer::new(Arc::new(policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_and_rebound_origins_are_refused() {
        let policy = OriginPolicy::new(
            &["botcraft.example.com".to_owned()],
            &["https://app.example.com/".to_owned()],
        );
        let cases = [
            (None, Some("127.0.0.1:3000"), true),
            (Some("http://127.0.0.1:3000"), Some("127.0.0.1:3000"), true),
            (Some("http://localhost:3000"), Some("localhost:3000"), true),
            (Some("http://[::1]:3000"), Some("[::1]:3000"), true),
            (
                Some("https://botcraft.example.com"),
                Some("botcraft.example.com"),
                true,
            ),
            (
                Some("https://app.example.com"),
                Some("botcraft.example.com"),
                true,
            ),
            (Some("http://evil.example"), Some("127.0.0.1:3000"), false),
            (
                Some("http://evil.example:3000"),
                Some("evil.example:3000"),
                false,
            ),
            (Some("http://localhost:9999"), Some("localhost:3000"), false),
            (Some("null"), Some("127.0.0.1:3000"), false),
            (Some("http://127.0.0.1:3000"), None, false),
            // ASCII case does not matter, on either side.
            (Some("HTTP://LocalHost:3000/"), Some("localhost:3000"), true),
            (Some("https://APP.example.com"), Some("elsewhere"), true),
            (
                Some("https://BotCraft.Example.com"),
                Some("botcraft.EXAMPLE.com"),
                true,
            ),
            (Some("http://é"), Some("é"), false),
            (Some("ht"), Some("127.0.0.1"), false),
        ];
        for (origin, host, allowed) in cases {
            assert_eq!(policy.allows(origin, host), allowed, "{origin:?} {host:?}");
        }
    }

    /// The layer's reading of the headers: an Origin of bytes that are not visible ASCII is
    /// refused, not taken for a missing one.
    #[test]
    fn an_origin_that_is_not_text_is_refused() {
        use crate::precheck::Precheck as _;
        let policy = Arc::new(OriginPolicy::new(&[], &[]));
        let request = |origin: Option<&[u8]>| {
            let mut request = Request::new(axum::body::Body::empty());
            let headers = request.headers_mut();
            headers.insert(HOST, axum::http::HeaderValue::from_static("127.0.0.1:3000"));
            if let Some(origin) = origin {
                let value = axum::http::HeaderValue::from_bytes(origin).expect("a header value");
                headers.insert(ORIGIN, value);
            }
            request
        };
        let cases: [(Option<&[u8]>, bool); 4] = [
            (None, true),
            (Some(b"http://127.0.0.1:3000"), true),
            (Some(b"http://127.0.0.1:3000\xff"), false),
            (Some("http://\u{e9}vil".as_bytes()), false),
        ];
        for (origin, allowed) in cases {
            let refused = policy.refuse(&request(origin));
            assert_eq!(refused.is_none(), allowed, "{origin:?}");
            if let Some(refused) = refused {
                assert_eq!(refused.status(), axum::http::StatusCode::FORBIDDEN);
            }
        }
    }
}
