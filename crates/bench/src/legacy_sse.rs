//! The HTTP+SSE transport of MCP 2024-11-05, client side, for servers that serve
//! nothing newer (rmcp 3.x has no client for it): `GET URL` opens an event stream
//! whose first `endpoint` event names where to POST; every answer arrives on the
//! stream as a `message` event.

use std::io;
use std::time::Duration;

use anyhow::Context;
use http::HeaderMap;
use http::header::ACCEPT;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

pub struct LegacySseTransport {
    client: reqwest::Client,
    post_url: reqwest::Url,
    headers: HeaderMap,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: JoinHandle<()>,
}

impl LegacySseTransport {
    pub async fn connect(url: &str, headers: HeaderMap) -> anyhow::Result<Self> {
        let client = reqwest::Client::new();
        let response = client
            .get(url)
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .with_context(|| format!("GET {url}"))?
            .error_for_status()?;
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let (messages_tx, incoming) = mpsc::channel(64);
        let reader = tokio::spawn(read_events(response, endpoint_tx, messages_tx));
        let endpoint = tokio::time::timeout(Duration::from_secs(10), endpoint_rx)
            .await
            .context("no `endpoint` event within 10 s")?
            .context("the event stream ended before its `endpoint` event")?;
        let post_url = reqwest::Url::parse(url)?
            .join(&endpoint)
            .with_context(|| format!("bad endpoint {endpoint:?}"))?;
        Ok(Self {
            client,
            post_url,
            headers,
            incoming,
            reader,
        })
    }
}

/// Parse the event stream: the first `endpoint` event goes to `endpoint`, each
/// `message` event's data (a JSON-RPC message) to `messages`.
async fn read_events(
    mut response: reqwest::Response,
    endpoint: oneshot::Sender<String>,
    messages: mpsc::Sender<ServerJsonRpcMessage>,
) {
    let mut endpoint = Some(endpoint);
    let mut buffer: Vec<u8> = Vec::new();
    let (mut event, mut data) = (String::new(), String::new());
    while let Ok(Some(chunk)) = response.chunk().await {
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let raw: Vec<u8> = buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&raw);
            let line = line.trim_end_matches(['\n', '\r']);
            if !line.is_empty() {
                if let Some(value) = line.strip_prefix("event:") {
                    event = value.trim().to_owned();
                } else if let Some(value) = line.strip_prefix("data:") {
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(value.strip_prefix(' ').unwrap_or(value));
                }
                continue;
            }
            if event == "endpoint" {
                if let Some(tx) = endpoint.take() {
                    let _ = tx.send(data.clone());
                }
            } else if (event.is_empty() || event == "message")
                && let Ok(message) = serde_json::from_str(&data)
                && messages.send(message).await.is_err()
            {
                return;
            }
            event.clear();
            data.clear();
        }
    }
}

impl Transport<RoleClient> for LegacySseTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .client
            .post(self.post_url.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            request
                .send()
                .await
                .and_then(reqwest::Response::error_for_status)
                .map_err(io::Error::other)?;
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}
