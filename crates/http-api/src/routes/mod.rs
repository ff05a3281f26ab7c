//! The router: every route registered through a [`RouteTable`], which records each
//! `(method, path)` it adds so the OpenAPI document can be checked against the router itself
//! (`openapi::tests`), and the JSON fallbacks for unknown paths and methods.

pub mod bots;
pub mod chat;
pub mod keys;
pub mod oauth;
pub mod servers;
pub mod tools;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::http::StatusCode;
use axum::middleware;
use axum::routing::{MethodFilter, on};

use crate::auth::{Access, require_admin, require_chat};
use crate::error::ApiError;
use crate::health;
use crate::openapi;
use crate::precheck::{Precheck, PrecheckLayer};
use crate::state::AppState;

/// A route as registered: upper-case method and axum path (`/api/bots/{bot}`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RouteSpec {
    pub method: &'static str,
    pub path: &'static str,
    /// Who may call it.
    pub access: Access,
}

/// A router that remembers what it routes.
struct RouteTable {
    router: Router<AppState>,
    routes: Vec<RouteSpec>,
    access: Access,
}

impl RouteTable {
    fn new(access: Access) -> Self {
        Self {
            router: Router::new(),
            routes: Vec::new(),
            access,
        }
    }

    fn add<H, T>(
        mut self,
        method: &'static str,
        filter: MethodFilter,
        path: &'static str,
        handler: H,
    ) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.router = self.router.route(path, on(filter, handler));
        self.routes.push(RouteSpec {
            method,
            path,
            access: self.access,
        });
        self
    }

    fn get<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, handler: H) -> Self {
        self.add("GET", MethodFilter::GET, path, handler)
    }

    fn post<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, handler: H) -> Self {
        self.add("POST", MethodFilter::POST, path, handler)
    }

    fn put<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, handler: H) -> Self {
        self.add("PUT", MethodFilter::PUT, path, handler)
    }

    fn delete<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, handler: H) -> Self {
        self.add("DELETE", MethodFilter::DELETE, path, handler)
    }
}

/// `GET /metrics` (public), served by `observability::metrics_router` over the state's
/// registry rather than through a [`RouteTable`].
const METRICS_ROUTE: RouteSpec = RouteSpec {
    method: "GET",
    path: "/metrics",
    access: Access::Public,
};

/// The whole HTTP surface over `state`, with the routes it serves.
pub fn app_with_routes(state: AppState) -> (Router, Vec<RouteSpec>) {
    let public = RouteTable::new(Access::Public)
        .get("/api/health", health::health)
        .get("/api/health/live", health::live)
        .get("/api/health/ready", health::ready)
        .get("/oauth/callback", oauth::callback)
        .get("/oauth/client-metadata.json", oauth::client_metadata);
    // What a chat front end needs, and nothing that changes BotCraft or runs a tool directly.
    let chat = RouteTable::new(Access::Chat)
        .get("/api/openapi.json", openapi::document)
        .post("/api/ai/chat", chat::chat)
        .get("/api/bots", bots::list)
        .get("/api/bots/{bot}", bots::get)
        .get("/api/bots/{bot}/tools", bots::tools)
        .get("/api/tools/search", tools::search)
        .get("/api/whoami", keys::whoami);
    let admin = RouteTable::new(Access::Admin)
        .get("/api/servers", servers::list)
        .post("/api/servers", servers::create)
        .post("/api/servers/import", servers::import)
        .get("/api/servers/{server}", servers::get)
        .put("/api/servers/{server}", servers::update)
        .delete("/api/servers/{server}", servers::delete)
        .post("/api/servers/{server}/start", servers::start)
        .post("/api/servers/{server}/stop", servers::stop)
        .post("/api/servers/{server}/restart", servers::restart)
        .post("/api/servers/{server}/oauth/start", oauth::start)
        .put("/api/servers/{server}/oauth/client", oauth::set_client)
        .get("/api/servers/{server}/oauth", oauth::status)
        .delete("/api/servers/{server}/oauth", oauth::sign_out)
        .get("/api/servers/{server}/logs", servers::logs)
        .get("/api/servers/{server}/tools", servers::tools)
        .post(
            "/api/servers/{server}/tools/refresh",
            servers::refresh_tools,
        )
        .get("/api/servers/{server}/resource", servers::resource)
        .post(
            "/api/servers/{server}/tools/{tool}/call",
            servers::call_tool,
        )
        .post("/api/bots", bots::create)
        .put("/api/bots/{bot}", bots::update)
        .delete("/api/bots/{bot}", bots::delete)
        .get("/api/bots/{bot}/servers", bots::bindings)
        .put("/api/bots/{bot}/servers/{server}", bots::bind)
        .delete("/api/bots/{bot}/servers/{server}", bots::unbind)
        .get("/api/keys", keys::list)
        .post("/api/keys", keys::create)
        .delete("/api/keys/{key}", keys::revoke);
    let mut routes = public.routes;
    routes.push(METRICS_ROUTE);
    routes.extend(chat.routes);
    routes.extend(admin.routes);
    let chat_router = chat
        .router
        .route_layer(middleware::from_fn_with_state(state.clone(), require_chat));
    let admin_router = admin
        .router
        .route_layer(middleware::from_fn_with_state(state.clone(), require_admin));
    let router = public
        .router
        .merge(observability::metrics_router(
            state.metrics.registry().clone(),
        ))
        .merge(chat_router)
        .merge(admin_router)
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.config.max_body_bytes))
        .layer(refuse_declared_oversize(state.config.max_body_bytes))
        // Outermost: the answers of the layers above (an early 413) get the headers too.
        .layer(middleware::map_response(not_sniffed_nor_stored))
        .with_state(state);
    (router, routes)
}

