//! OAuth for remote servers, as an operator drives it:
//! - `POST /api/servers/{server}/oauth/start[?bot=B]` (admin): the authorization URL to open;
//!   with `bot`, the authorization is that bot's own (the per-bot override: the bot's calls
//!   then use it, every other bot keeps the server's);
//! - `GET /api/servers/{server}/oauth` (admin): the server's authorization and the bots'
//!   own ones, with the state of their connections;
//! - `GET /oauth/callback` (public: the browser comes back here from the authorization
//!   server): completes the flow its `state` names, then sends the browser to the dashboard;
//! - `PUT /api/servers/{server}/oauth/client` (admin): a client registered out of band;
//! - `DELETE /api/servers/{server}/oauth[?bot=B]` (admin): forget the server's tokens, or
//!   that bot's own (it then uses the server's again);
//! - `GET /oauth/client-metadata.json` (public): BotCraft's client ID metadata document,
//!   for authorization servers that accept a URL as client id.
//!
//! The callback holds no key, so it can only complete a flow an admin started (its `state`
//! is random, single use and expires). Its page shows the outcome with every value escaped,
//! and never a code or a token.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::routes::servers::{managed_name, status_of};
use crate::state::AppState;

/// `?bot=B`: a bot, by id or name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForBot {
    bot: Option<String>,
}

impl ForBot {
    /// The query, or a 400 naming what is wrong with it. Unknown parameters are refused: a
    /// misspelt `bot` must not authorize (or sign out) the server's own account instead.
    fn from_query(query: Result<Query<Self>, QueryRejection>) -> Result<Self, ApiError> {
        Ok(query?.0)
    }

    /// The bot named, if one is: (id, name).
    async fn resolve(&self, state: &AppState) -> Result<Option<(String, String)>, ApiError> {
        match &self.bot {
            None => Ok(None),
            Some(key) => {
                let bot = crate::routes::chat::find_bot(state, key).await?;
                Ok(Some((bot.id, bot.name)))
            }
        }
    }
}

pub async fn start(
    State(state): State<AppState>,
    Path(key): Path<String>,
    for_bot: Result<Query<ForBot>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let for_bot = ForBot::from_query(for_bot)?;
    let name = managed_name(&state, &key).await?;
    let bot = for_bot.resolve(&state).await?;
    let url = state
        .manager
        .oauth_start_for(&name, bot.as_ref().map(|(id, _)| id.as_str()))
        .await?;
    Ok(Json(match bot {
        None => json!({"server": name, "authorizationUrl": url}),
        Some((_, bot)) => json!({"server": name, "bot": bot, "authorizationUrl": url}),
    }))
}

/// `GET /api/servers/{server}/oauth`: the server's authorization (null when OAuth does not
/// apply or it has none) and each bot's own.
pub async fn status(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let name = managed_name(&state, &key).await?;
    let server = state.manager.oauth_status(&name).await?;
    let mut bots = Vec::new();
    for own in state.manager.principal_authorizations(&name).await? {
        // The manager's principals are bots, by id.
        let bot = state.store.bot(&own.principal).await?;
        bots.push(json!({
            "bot": bot.map(|bot| bot.name),
            "botId": own.principal,
            "authorized": own.authorized,
            "scopes": own.scopes,
            "state": own.state.to_string(),
            "lastError": own.last_error.map(|error| state.config.redactor.redact(&error)),
        }));
    }
    Ok(Json(json!({
        "server": name,
        "authorization": server.map(|server| json!({
            "authorized": server.authorized,
            "scopes": server.scopes,
        })),
        "bots": bots,
    })))
}

/// A client registered out of band at the server's authorization server.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientBody {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
}

/// `PUT /api/servers/{server}/oauth/client`: use this pre-registered client (the secret is
/// sealed with the tokens and never read back).
pub async fn set_client(
    State(state): State<AppState>,
    Path(key): Path<String>,
    body: Result<Json<ClientBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body.map_err(|rejection| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            rejection.body_text(),
        )
    })?;
    let name = managed_name(&state, &key).await?;
    state
        .manager
        .oauth_set_client(&name, &body.client_id, body.client_secret.as_deref())
        .await?;
    Ok(Json(json!({
        "server": name,
        "clientId": body.client_id.trim(),
        "clientSecret": body.client_secret.filter(|s| !s.is_empty()).map(|_| "[hidden]"),
    })))
}

pub async fn sign_out(
    State(state): State<AppState>,
    Path(key): Path<String>,
    for_bot: Result<Query<ForBot>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let for_bot = ForBot::from_query(for_bot)?;
    let name = managed_name(&state, &key).await?;
    let bot = for_bot.resolve(&state).await?;
    state
        .manager
        .oauth_sign_out_for(&name, bot.as_ref().map(|(id, _)| id.as_str()))
        .await?;
    Ok(status_of(&state, &name))
}

