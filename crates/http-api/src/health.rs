//! `GET /api/health`, as the seed's §10.4 has it: `status` is `healthy` when every always-on
//! server is running and `degraded` otherwise; `mcpServers` maps each server's name to its
//! `state`, `alwaysOn`, `pid`, `uptime` (whole seconds, `null` when not running), `restarts`,
//! `toolCount`, `toolsListed` (whether its tools are listed for its current config; `null`
//! before the first look) and `lastError`; `toolsNotListed` counts the servers whose tools
//! are not (yet) known; `toolSearch` says how `tool_search` ranks: `{"mode": "bm25"}`
//! without an embedding model, `{"mode": "hybrid", "model", "modelId", "dimensions"}` with one.
//! Always 200, and it shows no environment values: errors name variables, never their values.
//!
//! Public (no key) it says only what a load balancer or a status page needs: `status`, each
//! server's `state` and `alwaysOn`, and `toolSearch.mode`. With an accepted bearer key it is
//! the whole document: pids, uptimes and last errors (which name paths and variables) are
//! for operators, not for whoever can reach the port.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use chat_tools::SearchState;
use mcp_lifecycle::{ServerState, ServerStatus};
use serde_json::{Map, Value, json};

use crate::state::AppState;

/// One server's entry.
pub fn status_json(status: &ServerStatus) -> Value {
    json!({
        "state": status.state.to_string(),
        "alwaysOn": status.always_on,
        "transport": status.transport,
        "url": status.url,
        "pid": status.pid,
        "uptime": status.uptime.map(|uptime| uptime.as_secs()),
        "restarts": status.restarts,
        "toolCount": status.tool_count,
        "toolsListed": status.tools_listed,
        "lastError": status.last_error,
    })
}

/// `toolSearch`: how `tool_search` ranks, and the build under way, if any.
fn search_json(search: &SearchState) -> Value {
    let mut value = json!(search.mode);
    if let (Some(building), Some(map)) = (search.building, value.as_object_mut()) {
        map.insert("building".to_owned(), json!(building));
    }
    value
}

/// The health document of these statuses.
pub fn health_report(statuses: &[ServerStatus], search: &SearchState, sandbox: &str) -> Value {
    let healthy = statuses
        .iter()
        .filter(|status| status.always_on)
        .all(|status| status.state == ServerState::Running);
    let servers: Map<String, Value> = statuses
        .iter()
        .map(|status| (status.name.clone(), status_json(status)))
        .collect();
    let not_listed = statuses
        .iter()
        .filter(|status| status.tools_listed != Some(true))
        .count();
    json!({
        "status": if healthy { "healthy" } else { "degraded" },
        "toolsNotListed": not_listed,
        "mcpServers": servers,
        "toolSearch": search_json(search),
        "sandbox": sandbox,
    })
}

/// What an unauthenticated caller sees of `report`: the overall state, each server's state.
pub fn public_report(report: &Value) -> Value {
    let servers: Map<String, Value> = report["mcpServers"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, server)| {
            (
                name.clone(),
                json!({"state": server["state"], "alwaysOn": server["alwaysOn"]}),
            )
        })
        .collect();
    json!({
        "status": report["status"],
        "toolsNotListed": report["toolsNotListed"],
        "mcpServers": servers,
        "toolSearch": public_search(&report["toolSearch"]),
        "sandbox": report["sandbox"],
    })
}

/// The public part of `toolSearch`: the mode, and a build's counts while it embeds.
fn public_search(search: &Value) -> Value {
    let mut public = json!({"mode": search["mode"]});
    if let (Some(building), Some(map)) = (search.get("building"), public.as_object_mut()) {
        map.insert("building".to_owned(), building.clone());
    }
    public
}

pub async fn health(State(state): State<AppState>, headers: HeaderMap) -> Json<Value> {
    let report = health_report(
        &state.manager.get_all_statuses(),
        &state.config.catalogs.search_state(),
        state.manager.sandbox_state(),
    );
    // Details need an admin key; a failing key check shows the public report.
    let authorized = crate::auth::caller_of_headers(&state, &headers)
        .await
        .ok()
        .flatten()
        .is_some_and(|caller| caller.role == crate::auth::Role::Admin);
    Json(if authorized {
        report
    } else {
        public_report(&report)
    })
}

/// `GET /api/health/live`: BotCraft's process answers (Kubernetes' liveness). Always 200.
pub async fn live() -> Json<Value> {
    Json(json!({"status": "alive"}))
}

