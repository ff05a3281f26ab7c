//! `GET /api/openapi.json`: the OpenAPI 3.1 document of every route, hand-written in
//! `src/openapi.json`. The tests below compare it with the routes the router actually
//! registers (method, path, which key: none, chat or admin) and resolve every `$ref`, so the
//! document cannot drift from the code.

use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;

/// The document, as served.
pub const OPENAPI_JSON: &str = include_str!("openapi.json");

pub async fn document() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], OPENAPI_JSON)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use pretty_assertions::assert_eq;
    use serde_json::Value;

    use super::OPENAPI_JSON;
    use crate::routes::RouteSpec;

    const METHODS: [&str; 4] = ["get", "post", "put", "delete"];

    fn documented(doc: &Value) -> BTreeSet<(String, String, String)> {
        let mut routes = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for method in METHODS {
                if let Some(op) = item.get(method) {
                    // `security: []` marks a public route; otherwise the global bearer applies,
                    // with an admin key unless `x-botcraft-access` says a chat key is enough.
                    let public = op.get("security") == Some(&Value::Array(Vec::new()));
                    let access = match (public, op["x-botcraft-access"].as_str()) {
                        (true, _) => "public",
                        (false, Some(access)) => access,
                        (false, None) => "admin",
                    };
                    routes.insert((method.to_uppercase(), path.clone(), access.to_owned()));
                }
            }
        }
        routes
    }

    fn refs(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    match (key.as_str(), inner) {
                        ("$ref", Value::String(target)) => found.push(target.clone()),
                        _ => refs(inner, found),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| refs(item, found)),
            _ => {}
        }
    }

    #[tokio::test]
    async fn document_lists_exactly_the_routes_the_router_serves() -> anyhow::Result<()> {
        let doc: Value = serde_json::from_str(OPENAPI_JSON)?;
        let state = crate::testing::state().await?;
        let (_, routes) = crate::routes::app_with_routes(state);
        let served: BTreeSet<(String, String, String)> = routes
            .iter()
            .map(
                |RouteSpec {
                     method,
                     path,
                     access,
                 }| {
                    (
                        (*method).to_owned(),
                        (*path).to_owned(),
                        access.as_str().to_owned(),
                    )
                },
            )
            .collect();
        assert_eq!(documented(&doc), served);
        Ok(())
    }

    #[test]
    fn every_reference_resolves() -> anyhow::Result<()> {
        let doc: Value = serde_json::from_str(OPENAPI_JSON)?;
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(!found.is_empty());
        for target in found {
            let pointer = target.trim_start_matches('#');
            assert!(doc.pointer(pointer).is_some(), "dangling $ref {target}");
        }
        Ok(())
    }
}