/// A body whose `Content-Length` is over the limit is refused before a byte of it is read:
/// 413 at once, not after the client has sent (or failed to send) it all. The layer for
/// `Router::layer`.
pub fn refuse_declared_oversize(limit: usize) -> PrecheckLayer<DeclaredBodyLimit> {
    PrecheckLayer::new(DeclaredBodyLimit(limit))
}

/// A `Content-Length` as hyper reads it: one number, or a list of the same number
/// (`4096, 4096`); anything else declares nothing here (hyper refuses it).
fn declared_length(value: &str) -> Option<u64> {
    let mut values = value
        .split(',')
        .map(|value| value.trim().parse::<u64>().ok());
    let first = values.next()??;
    values.all(|value| value == Some(first)).then_some(first)
}

/// The check of [`refuse_declared_oversize`]: the most bytes a request may declare.
#[derive(Debug, Clone, Copy)]
pub struct DeclaredBodyLimit(pub usize);

impl Precheck for DeclaredBodyLimit {
    fn refuse(&self, request: &axum::extract::Request) -> Option<axum::response::Response> {
        use axum::response::IntoResponse;
        let limit = self.0;
        let declared = request
            .headers()
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(declared_length)?;
        (declared > limit as u64).then(|| {
            let mut response = ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("the body is {declared} bytes; the limit is {limit}"),
            )
            .into_response();
            // `serve` puts this check in front of every router, the API's headers included.
            let headers = response.headers_mut();
            headers.insert(
                axum::http::header::X_CONTENT_TYPE_OPTIONS,
                axum::http::HeaderValue::from_static("nosniff"),
            );
            headers.insert(
                axum::http::header::CACHE_CONTROL,
                axum::http::HeaderValue::from_static("no-store"),
            );
            response
        })
    }
}

/// Every API answer is read as the type it says (`nosniff`: a tool name in `/metrics` or
/// a server's text in JSON is never taken for a page) and kept by no cache (a new key, a
/// server's config), unless the route said otherwise.
async fn not_sniffed_nor_stored(
    mut response: axum::response::Response,
) -> axum::response::Response {
    use axum::http::{HeaderValue, header};
    let headers = response.headers_mut();
    headers
        .entry(header::X_CONTENT_TYPE_OPTIONS)
        .or_insert(HeaderValue::from_static("nosniff"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

async fn no_route() -> ApiError {
    ApiError::not_found("no_route", "no such route; see /api/openapi.json")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "method not allowed on this route; see /api/openapi.json",
    )
}

#[cfg(test)]
mod tests {
    use super::declared_length;

    #[test]
    fn a_declared_length_is_read_as_hyper_reads_it() {
        let cases = [
            ("4096", Some(4096)),
            (" 4096 ", Some(4096)),
            ("104857600, 104857600", Some(104_857_600)),
            ("7,7,7", Some(7)),
            ("7, 8", None),
            ("7,", None),
            ("", None),
            ("-1", None),
            ("lots", None),
        ];
        for (value, declared) in cases {
            assert_eq!(declared_length(value), declared, "{value:?}");
        }
    }
}
