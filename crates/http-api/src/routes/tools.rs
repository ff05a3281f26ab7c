//! `GET /api/tools/search?q=TEXT[&limit=1..50][&server=NAME]…[&bot=BOT]` — the tool
//! catalog searched the way `tool_search` ranks it (exact or near-exact tool names first,
//! then BM25), for the dashboard and `botcraft tools search`.
//!
//! The catalog is the manager's cached tool lists, so a search never starts a server: every
//! configured server whose tools were ever listed, or with `bot=` the tools that bot may use
//! (its enabled bindings cut to their tool filters; a chat key made for one bot searches that
//! bot's alone, and another's answers as an unknown bot). Qualified names are those a chat turn
//! uses (the bot's, or with no bot a naming over every server). `limit` defaults to 10;
//! `server` may repeat. The answer is
//! `{"query", "truncated", "results": [{"server", "tool", "qualifiedName", "description",
//! "score", "tier"}]}`, best first; an empty `q` or a bad `limit` is a 400.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::{Extension, Json};
use tool_search::SearchQuery;
use toolset::ListPolicy;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::chat::find_bot;
use crate::state::AppState;
use chat_tools::SearchAnswer;
use chat_tools::executor::catalog_entries;

/// Results when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 10;

/// The query string, with `server` repeatable.
#[derive(Debug, Default, PartialEq, Eq)]
struct SearchParams {
    q: String,
    limit: usize,
    servers: Vec<String>,
    bot: Option<String>,
}

impl SearchParams {
    fn parse(pairs: Vec<(String, String)>) -> Result<Self, ApiError> {
        let mut params = Self {
            limit: DEFAULT_LIMIT,
            ..Self::default()
        };
        for (key, value) in pairs {
            match key.as_str() {
                "q" => params.q = value,
                "limit" => {
                    params.limit = value
                        .parse()
                        .ok()
                        .filter(|limit| (1..=50).contains(limit))
                        .ok_or_else(|| {
                            ApiError::bad_request(
                                "bad_limit",
                                format!("limit must be a number from 1 to 50, got {value:?}"),
                            )
                        })?;
                }
                "server" => params.servers.push(value),
                "bot" => params.bot = Some(value),
                _ => {}
            }
        }
        if params.q.trim().is_empty() {
            return Err(ApiError::bad_request(
                "bad_query",
                "q is empty: say what the tool should do, e.g. q=read%20a%20file",
            ));
        }
        Ok(params)
    }
}

pub async fn search(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Json<SearchAnswer>, ApiError> {
    let Query(pairs) =
        query.map_err(|error| ApiError::bad_request("bad_query", error.body_text()))?;
    let mut params = SearchParams::parse(pairs)?;
    // A chat key for one bot searches that bot's tools, whether it names the bot or not.
    if params.bot.is_none() {
        params.bot.clone_from(&caller.bot_id);
    }
    let (scope, toolset) = match &params.bot {
        Some(key) => {
            let bot = find_bot(&state, key).await?;
            caller.check_bot(key, &bot)?;
            let toolset = state.toolsets.load(&bot.id, ListPolicy::CachedOnly).await?;
            (chat_tools::catalogs::bot_scope(&toolset.bot_id), toolset)
        }
        None => (
            "*".to_owned(),
            state.toolsets.everything(ListPolicy::CachedOnly).await?,
        ),
    };
    let entries = catalog_entries(&toolset);
    let index = state.config.catalogs.search_index(&scope, entries).await;
    let query = SearchQuery::new(params.q)
        .servers(params.servers)
        .max_results(params.limit);
    let answer = index
        .search(query)
        .await
        .map_err(|error| ApiError::bad_request("bad_query", error.to_string()))?;
    Ok(Json(answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn params_parse_with_repeated_servers_and_refuse_bad_values() {
        let parsed = SearchParams::parse(pairs(&[
            ("q", "read a file"),
            ("limit", "3"),
            ("server", "a"),
            ("server", "b"),
            ("bot", "forge"),
        ]))
        .expect("valid");
        assert_eq!(
            parsed,
            SearchParams {
                q: "read a file".into(),
                limit: 3,
                servers: vec!["a".into(), "b".into()],
                bot: Some("forge".into()),
            }
        );
        assert_eq!(
            SearchParams::parse(pairs(&[("q", "x")]))
                .expect("valid")
                .limit,
            DEFAULT_LIMIT
        );
        let refused = [
            (pairs(&[]), "bad_query"),
            (pairs(&[("q", "  ")]), "bad_query"),
            (pairs(&[("q", "x"), ("limit", "0")]), "bad_limit"),
            (pairs(&[("q", "x"), ("limit", "51")]), "bad_limit"),
            (pairs(&[("q", "x"), ("limit", "ten")]), "bad_limit"),
        ];
        for (input, code) in refused {
            let error = SearchParams::parse(input.clone()).expect_err("refused");
            assert_eq!(error.code, code, "{input:?}");
        }
    }
}
