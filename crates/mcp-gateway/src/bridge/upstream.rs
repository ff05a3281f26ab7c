//! The bridge's client of BotCraft's `/mcp`: a small streamable HTTP client, written for the
//! bridge's one job (initialize once, then `tools/list` and `tools/call`) so every way it can
//! fail is a typed [`UpstreamError`] with its reason code. A plain `http://` endpoint with no
//! proxy named in the environment is reached over kept-alive HTTP/1.1 connections of our own
//! ([`super::plain_http`]); every other endpoint (https, a proxy) through `reqwest`.
//!
//!
//! | failure | error | reason |
//! |---|---|---|
//! | connect error, timeout, the connection dropped | `Unreachable` | `upstream_unreachable` |
//! | a status other than 2xx (401 wrong key, 500 …) | `HttpStatus` | `upstream_http_error` |
//! | a body that is not the JSON-RPC answer expected | `BadPayload` | `upstream_bad_payload` |
//! | a JSON-RPC error answer | `Rpc` | `tool_error` |
//!
//! The session id of `initialize` is kept for later calls; a 404 on a kept session (BotCraft
//! restarted) drops it and the request is retried once on a new session.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hyper::body::Bytes;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use rmcp::model::{CallToolResult, ClientRequest, JsonObject, Tool};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use server_kit::ReasonCode;
use tokio::sync::Mutex;
use tracing::Instrument as _;

use crate::auth::SESSION_HEADER;
use crate::bridge::plain_http::{PlainAnswer, PlainHttp, PlainHttpError, PlainTarget};

/// The protocol revision the bridge speaks to BotCraft.
pub const UPSTREAM_PROTOCOL: &str = "2025-11-25";

/// Longest wait to open a connection to BotCraft.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest part of an unexpected body quoted in an error.
const BODY_PREVIEW_CHARS: usize = 200;

/// A failed exchange with BotCraft.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("cannot reach BotCraft at {endpoint}: {source}")]
    Unreachable {
        endpoint: String,
        #[source]
        source: HttpFailure,
    },
    #[error("no answer from BotCraft at {endpoint} within {timeout:?}")]
    TimedOut { endpoint: String, timeout: Duration },
    #[error("BotCraft answered HTTP {status} to {method}: {body}")]
    HttpStatus {
        method: &'static str,
        status: StatusCode,
        body: String,
    },
    #[error("BotCraft's answer to {method} is not what MCP expects: {what}")]
    BadPayload { method: &'static str, what: String },
    #[error("BotCraft refused {method}: {message} (JSON-RPC error {code})")]
    Rpc {
        method: &'static str,
        code: i64,
        message: String,
    },
}

/// What failed under an [`UpstreamError::Unreachable`]: the client that carried the request.
#[derive(Debug, thiserror::Error)]
pub enum HttpFailure {
    #[error(transparent)]
    Reqwest(#[from] reqwest::Error),
    #[error(transparent)]
    Plain(#[from] PlainHttpError),
}

impl UpstreamError {
    pub fn reason(&self) -> ReasonCode {
        match self {
            Self::Unreachable { .. } | Self::TimedOut { .. } => ReasonCode::UpstreamUnreachable,
            Self::HttpStatus { .. } => ReasonCode::UpstreamHttpError,
            Self::BadPayload { .. } => ReasonCode::UpstreamBadPayload,
            Self::Rpc { .. } => ReasonCode::ToolError,
        }
    }

    fn is_stale_session(&self) -> bool {
        matches!(self, Self::HttpStatus { status, .. } if *status == StatusCode::NOT_FOUND)
    }
}

/// Where BotCraft is and how to ask it (its `Debug` shows no key).
#[derive(Clone)]
pub struct UpstreamConfig {
    /// BotCraft's base URL (`https://botcraft.example`) or its `/mcp` endpoint.
    pub url: String,
    /// A bot key.
    pub api_key: String,
    /// Longest wait for one answer (a tool call included).
    pub timeout: Duration,
    /// An HTTP proxy is named in the environment (`HTTP_PROXY`, `ALL_PROXY`, either case):
    /// every endpoint then goes through reqwest, which uses it. (These variables are the
    /// only proxies reqwest reads here: its `system-proxy` feature, which would read
    /// macOS's and Windows' settings, is off; turning it on would need this check too.)
    pub proxy_in_env: bool,
}

impl UpstreamConfig {
    /// Whether `env` names an HTTP proxy (the variables reqwest reads for `http://` URLs).
    pub fn proxy_named(env: impl Fn(&str) -> Option<String>) -> bool {
        ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
            .iter()
            .any(|name| env(name).is_some())
    }
}

impl std::fmt::Debug for UpstreamConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamConfig")
            .field("url", &mcp_client::shown_url(&self.url))
            .field("api_key", &"<redacted>")
            .field("timeout", &self.timeout)
            .field("proxy_in_env", &self.proxy_in_env)
            .finish()
    }
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("endpoint", &mcp_client::shown_url(&self.endpoint))
            .field("api_key", &"<redacted>")
            .field("timeout", &self.timeout)
            .field("plain_http", &self.plain.is_some())
            .finish_non_exhaustive()
    }
}

