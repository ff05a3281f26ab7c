//! `GET /metrics`: the registry in the Prometheus text format, for any router's state.

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use crate::encode::CONTENT_TYPE;
use crate::registry::Registry;

/// A router serving `GET /metrics` from `registry`; merge it into the app's router.
pub fn metrics_router<S>(registry: Registry) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(registry)
}

async fn scrape(State(registry): State<Registry>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], registry.encode())
}
