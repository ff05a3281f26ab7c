//! A fake Typesense (axum on 127.0.0.1:0) for what a real one will not do on
//! demand: odd payloads, 500s, hangs. It answers every request with one
//! configured reply and records what it was sent.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

#[derive(Debug, Clone)]
pub enum Reply {
    /// Answer with this status and body (`application/json`).
    With { status: u16, body: String },
    /// Accept the request and never answer.
    Hang,
    /// Answer `302 Found` to this location.
    Redirect(String),
}

impl Reply {
    pub fn json(value: Value) -> Reply {
        Reply::With {
            status: 200,
            body: value.to_string(),
        }
    }
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub path_and_query: String,
    pub api_key: Option<String>,
    pub body: Value,
}

#[derive(Clone)]
struct Shared {
    reply: Reply,
    received: Arc<Mutex<Vec<Received>>>,
}

pub struct FakeTypesense {
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeTypesense {
    pub async fn start(reply: Reply) -> FakeTypesense {
        let received = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            reply,
            received: Arc::clone(&received),
        };
        let app = Router::new().fallback(answer).with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeTypesense {
            url,
            received,
            task,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Drop for FakeTypesense {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    State(shared): State<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received = Received {
        path_and_query: uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
        api_key: headers
            .get("x-typesense-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    if let Ok(mut all) = shared.received.lock() {
        all.push(received);
    }
    match shared.reply {
        Reply::With { status, body } => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            [("content-type", "application/json")],
            body,
        )
            .into_response(),
        Reply::Hang => std::future::pending().await,
        Reply::Redirect(location) => (StatusCode::FOUND, [("location", location)]).into_response(),
    }
}