/// The endpoint for `url`: `/mcp` appended unless the URL already ends with it.
pub fn endpoint_of(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    if trimmed.ends_with("/mcp") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/mcp")
    }
}

/// A client of one BotCraft `/mcp` endpoint, as one bot (its `Debug` shows no key).
pub struct Upstream {
    http: reqwest::Client,
    /// Set for a plain `http://` endpoint with no proxy in the environment: used instead of
    /// `http`.
    plain: Option<PlainHttp>,
    endpoint: String,
    /// `endpoint`, parsed once (not on every request); `None` when it does not parse, and the
    /// request then fails as reqwest fails it.
    endpoint_url: Option<reqwest::Url>,
    api_key: String,
    /// `Bearer <key>`, made once and marked sensitive (kept out of debug output).
    authorization: Option<reqwest::header::HeaderValue>,
    timeout: Duration,
    session: Mutex<Option<String>>,
    next_id: AtomicU64,
}

/// What `initialize` and `tools/list` answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    pub instructions: Option<String>,
    pub tools: Vec<Tool>,
}

impl Upstream {
    pub fn new(config: &UpstreamConfig) -> Self {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .unwrap_or_default();
        let endpoint = endpoint_of(&config.url);
        let authorization =
            reqwest::header::HeaderValue::from_str(&format!("Bearer {}", config.api_key))
                .ok()
                .map(|mut value| {
                    value.set_sensitive(true);
                    value
                });
        let endpoint_url = reqwest::Url::parse(&endpoint).ok();
        // A URL or key that reqwest cannot send with fails in reqwest, as it always has.
        let plain = endpoint_url
            .as_ref()
            .and_then(PlainTarget::of)
            .filter(|_| !config.proxy_in_env && authorization.is_some())
            .map(|target| PlainHttp::new(target, CONNECT_TIMEOUT));
        Self {
            http,
            plain,
            endpoint_url,
            endpoint,
            api_key: config.api_key.clone(),
            authorization,
            timeout: config.timeout,
            session: Mutex::new(None),
            next_id: AtomicU64::new(1),
        }
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// `tools/call`; a JSON-RPC error is [`UpstreamError::Rpc`], a result with `isError`
    /// comes back as it is.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, UpstreamError> {
        let mut params = json!({ "name": name });
        if let Some(arguments) = arguments {
            params["arguments"] = Value::Object(arguments);
        }
        // BotCraft's spans for this call are children of the bridge's client span.
        let call = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
            rmcp::model::CallToolRequestParams::new(name.to_owned()),
        ));
        let span = mcp_lifecycle::spans::sent("botcraft", &call);
        if let Some(traceparent) = observability::traceparent_of(&span) {
            let mut meta = serde_json::Map::new();
            meta.insert(observability::TRACEPARENT.to_owned(), traceparent.into());
            params["_meta"] = Value::Object(meta);
        }
        let result = self.request("tools/call", params).instrument(span).await?;
        serde_json::from_str(result.get()).map_err(|error| UpstreamError::BadPayload {
            method: "tools/call",
            what: error.to_string(),
        })
    }

    /// The bot's instructions and tools, as BotCraft serves them now (every page).
    pub async fn listing(&self) -> Result<Listing, UpstreamError> {
        let instructions = self.initialize().await?;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let result = self.request("tools/list", params).await?;
            let page: rmcp::model::ListToolsResult =
                serde_json::from_str(result.get()).map_err(|error| UpstreamError::BadPayload {
                    method: "tools/list",
                    what: error.to_string(),
                })?;
            tools.extend(page.tools);
            match page.next_cursor {
                Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
                _ => break,
            }
        }
        Ok(Listing {
            instructions,
            tools,
        })
    }

    /// A JSON-RPC request on the kept session (opening one if needed); retried once on a
    /// new session when the kept one is unknown to BotCraft.
    async fn request(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<Box<RawValue>, UpstreamError> {
        let mut retried = false;
        loop {
            let session = self.session().await?;
            match self.exchange(method, &params, Some(&session)).await {
                Err(error) if error.is_stale_session() && !retried => {
                    tracing::info!("BotCraft forgot the session (restarted?); opening a new one");
                    let mut kept = self.session.lock().await;
                    if kept.as_deref() == Some(session.as_str()) {
                        *kept = None;
                    }
                    retried = true;
                }
                other => return other.map(|(result, _)| result),
            }
        }
    }

    async fn session(&self) -> Result<String, UpstreamError> {
        if let Some(session) = self.session.lock().await.clone() {
            return Ok(session);
        }
        self.initialize().await?;
        self.session
            .lock()
            .await
            .clone()
            .ok_or_else(|| UpstreamError::BadPayload {
                method: "initialize",
                what: format!("no {SESSION_HEADER} header in the answer"),
            })
    }

    /// Open a new session; returns the server's instructions.
    async fn initialize(&self) -> Result<Option<String>, UpstreamError> {
        let params = json!({
            "protocolVersion": UPSTREAM_PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "botcraft-mcp-stdio", "version": env!("CARGO_PKG_VERSION")}
        });
        let (result, session) = self.exchange("initialize", &params, None).await?;
        let session = session.ok_or_else(|| UpstreamError::BadPayload {
            method: "initialize",
            what: format!("no {SESSION_HEADER} header in the answer"),
        })?;
        self.notify_initialized(&session).await?;
        *self.session.lock().await = Some(session);
        let result: Value = serde_json::from_str(result.get()).unwrap_or_default();
        Ok(result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned))
    }

    fn post(&self, session: Option<&str>) -> reqwest::RequestBuilder {
        let builder = match &self.endpoint_url {
            Some(url) => self.http.post(url.clone()),
            None => self.http.post(&self.endpoint),
        };
        let builder = match &self.authorization {
            Some(value) => builder.header(AUTHORIZATION, value.clone()),
            None => builder.header(AUTHORIZATION, format!("Bearer {}", self.api_key)),
        };
        let mut builder = builder
            .header(ACCEPT, ACCEPTED)
            .header(CONTENT_TYPE, "application/json");
        if let Some(session) = session {
            builder = builder
                .header(SESSION_HEADER, session)
                .header(PROTOCOL_HEADER, UPSTREAM_PROTOCOL);
        }
        builder
    }

    /// POST `body` on `session` (none for `initialize`): over the plain client when there is
    /// one and the headers are valid, else through reqwest (which fails a header it cannot
    /// send as it always has).
    async fn send(
        &self,
        session: Option<&str>,
        body: Vec<u8>,
    ) -> Result<Answer<'_>, UpstreamError> {
        if let (Some(plain), Some(authorization)) = (&self.plain, &self.authorization) {
            let session = match session.map(HeaderValue::from_str) {
                None => None,
                Some(Ok(value)) => Some(value),
                Some(Err(_)) => return self.send_reqwest(session, body).await,
            };
            let mut headers = hyper::HeaderMap::with_capacity(6);
            headers.insert(AUTHORIZATION, authorization.clone());
            headers.insert(ACCEPT, HeaderValue::from_static(ACCEPTED));
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            if let Some(session) = session {
                headers.insert(SESSION_HEADER, session);
                headers.insert(PROTOCOL_HEADER, HeaderValue::from_static(UPSTREAM_PROTOCOL));
            }
            return plain
                .post(headers, body)
                .await
                .map(Answer::Plain)
                .map_err(|source| self.unreachable(source.into()));
        }
        self.send_reqwest(session, body).await
    }

    async fn send_reqwest(
        &self,
        session: Option<&str>,
        body: Vec<u8>,
    ) -> Result<Answer<'_>, UpstreamError> {
        self.post(session)
            .body(body)
            .send()
            .await
            .map(Answer::Reqwest)
            .map_err(|source| self.unreachable(source.into()))
    }

    async fn notify_initialized(&self, session: &str) -> Result<(), UpstreamError> {
        let body = || br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
        let response = tokio::time::timeout(self.timeout, async {
            let answer = self
                .send_following(Some(session), body(), || Ok(body()))
                .await?;
            // Its body is not read (an empty 202 keeps its connection).
            check_status("notifications/initialized", answer).await
        });
        response.await.map_err(|_| self.timed_out())?.map(drop)
    }

    /// [`Self::send`], and a redirect the plain client was answered with sent again through
    /// reqwest, which follows it as it always has (the server did not take the request);
    /// `again` encodes the body once more.
    async fn send_following(
        &self,
        session: Option<&str>,
        body: Vec<u8>,
        again: impl FnOnce() -> Result<Vec<u8>, UpstreamError>,
    ) -> Result<Answer<'_>, UpstreamError> {
        let answer = self.send(session, body).await?;
        if matches!(answer, Answer::Plain(_)) && answer.status().is_redirection() {
            drop(answer);
            return self.send_reqwest(session, again()?).await;
        }
        Ok(answer)
    }

    fn timed_out(&self) -> UpstreamError {
        UpstreamError::TimedOut {
            endpoint: self.endpoint.clone(),
            timeout: self.timeout,
        }
    }

    fn unreachable(&self, source: HttpFailure) -> UpstreamError {
        UpstreamError::Unreachable {
            endpoint: self.endpoint.clone(),
            source,
        }
    }

    /// POST one request and read its answer (a JSON body or an SSE stream); the session id
    /// of the answer comes back with the result.
    async fn exchange(
        &self,
        method: &'static str,
        params: &Value,
        session: Option<&str>,
    ) -> Result<(Box<RawValue>, Option<String>), UpstreamError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // Encoded from the borrowed parameters (a retry encodes them again, copies nothing).
        let encode = || {
            serde_json::to_vec(&Request {
                jsonrpc: "2.0",
                id,
                method,
                params,
            })
            .map_err(|error| UpstreamError::BadPayload {
                method,
                what: error.to_string(),
            })
        };
        let body = encode()?;
        let work = async {
            let answer = self.send_following(session, body, encode).await?;
            let answer = check_status(method, answer).await?;
            let session = answer.header(SESSION_HEADER).map(str::to_owned);
            let message =
                read_answer(method, id, answer, |source| self.unreachable(source)).await?;
            Ok((answer_result(method, &message)?, session))
        };
        tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| self.timed_out())?
    }
}

