//! `/api/bots…` — bots (CRUD with the store's validation, plus a model string that the
//! inference layer can read), their bindings to MCP servers, and the tools a bot's turn
//! would offer (native and qualified MCP names). `{bot}` and `{server}` are ids or names.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use inference::ModelSpec;
use serde::Deserialize;
use serde_json::{Value, json};
use store::{BindingSpec, BotSpec};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::chat::find_bot;
use crate::routes::servers::find_server;
use crate::state::AppState;
use chat_tools::executor::definitions;
use toolset::ListPolicy;

fn check_model(spec: &BotSpec) -> Result<(), ApiError> {
    ModelSpec::parse(&spec.model).map(|_| ()).map_err(|error| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            error.to_string(),
        )
    })
}

/// Every bot, or the one bot a chat key is for.
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Value>, ApiError> {
    let mut bots = state.store.bots().await?;
    bots.retain(|bot| caller.may_use(bot));
    Ok(Json(serde_json::to_value(bots).unwrap_or(Value::Null)))
}

pub async fn create(
    State(state): State<AppState>,
    body: Result<Json<BotSpec>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(spec) = body?;
    check_model(&spec)?;
    let bot = state.store.create_bot(&spec).await?;
    Ok((StatusCode::CREATED, Json(bot)).into_response())
}

pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(key): Path<String>,
) -> Result<Json<store::Bot>, ApiError> {
    let bot = find_bot(&state, &key).await?;
    caller.check_bot(&key, &bot)?;
    Ok(Json(bot))
}

pub async fn update(
    State(state): State<AppState>,
    Path(key): Path<String>,
    body: Result<Json<BotSpec>, JsonRejection>,
) -> Result<Json<store::Bot>, ApiError> {
    let Json(spec) = body?;
    check_model(&spec)?;
    let bot = find_bot(&state, &key).await?;
    Ok(Json(state.store.update_bot(&bot.id, &spec).await?))
}

pub async fn delete(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<StatusCode, ApiError> {
    let bot = find_bot(&state, &key).await?;
    state.store.delete_bot(&bot.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The bot's bindings, each with its server's id and name.
pub async fn bindings(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let bot = find_bot(&state, &key).await?;
    let bound = state.store.bound_servers(&bot.id).await?;
    let list: Vec<Value> = bound
        .iter()
        .map(|bound| {
            json!({
                "server": {"id": bound.server.id, "name": bound.server.name},
                "enabled": bound.binding.enabled,
                "toolFilter": bound.binding.tool_filter,
                "pinnedTools": bound.binding.pinned_tools,
                "approval": bound.binding.approval,
            })
        })
        .collect();
    Ok(Json(Value::Array(list)))
}

/// The body of a binding; every field optional.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BindingBody {
    #[serde(default = "enabled_default")]
    pub enabled: bool,
    #[serde(default)]
    pub tool_filter: Vec<String>,
    #[serde(default)]
    pub pinned_tools: Vec<String>,
    /// `"never"` (default), `"always"`, `"writes"` or a list of tool-name globs.
    #[serde(default)]
    pub approval: store::ApprovalPolicy,
}

fn enabled_default() -> bool {
    true
}

/// Bind the bot to the server, or replace the binding of that pair.
pub async fn bind(
    State(state): State<AppState>,
    Path((bot_key, server_key)): Path<(String, String)>,
    body: Result<Json<BindingBody>, JsonRejection>,
) -> Result<Json<store::BotMcpServer>, ApiError> {
    let Json(body) = body?;
    let bot = find_bot(&state, &bot_key).await?;
    let server = find_server(&state.store, &server_key).await?;
    let spec = BindingSpec {
        enabled: body.enabled,
        tool_filter: body.tool_filter,
        pinned_tools: body.pinned_tools,
        approval: body.approval,
    };
    Ok(Json(state.store.bind(&bot.id, &server.id, &spec).await?))
}

pub async fn unbind(
    State(state): State<AppState>,
    Path((bot_key, server_key)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let bot = find_bot(&state, &bot_key).await?;
    let server = find_server(&state.store, &server_key).await?;
    if state.store.unbind(&bot.id, &server.id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(
            "unknown_binding",
            format!("bot {:?} is not bound to {:?}", bot.name, server.name),
        ))
    }
}

/// The tools a turn of this bot offers: native tools, then MCP tools under their qualified
/// names with where they route; servers that could not list their tools are reported.
pub async fn tools(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let bot = find_bot(&state, &key).await?;
    caller.check_bot(&key, &bot)?;
    let toolset = state.toolsets.load(&bot.id, ListPolicy::CachedOnly).await?;
    let native: Vec<Value> = state
        .native
        .definitions()
        .into_iter()
        .map(|tool| {
            let read_only = state.native.get(&tool.name).is_some_and(|t| t.read_only());
            json!({
                "name": tool.name,
                "description": tool.description,
                "asksApproval": tool.name != inference::TOOL_SEARCH
                    && bot.native_tool_approval.asks(&tool.name, read_only),
            })
        })
        .collect();
    let mcp: Vec<Value> = definitions(&toolset)
        .iter()
        .filter_map(|tool| {
            let route = toolset.names.resolve(&tool.name)?;
            Some(json!({
                "name": tool.name,
                "server": route.server,
                "tool": route.tool,
                "description": tool.description,
                "asksApproval": toolset.resolve(&tool.name).is_some_and(|t| t.asks_approval),
            }))
        })
        .collect();
    let unavailable: Vec<Value> = toolset
        .unavailable
        .iter()
        .map(|server| json!({"server": server.server, "reason": server.reason}))
        .collect();
    Ok(Json(json!({
        "bot": bot.name,
        "native": native,
        "mcp": mcp,
        "unavailable": unavailable,
    })))
}
