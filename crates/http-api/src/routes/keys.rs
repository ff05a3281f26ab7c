//! `/api/keys` (admin only): the store's keys. A key is shown once, in the answer that
//! creates it; lists show names, roles, bots and times, never a key or its digest.
//! `/api/whoami` (any API key): the caller's role and key name, so a client (the dashboard)
//! can tell a chat key from an admin key without trying admin routes.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{Value, json};
use store::{ApiKey, ApiKeySpec};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<ApiKey>>, ApiError> {
    Ok(Json(state.store.api_keys().await?))
}

pub async fn create(
    State(state): State<AppState>,
    body: Result<Json<ApiKeySpec>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(spec) = body?;
    let created = state.store.create_api_key(&spec).await?;
    tracing::info!(key = %created.key.name, role = created.key.role.as_str(), "key created");
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

pub async fn revoke(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<ApiKey>, ApiError> {
    let revoked = state.store.revoke_api_key(&name).await?;
    tracing::info!(key = %revoked.name, "key revoked");
    Ok(Json(revoked))
}

pub async fn whoami(Extension(caller): Extension<Caller>) -> Json<Value> {
    match &caller.bot {
        Some(bot) => Json(json!({"role": caller.role.as_str(), "name": caller.name, "bot": bot})),
        None => Json(json!({"role": caller.role.as_str(), "name": caller.name})),
    }
}