/// What the bridge accepts from `/mcp`.
const ACCEPTED: &str = "application/json, text/event-stream";

/// The header naming the protocol revision of a request on a session.
const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// An answer from BotCraft, from whichever client carried the request.
enum Answer<'a> {
    Reqwest(reqwest::Response),
    Plain(PlainAnswer<'a>),
}

impl Answer<'_> {
    fn status(&self) -> StatusCode {
        match self {
            Self::Reqwest(response) => response.status(),
            Self::Plain(answer) => answer.head.status,
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        let headers = match self {
            Self::Reqwest(response) => response.headers(),
            Self::Plain(answer) => &answer.head.headers,
        };
        headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The whole body as text (invalid UTF-8 replaced, as reqwest's `text` does).
    async fn text(self) -> Result<String, HttpFailure> {
        match self {
            Self::Reqwest(response) => Ok(response.text().await?),
            Self::Plain(answer) => {
                let bytes = answer.bytes().await?;
                Ok(match std::str::from_utf8(&bytes) {
                    Ok(text) => text.to_owned(),
                    Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
                })
            }
        }
    }

    /// The body's next piece; `None` at its end.
    async fn chunk(&mut self) -> Option<Result<Bytes, HttpFailure>> {
        match self {
            Self::Reqwest(response) => response.chunk().await.map_err(Into::into).transpose(),
            Self::Plain(answer) => answer.chunk().await.map(|chunk| chunk.map_err(Into::into)),
        }
    }
}

async fn check_status<'a>(
    method: &'static str,
    answer: Answer<'a>,
) -> Result<Answer<'a>, UpstreamError> {
    let status = answer.status();
    if status.is_success() {
        return Ok(answer);
    }
    let text = answer.text().await.unwrap_or_default();
    Err(UpstreamError::HttpStatus {
        method,
        status,
        body: preview(&text),
    })
}