/// The authorization server's redirect (RFC 6749 §4.1.2, RFC 9207 `iss`).
#[derive(Debug, Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    iss: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

pub async fn callback(State(state): State<AppState>, Query(query): Query<Callback>) -> Response {
    if let Some(error) = &query.error {
        // Only the redirect of a flow under way is the authorization server's: anyone can
        // link a browser here with an `error` and a text of their own.
        let flow = query.state.as_deref().unwrap_or_default();
        return match state.manager.oauth_refused(flow).await {
            Ok(server) => {
                let detail = query.error_description.as_deref().unwrap_or_default();
                page(
                    StatusCode::BAD_REQUEST,
                    "Authorization refused",
                    &format!(
                        "The authorization server of {server} answered {error}. {detail}",
                        error = printable(error, 64),
                        detail = printable(detail, 500),
                    ),
                )
            }
            Err(_) => page(
                StatusCode::BAD_REQUEST,
                "Authorization refused",
                "This redirect names no authorization under way; start it again from the dashboard.",
            ),
        };
    }
    let (Some(code), Some(flow)) = (&query.code, &query.state) else {
        return page(
            StatusCode::BAD_REQUEST,
            "Authorization incomplete",
            "The redirect carries no code or no state.",
        );
    };
    match state
        .manager
        .oauth_complete(code, flow, query.iss.as_deref())
        .await
    {
        Ok(server) => {
            // A server name is letters, digits, `_`, `-` and `.` (store validation): no
            // encoding needed.
            let location = format!("/?connected={server}");
            (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
        }
        Err(error) => page(
            StatusCode::BAD_REQUEST,
            "Authorization failed",
            &state.config.redactor.redact(&error.to_string()),
        ),
    }
}

/// The client ID metadata document (draft-ietf-oauth-client-id-metadata-document): served
/// when BotCraft has a public HTTPS address, whose `/oauth/client-metadata.json` is then its
/// client id.
pub async fn client_metadata(State(state): State<AppState>) -> Result<Response, ApiError> {
    let Some(document) = state.config.oauth_client_metadata.as_ref() else {
        return Err(ApiError::not_found(
            "no_client_metadata",
            "BotCraft has no public HTTPS address (BOTCRAFT_PUBLIC_URL), so it has no client ID metadata document",
        ));
    };
    // Public and the same for everyone: authorization servers may keep it a while.
    Ok((
        [(header::CACHE_CONTROL, "public, max-age=300")],
        Json(document.clone()),
    )
        .into_response())
}

/// The client ID metadata document of a BotCraft reached at `public_url` (HTTPS only).
pub fn client_metadata_document(public_url: &str, client_name: &str) -> Option<Value> {
    let base = public_url.trim_end_matches('/');
    if !base.starts_with("https://") {
        return None;
    }
    Some(json!({
        "client_id": format!("{base}/oauth/client-metadata.json"),
        "client_name": client_name,
        "client_uri": base,
        "redirect_uris": [format!("{base}/oauth/callback")],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "web",
    }))
}

fn escape(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&#39;".to_owned(),
            other => other.to_string(),
        })
        .collect()
}

/// At most `max` characters of `text`, control characters left out.
fn printable(text: &str, max: usize) -> String {
    text.chars()
        // Characters that reorder or hide what follows: an authorization server's text
        // must read on BotCraft's page as it was sent.
        .filter(|&c| !c.is_control() && !observability::shown::invisible(c))
        .take(max)
        .collect()
}

/// A page of its own on BotCraft's origin: nothing loaded, not framed, not sniffed.
const PAGE_SECURITY_POLICY: &str =
    "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn page(status: StatusCode, title: &str, message: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><main><h1>{title}</h1><p role=\"alert\">{message}</p><p><a href=\"/\">Back to the dashboard</a></p></main></body></html>",
        title = escape(title),
        message = escape(message),
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, PAGE_SECURITY_POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn an_authorization_servers_text_is_shown_as_sent() {
        assert_eq!(
            printable("access_denied\r\n\u{202e}yek ruoy retne\u{200b} now", 500),
            "access_deniedyek ruoy retne now"
        );
        assert_eq!(printable("\u{2066}a\u{2069}b\u{e0041}c", 500), "abc");
        assert_eq!(printable("é漢 text", 3), "é漢 ");
    }

    #[test]
    fn the_client_metadata_document_is_for_https_only() {
        assert_eq!(
            client_metadata_document("http://127.0.0.1:3000", "BotCraft"),
            None
        );
        let document =
            client_metadata_document("https://bots.example.com/", "BotCraft").expect("https");
        assert_eq!(
            document["client_id"],
            "https://bots.example.com/oauth/client-metadata.json"
        );
        assert_eq!(
            document["redirect_uris"],
            json!(["https://bots.example.com/oauth/callback"])
        );
    }

    #[test]
    fn the_callback_page_escapes_what_it_shows() {
        assert_eq!(
            escape("<script>alert('x')</script>&"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;"
        );
    }
}
