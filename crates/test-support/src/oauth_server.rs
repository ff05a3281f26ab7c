//! A fake OAuth 2.1 authorization server and protected resource, in front of an MCP
//! service, on one origin: what a hosted MCP server behind OAuth looks like to BotCraft.
//!
//! - `/mcp` answers `401` with `WWW-Authenticate: Bearer resource_metadata=…` without a
//!   valid, unexpired access token it issued.
//! - `/.well-known/oauth-protected-resource/mcp` (RFC 9728) and
//!   `/.well-known/oauth-authorization-server` (RFC 8414, issuer = the origin, S256 only,
//!   `authorization_response_iss_parameter_supported`).
//! - `POST /register` (RFC 7591, public clients), `GET /authorize` (a login page with an
//!   "Approve" button, as a person sees it), `POST /authorize/approve` (redirects with `code`,
//!   `state` and `iss`), `POST /token` (`authorization_code` with PKCE S256 checked and the
//!   `resource` required; `refresh_token`, rotating).
//! - Each token is issued to the user named on the login page (`tester` unless changed), and
//!   `/mcp` requests are counted per user (`calls_by_user`): whose account a client used.
//! - `/admin/*` drives tests: `GET /admin/state` (counters), `POST /admin/lifetime?secs=N[&advertised=M]`
//!   (lifetime of the next tokens, and the `expires_in` told to the client if it differs), `POST /admin/revoke-refresh`, `POST /admin/revoke-access`,
//!   `POST /admin/revoke-user?user=U` (that user's access and refresh tokens),
//!   `POST /admin/pkce-methods?methods=A,B` (the metadata's `code_challenge_methods_supported`;
//!   without `methods`, the field is left out).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Form, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What the tests read back.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Counters {
    pub registrations: u32,
    pub authorizations: u32,
    pub code_exchanges: u32,
    pub refreshes: u32,
    pub refused_refreshes: u32,
    pub unauthorized: u32,
    /// `/mcp` requests let through, by the user their token was issued to.
    pub calls_by_user: std::collections::BTreeMap<String, u32>,
}

struct Grant {
    user: String,
    client_id: String,
    challenge: String,
    redirect_uri: String,
}

#[derive(Default)]
struct Inner {
    counters: Counters,
    clients: HashSet<String>,
    codes: HashMap<String, Grant>,
    /// Access token → (expiry, user).
    access: HashMap<String, (Instant, String)>,
    /// Refresh token → user.
    refresh: HashMap<String, String>,
    lifetime_secs: u64,
    /// The `expires_in` told to the client when it differs from the real lifetime: a token
    /// that looks expired to the client while the server still accepts it, so that a test
    /// reaches "at expiry" without waiting for the clock.
    advertised_secs: Option<u64>,
    /// `code_challenge_methods_supported` in the metadata, when changed from `["S256"]`
    /// (`Some(None)`: the field left out).
    pkce_methods: Option<Option<Vec<String>>>,
}

/// The server's state, shared by its handlers.
#[derive(Clone)]
pub struct OAuthServer {
    origin: String,
    inner: Arc<Mutex<Inner>>,
}