fn preview(text: &str) -> String {
    let mut text = text.trim().to_owned();
    if let Some((cut, _)) = text.char_indices().nth(BODY_PREVIEW_CHARS) {
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// The JSON-RPC message answering request `id` (its text), from a JSON body or the first
/// SSE event that carries it.
async fn read_answer(
    method: &'static str,
    id: u64,
    mut answer: Answer<'_>,
    unreachable: impl Fn(HttpFailure) -> UpstreamError,
) -> Result<String, UpstreamError> {
    let bad = |what: String| UpstreamError::BadPayload { method, what };
    let content_type = answer
        .header(CONTENT_TYPE.as_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if content_type.starts_with("application/json") {
        let text = answer.text().await.map_err(unreachable)?;
        if serde_json::from_str::<&RawValue>(&text).is_err() {
            return Err(bad(format!("not JSON: {}", preview(&text))));
        }
        return Ok(text);
    }
    if !content_type.starts_with("text/event-stream") {
        return Err(bad(format!("unexpected content type {content_type:?}")));
    }
    let id = id.to_string();
    let mut parser = mcp_client::sse::EventParser::default();
    let mut events = Vec::new();
    while let Some(chunk) = answer.chunk().await {
        let chunk = chunk.map_err(|error| bad(format!("broken event stream: {error}")))?;
        parser
            .feed(&chunk, &mut events)
            .map_err(|error| bad(format!("broken event stream: {error}")))?;
        for event in events.drain(..) {
            if event.data.trim().is_empty() {
                continue; // priming events, keep-alives
            }
            let answers = match serde_json::from_str::<Message>(&event.data) {
                Ok(message) => message.id.is_some_and(|raw| raw.get() == id),
                // Not an object of the keys read here (an array, a duplicate key): as a value.
                Err(_) => {
                    let message: Value = serde_json::from_str(&event.data).map_err(|_| {
                        bad(format!("an event is not JSON: {}", preview(&event.data)))
                    })?;
                    message
                        .get("id")
                        .and_then(Value::as_u64)
                        .is_some_and(|n| n.to_string() == id)
                }
            };
            if answers {
                return Ok(event.data);
            }
        }
    }
    Err(bad("the event stream ended without an answer".to_owned()))
}

/// A JSON-RPC request as the bridge sends it.
#[derive(serde::Serialize)]
struct Request<'a> {
    jsonrpc: &'static str,
    id: u64,
    method: &'static str,
    params: &'a Value,
}

/// The keys of a JSON-RPC message the bridge reads, each kept as its raw text; `result` and
/// `error` count when present, even as `null`.
#[derive(serde::Deserialize)]
struct Message<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue as serde::Deserialize>::deserialize(deserializer).map(Some)
}

/// The `result` of the JSON-RPC answer `text` (kept as its text, for the caller to decode
/// as the type it expects), or its error.
fn answer_result(method: &'static str, text: &str) -> Result<Box<RawValue>, UpstreamError> {
    let Ok(message) = serde_json::from_str::<Message>(text) else {
        // Not an object of the keys read here (a duplicate key, say): as a value.
        let message: Value = serde_json::from_str(text).unwrap_or_default();
        let result = answer_value(method, message)?;
        return serde_json::value::to_raw_value(&result).map_err(|error| {
            UpstreamError::BadPayload {
                method,
                what: error.to_string(),
            }
        });
    };
    if let Some(error) = message.error {
        let error: Value = serde_json::from_str(error.get()).unwrap_or_default();
        return Err(rpc_error(method, &error));
    }
    match message.result {
        Some(result) if result.get().starts_with('{') => Ok(result.to_owned()),
        _ => Err(no_result(method)),
    }
}

/// [`answer_result`] of a message decoded as a value.
fn answer_value(method: &'static str, message: Value) -> Result<Value, UpstreamError> {
    if let Some(error) = message.get("error") {
        return Err(rpc_error(method, error));
    }
    match message.get("result") {
        Some(result) if result.is_object() => Ok(result.clone()),
        _ => Err(no_result(method)),
    }
}

fn rpc_error(method: &'static str, error: &Value) -> UpstreamError {
    UpstreamError::Rpc {
        method,
        code: error
            .get("code")
            .and_then(Value::as_i64)
            .unwrap_or_default(),
        message: error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("no message")
            .to_owned(),
    }
}

fn no_result(method: &'static str) -> UpstreamError {
    UpstreamError::BadPayload {
        method,
        what: "a JSON-RPC answer without a result object".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn endpoint_appends_mcp_once() {
        let cases = [
            ("http://h:1", "http://h:1/mcp"),
            ("http://h:1/", "http://h:1/mcp"),
            ("http://h:1/mcp", "http://h:1/mcp"),
            ("https://h/base/mcp/", "https://h/base/mcp"),
        ];
        for (url, endpoint) in cases {
            assert_eq!(endpoint_of(url), endpoint, "{url}");
        }
    }

    #[test]
    fn answers_are_results_or_typed_errors() {
        let ok = answer_result(
            "tools/call",
            r#"{"jsonrpc": "2.0", "id": 1, "result": {"content": []}}"#,
        );
        assert_eq!(ok.expect("result").get(), r#"{"content": []}"#);
        let rpc = answer_result(
            "tools/call",
            r#"{"id": 1, "error": {"code": -32602, "message": "Unknown tool: x"}}"#,
        )
        .expect_err("rpc error");
        assert_eq!(rpc.reason(), ReasonCode::ToolError);
        let bad = answer_result("tools/call", r#"{"id": 1, "result": 3}"#).expect_err("bad");
        assert_eq!(bad.reason(), ReasonCode::UpstreamBadPayload);
    }

    /// The raw reading decides every answer as reading it as a value does.
    #[test]
    fn the_raw_reading_of_an_answer_is_the_values() {
        let cases = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
            r#"{"id":1,"error":{"code":-32602,"message":"Unknown tool: x","data":{}}}"#,
            r#"{"id":1,"error":null,"result":{"content":[]}}"#,
            r#"{"id":1,"result":null}"#,
            r#"{"id":1,"result":[]}"#,
            r#"{"id":1}"#,
            r#"{"id":1,"error":{"code":"not a number"}}"#,
            r#"{"id":1,"result":{"a":1},"result":{"b":2}}"#,
            r#"[1,2]"#,
        ];
        for text in cases {
            let raw = answer_result("tools/call", text)
                .map(|raw| serde_json::from_str::<Value>(raw.get()).expect("a result is JSON"));
            let value = answer_value(
                "tools/call",
                serde_json::from_str(text).expect("the case is JSON"),
            );
            assert_eq!(format!("{raw:?}"), format!("{value:?}"), "{text}");
        }
    }

    #[test]
    fn plain_http_only_for_an_http_endpoint_without_a_proxy() {
        // (url, key, a proxy in the environment, plain client)
        let cases = [
            ("http://127.0.0.1:3000", "k", false, true),
            ("http://127.0.0.1:3000/mcp", "k", false, true),
            ("http://127.0.0.1:3000", "k", true, false),
            ("https://botcraft.example", "k", false, false),
            ("http://127.0.0.1:3000", "bad\nkey", false, false),
            // Ports reqwest's URL parser refuses (the `http` crate's would read port 80).
            ("http://127.0.0.1:300000", "k", false, false),
            ("http://127.0.0.1:30o0", "k", false, false),
        ];
        for (url, api_key, proxy_in_env, plain) in cases {
            let upstream = Upstream::new(&UpstreamConfig {
                url: url.into(),
                api_key: api_key.into(),
                timeout: Duration::from_secs(5),
                proxy_in_env,
            });
            assert_eq!(upstream.plain.is_some(), plain, "{url} {proxy_in_env}");
        }
    }

    /// reqwest follows a redirect (a proxy in front of BotCraft moving `/mcp`, say); the plain
    /// client hands it to reqwest.
    #[tokio::test]
    async fn a_redirect_is_followed_as_reqwest_follows_it() {
        use axum::routing::post;
        let app = axum::Router::new()
            .route(
                "/mcp",
                post(|| async {
                    (
                        axum::http::StatusCode::TEMPORARY_REDIRECT,
                        [(axum::http::header::LOCATION, "/moved/mcp")],
                    )
                }),
            )
            .route(
                "/moved/mcp",
                post(|body: axum::body::Bytes| async move {
                    let request: Value = serde_json::from_slice(&body).expect("JSON");
                    axum::Json(json!({
                        "jsonrpc": "2.0",
                        "id": request["id"],
                        "result": {"content": [], "seen": request["method"]},
                    }))
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let upstream = Upstream::new(&UpstreamConfig {
            url,
            api_key: "k".into(),
            timeout: Duration::from_secs(10),
            proxy_in_env: false,
        });
        assert!(upstream.plain.is_some());
        let (result, _) = upstream
            .exchange("tools/call", &json!({"name": "x"}), Some("s"))
            .await
            .expect("the redirect followed");
        assert_eq!(
            serde_json::from_str::<Value>(result.get()).expect("JSON"),
            json!({"content": [], "seen": "tools/call"})
        );
    }

    #[test]
    fn a_proxy_is_named_by_the_variables_reqwest_reads_for_http() {
        let cases: [(&[&str], bool); 7] = [
            (&[], false),
            (&["HTTP_PROXY"], true),
            (&["http_proxy"], true),
            (&["ALL_PROXY"], true),
            (&["all_proxy"], true),
            (&["NO_PROXY", "HTTP_PROXY"], true),
            // https endpoints go to reqwest whatever is set.
            (&["HTTPS_PROXY", "https_proxy", "NO_PROXY"], false),
        ];
        for (set, named) in cases {
            let env = |name: &str| set.contains(&name).then(|| "http://proxy:3128".to_owned());
            assert_eq!(UpstreamConfig::proxy_named(env), named, "{set:?}");
        }
    }

    #[test]
    fn debug_output_never_shows_the_key() {
        let config = UpstreamConfig {
            url: "http://127.0.0.1:3000/mcp?token=q".into(),
            api_key: "bot-key-secret-123".into(),
            timeout: Duration::from_secs(5),
            proxy_in_env: false,
        };
        let shown = [
            format!("{config:?}"),
            format!("{:?}", Upstream::new(&config)),
        ];
        for text in shown {
            assert!(!text.contains("bot-key-secret-123"), "{text}");
            assert!(!text.contains("token=q"), "{text}");
            assert!(text.contains("<redacted>"), "{text}");
        }
    }
}