/// `GET /api/health/ready`: every always-on server is running (Kubernetes' readiness): 200
/// with the public report, else 503 with it. A replica that is going away answers 503
/// `{"status": "draining"}`, so a load balancer sends it nothing new.
pub async fn ready(State(state): State<AppState>) -> axum::response::Response {
    use axum::response::IntoResponse;
    if state.config.draining.is_cancelled() {
        return (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "draining"})),
        )
            .into_response();
    }
    let report = public_report(&health_report(
        &state.manager.get_all_statuses(),
        &state.config.catalogs.search_state(),
        state.manager.sandbox_state(),
    ));
    let status = if report["status"] == "healthy" {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(report)).into_response()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use pretty_assertions::assert_eq;
    use search_index::{BuildProgress, SearchMode};

    fn bm25() -> SearchState {
        SearchState {
            mode: SearchMode::Bm25,
            building: None,
        }
    }

    fn status(name: &str, state: ServerState, always_on: bool) -> ServerStatus {
        ServerStatus {
            transport: "stdio",
            url: None,
            name: name.into(),
            state,
            always_on,
            pid: (state == ServerState::Running).then_some(42),
            uptime: (state == ServerState::Running).then_some(Duration::from_millis(2500)),
            restarts: 0,
            tool_count: Some(1),
            last_error: None,
            tools_listed: Some(true),
        }
    }

    #[test]
    fn status_is_degraded_only_when_an_always_on_server_is_not_running() {
        let cases = [
            (vec![], "healthy"),
            (vec![status("a", ServerState::Running, true)], "healthy"),
            (
                vec![
                    status("a", ServerState::Running, true),
                    status("lazy", ServerState::Stopped, false),
                ],
                "healthy",
            ),
            (
                vec![
                    status("a", ServerState::Running, true),
                    status("b", ServerState::Error, true),
                ],
                "degraded",
            ),
            (vec![status("a", ServerState::Starting, true)], "degraded"),
        ];
        for (statuses, expected) in cases {
            assert_eq!(
                health_report(&statuses, &bm25(), "off")["status"],
                expected,
                "{statuses:?}"
            );
        }
    }

    #[test]
    fn each_server_reports_its_state_and_counters() {
        let report = health_report(
            &[status("a", ServerState::Running, true)],
            &bm25(),
            "landlock",
        );
        assert_eq!(
            report,
            json!({
                "status": "healthy",
                "toolsNotListed": 0,
                "mcpServers": {"a": {
                    "state": "running", "alwaysOn": true, "transport": "stdio", "url": null,
                    "pid": 42, "uptime": 2,
                    "restarts": 0, "toolCount": 1, "toolsListed": true, "lastError": null,
                }},
                "toolSearch": {"mode": "bm25"},
                "sandbox": "landlock",
            })
        );
    }

    #[test]
    fn the_public_report_shows_states_only() {
        let mut failing = status("b", ServerState::Error, false);
        failing.last_error = Some("WORKSPACE_ROOT /srv/secret-path does not exist".into());
        failing.tools_listed = Some(false);
        let report = health_report(
            &[status("a", ServerState::Running, true), failing],
            &bm25(),
            "unavailable",
        );
        assert_eq!(
            public_report(&report),
            json!({
                "status": "healthy",
                "toolsNotListed": 1,
                "mcpServers": {
                    "a": {"state": "running", "alwaysOn": true},
                    "b": {"state": "error", "alwaysOn": false},
                },
                "toolSearch": {"mode": "bm25"},
                "sandbox": "unavailable",
            })
        );
    }

    #[test]
    fn a_build_embedding_tools_shows_its_counts_to_everyone() {
        let search = SearchState {
            mode: SearchMode::Hybrid {
                model: "/models/m".into(),
                model_id: "abc".into(),
                dimensions: 384,
            },
            building: Some(BuildProgress {
                embedded: 1200,
                total: 10_000,
            }),
        };
        let report = health_report(&[], &search, "off");
        assert_eq!(
            report["toolSearch"],
            json!({"mode": "hybrid", "model": "/models/m", "modelId": "abc", "dimensions": 384,
                   "building": {"embedded": 1200, "total": 10000}})
        );
        assert_eq!(
            public_report(&report)["toolSearch"],
            json!({"mode": "hybrid", "building": {"embedded": 1200, "total": 10000}})
        );
    }
}