fn random() -> String {
    rand::random::<[u8; 16]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl OAuthServer {
    /// A server at `origin` (`http://127.0.0.1:PORT`) whose tokens live `lifetime_secs`.
    pub fn new(origin: &str, lifetime_secs: u64) -> Self {
        Self {
            origin: origin.trim_end_matches('/').to_owned(),
            inner: Arc::new(Mutex::new(Inner {
                lifetime_secs,
                ..Inner::default()
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `mcp` (served at `/mcp`) behind the token check, with the authorization server's
    /// routes beside it.
    pub fn router(&self, mcp: Router) -> Router {
        let guarded = mcp.layer(axum::middleware::from_fn_with_state(self.clone(), guard));
        let oauth: Router = Router::new()
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-protected-resource",
                get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                get(server_metadata),
            )
            .route("/register", post(register))
            .route("/authorize", get(authorize_page))
            .route("/authorize/approve", post(approve))
            .route("/token", post(token))
            .route("/admin/state", get(admin_state))
            .route("/admin/lifetime", post(admin_lifetime))
            .route("/admin/revoke-refresh", post(admin_revoke_refresh))
            .route("/admin/revoke-access", post(admin_revoke_access))
            .route("/admin/revoke-user", post(admin_revoke_user))
            .route("/admin/pkce-methods", post(admin_pkce_methods))
            .with_state(self.clone());
        guarded.merge(oauth)
    }
}

async fn guard(State(server): State<OAuthServer>, request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_owned);
    let user = token.and_then(|token| {
        server
            .lock()
            .access
            .get(&token)
            .filter(|(expires, _)| Instant::now() < *expires)
            .map(|(_, user)| user.clone())
    });
    if let Some(user) = user {
        *server
            .lock()
            .counters
            .calls_by_user
            .entry(user)
            .or_default() += 1;
        return next.run(request).await;
    }
    server.lock().counters.unauthorized += 1;
    let challenge = format!(
        "Bearer error=\"invalid_token\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
        server.origin
    );
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
        Json(json!({"error": "invalid_token"})),
    )
        .into_response()
}

async fn resource_metadata(State(server): State<OAuthServer>) -> Json<Value> {
    Json(json!({
        "resource": format!("{}/mcp", server.origin),
        "authorization_servers": [server.origin],
        "scopes_supported": ["mcp:tools"],
        "bearer_methods_supported": ["header"],
    }))
}

async fn server_metadata(State(server): State<OAuthServer>) -> Json<Value> {
    let o = &server.origin;
    let pkce = server.lock().pkce_methods.clone();
    let mut metadata = json!({
        "issuer": o,
        "authorization_endpoint": format!("{o}/authorize"),
        "token_endpoint": format!("{o}/token"),
        "registration_endpoint": format!("{o}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["mcp:tools", "offline_access"],
        "authorization_response_iss_parameter_supported": true,
    });
    match pkce {
        None => {}
        Some(None) => {
            metadata
                .as_object_mut()
                .map(|m| m.remove("code_challenge_methods_supported"));
        }
        Some(Some(methods)) => metadata["code_challenge_methods_supported"] = json!(methods),
    }
    Json(metadata)
}

async fn register(State(server): State<OAuthServer>, Json(body): Json<Value>) -> Response {
    let redirect_uris = body.get("redirect_uris").cloned().unwrap_or(json!([]));
    let client_id = format!("client-{}", random());
    let mut inner = server.lock();
    inner.counters.registrations += 1;
    inner.clients.insert(client_id.clone());
    (
        StatusCode::CREATED,
        Json(json!({
            "client_id": client_id,
            "redirect_uris": redirect_uris,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        })),
    )
        .into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The login page: what the browser shows, with the request carried in a hidden field.
async fn authorize_page(request: Request) -> Html<String> {
    let query = request.uri().query().unwrap_or_default().to_owned();
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><title>Fake authorization server</title></head><body><main>\
         <h1>Sign in to the fake authorization server</h1>\
         <form method=\"post\" action=\"/authorize/approve\">\
         <input type=\"hidden\" name=\"request\" value=\"{}\">\
         <label>User <input name=\"user\" value=\"tester\"></label>\
         <button type=\"submit\">Approve</button></form></main></body></html>",
        escape(&query)
    ))
}

#[derive(Deserialize)]
struct Approval {
    request: String,
    user: Option<String>,
}

async fn approve(State(server): State<OAuthServer>, Form(form): Form<Approval>) -> Response {
    let params: HashMap<String, String> = url_decode_pairs(&form.request);
    let get = |name: &str| params.get(name).cloned().unwrap_or_default();
    let known = server.lock().clients.contains(&get("client_id"));
    if !known || get("code_challenge_method") != "S256" || get("code_challenge").is_empty() {
        return (
            StatusCode::BAD_REQUEST,
            "unknown client or no S256 challenge",
        )
            .into_response();
    }
    let code = random();
    let redirect = get("redirect_uri");
    {
        let mut inner = server.lock();
        inner.counters.authorizations += 1;
        inner.codes.insert(
            code.clone(),
            Grant {
                user: form
                    .user
                    .clone()
                    .filter(|user| !user.is_empty())
                    .unwrap_or_else(|| "tester".to_owned()),
                client_id: get("client_id"),
                challenge: get("code_challenge"),
                redirect_uri: redirect.clone(),
            },
        );
    }
    let separator = if redirect.contains('?') { '&' } else { '?' };
    let answer = serde_urlencoded::to_string([
        ("code", code.as_str()),
        ("state", get("state").as_str()),
        ("iss", server.origin.as_str()),
    ])
    .unwrap_or_default();
    let location = format!("{redirect}{separator}{answer}");
    (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
}

fn url_decode_pairs(query: &str) -> HashMap<String, String> {
    serde_urlencoded::from_str(query).unwrap_or_default()
}

#[derive(Deserialize)]
struct TokenRequest {
    grant_type: String,
    code: Option<String>,
    code_verifier: Option<String>,
    redirect_uri: Option<String>,
    client_id: Option<String>,
    refresh_token: Option<String>,
    resource: Option<String>,
}

fn token_error(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response()
}

fn issue(inner: &mut Inner, user: String) -> Value {
    let access = format!("at-{}", random());
    let refresh = format!("rt-{}", random());
    let lifetime = inner.lifetime_secs;
    inner.access.insert(
        access.clone(),
        (Instant::now() + Duration::from_secs(lifetime), user.clone()),
    );
    inner.refresh.insert(refresh.clone(), user);
    json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": inner.advertised_secs.unwrap_or(lifetime),
        "refresh_token": refresh,
        "scope": "mcp:tools offline_access",
    })
}

async fn token(State(server): State<OAuthServer>, Form(request): Form<TokenRequest>) -> Response {
    let expected_resource = format!("{}/mcp", server.origin);
    if request.resource.as_deref().map(|r| r.trim_end_matches('/'))
        != Some(expected_resource.as_str())
    {
        return token_error("invalid_target");
    }
    let mut inner = server.lock();
    match request.grant_type.as_str() {
        "authorization_code" => {
            let Some(grant) = request
                .code
                .as_deref()
                .and_then(|code| inner.codes.remove(code))
            else {
                return token_error("invalid_grant");
            };
            let verifier = request.code_verifier.unwrap_or_default();
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(Sha256::digest(verifier.as_bytes()));
            if challenge != grant.challenge
                || request.redirect_uri.as_deref() != Some(grant.redirect_uri.as_str())
                || request.client_id.as_deref() != Some(grant.client_id.as_str())
            {
                return token_error("invalid_grant");
            }
            inner.counters.code_exchanges += 1;
            Json(issue(&mut inner, grant.user)).into_response()
        }
        "refresh_token" => {
            let presented = request.refresh_token.unwrap_or_default();
            let Some(user) = inner.refresh.remove(&presented) else {
                inner.counters.refused_refreshes += 1;
                return token_error("invalid_grant");
            };
            inner.counters.refreshes += 1;
            Json(issue(&mut inner, user)).into_response()
        }
        _ => token_error("unsupported_grant_type"),
    }
}

async fn admin_state(State(server): State<OAuthServer>) -> Json<Counters> {
    Json(server.lock().counters.clone())
}

#[derive(Deserialize)]
struct Lifetime {
    secs: u64,
    advertised: Option<u64>,
}

async fn admin_lifetime(
    State(server): State<OAuthServer>,
    Query(lifetime): Query<Lifetime>,
) -> StatusCode {
    let mut inner = server.lock();
    inner.lifetime_secs = lifetime.secs;
    inner.advertised_secs = lifetime.advertised;
    StatusCode::NO_CONTENT
}

async fn admin_revoke_refresh(State(server): State<OAuthServer>) -> StatusCode {
    server.lock().refresh.clear();
    StatusCode::NO_CONTENT
}

async fn admin_revoke_access(State(server): State<OAuthServer>) -> StatusCode {
    server.lock().access.clear();
    StatusCode::NO_CONTENT
}

#[derive(Deserialize)]
struct User {
    user: String,
}

async fn admin_revoke_user(
    State(server): State<OAuthServer>,
    Query(revoked): Query<User>,
) -> StatusCode {
    let mut inner = server.lock();
    inner.access.retain(|_, (_, user)| *user != revoked.user);
    inner.refresh.retain(|_, user| *user != revoked.user);
    StatusCode::NO_CONTENT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_decode() {
        let pairs = url_decode_pairs("a=1&b=x%20y&c=a+b");
        assert_eq!(pairs.get("b").map(String::as_str), Some("x y"));
        assert_eq!(pairs.get("c").map(String::as_str), Some("a b"));
    }
}

#[derive(Deserialize)]
struct PkceMethods {
    methods: Option<String>,
}

async fn admin_pkce_methods(
    State(server): State<OAuthServer>,
    Query(pkce): Query<PkceMethods>,
) -> StatusCode {
    server.lock().pkce_methods = Some(
        pkce.methods
            .map(|methods| methods.split(',').map(str::to_owned).collect()),
    );
    StatusCode::NO_CONTENT
}
