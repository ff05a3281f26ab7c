//! The bridge's client of BotCraft's `/mcp`: a small streamable HTTP client, written for the
//! bridge's one job (initialize once, then `tools/list` and `tools/call`) so every way it can
//! fail is a typed [`UpstreamError`] with its reason code. A plain `http://` endpoint with no
//! proxy named in the environment is reached over kept-alive HTTP/1.1 connections of our own
//! ([`super::plain_http`]); every other endpoint (https, a proxy) through `reqwest`.
//!
//! | failure | error | reason |
//! |---|---|---|
//! | connect error, timeout, the connection dropped | `Unreachable` | `stdio.upstream_unreachable` |
//! | a status other than 2xx (401 wrong key, 500 …) | `HttpStatus` | `stdio.upstream_http_error` |
//! | a body that is not the JSON-RPC answer expected | `BadPayload` | `stdio.upstream_bad_payload` |
//! | a JSON-RPC error answer | `Rpc` | `stdio.tool_error` |
//!
//! The session id of `initialize` is kept for later calls; a 404 on a kept session (BotCraft
//! restarted) drops it and the request is retried once on a new session.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hyper::body::Bytes;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use server_kit::ReasonCode;
use tracing::Instrument as _;

use crate::auth::SESSION_HEADER;
use crate::bridge::plain_http::{PlainAnswer, PlainHttp, PlainHttpError, PlainTarget};

/// The protocol revision the bridge speaks to BotCraft.
pub const UPSTREAM_PROTOCOL: &str = "2025-11-25";

/// Longest wait to open a connection to BotCraft.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Pages of `tools/list` read at most (each bounded by [`MAX_ANSWER_BYTES`]).
const MAX_LIST_PAGES: usize = 50;

/// Longest part of an unexpected body quoted in an error.
const BODY_PREVIEW_CHARS: usize = 200;

/// How much of an error's body is read, for its preview (room for leading white space and
/// characters of 4 bytes); the rest is not.
const ERROR_BODY_READ: usize = 4096;

/// The longest answer read as one JSON body: the bound of one event of an event stream
/// (and of a stdio line), so a server answering either way cannot grow the bridge's memory.
const MAX_ANSWER_BYTES: usize = mcp_client::sse::MAX_EVENT_BYTES;

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
    session: Mutex<Option<Session>>,
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
        // BotCraft's spans for this call are children of the bridge's client span.
        let span = mcp_lifecycle::spans::sent_tool_call("botcraft", name);
        let params = CallParams {
            name,
            arguments: arguments.as_ref(),
            meta: observability::traceparent_of(&span).map(|traceparent| TraceMeta { traceparent }),
        };
        let result = self.request("tools/call", &params).instrument(span).await?;
        mcp_wire::decode_tool_result(&result).map_err(|error| UpstreamError::BadPayload {
            method: "tools/call",
            what: error.to_string(),
        })
    }

    /// The bot's instructions and tools, as BotCraft serves them now (every page).
    pub async fn listing(&self) -> Result<Listing, UpstreamError> {
        let (instructions, _) = self.initialize().await?;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        // A cursor seen before would page forever; so would an endless run of new ones.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..MAX_LIST_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let result = self.request("tools/list", &params).await?;
            let page: rmcp::model::ListToolsResult =
                serde_json::from_str(result.get()).map_err(|error| UpstreamError::BadPayload {
                    method: "tools/list",
                    what: error.to_string(),
                })?;
            tools.extend(page.tools);
            match page.next_cursor {
                Some(next) if seen.insert(next.clone()) => cursor = Some(next),
                Some(_) => {
                    tracing::warn!(
                        "BotCraft's tools/list named a cursor it had named before; the list ends there"
                    );
                    break;
                }
                None => break,
            }
            if seen.len() == MAX_LIST_PAGES {
                tracing::warn!(
                    pages = MAX_LIST_PAGES,
                    "BotCraft's tools/list goes on past the pages the bridge reads; the list ends there"
                );
            }
        }
        Ok(Listing {
            instructions,
            tools,
        })
    }

    /// A JSON-RPC request on the kept session (opening one if needed); retried once on a
    /// new session when the kept one is unknown to BotCraft.
    async fn request<P: serde::Serialize>(
        &self,
        method: &'static str,
        params: &P,
    ) -> Result<Box<RawValue>, UpstreamError> {
        let mut retried = false;
        loop {
            let session = self.session().await?;
            match self.exchange(method, params, Some(&session)).await {
                Err(error) if error.is_stale_session() && !retried => {
                    tracing::info!("BotCraft forgot the session (restarted?); opening a new one");
                    let mut kept = self.kept_session();
                    if kept.as_ref().is_some_and(|kept| kept.id == session.id) {
                        *kept = None;
                    }
                    retried = true;
                }
                other => return other.map(|(result, _)| result),
            }
        }
    }

    fn kept_session(&self) -> MutexGuard<'_, Option<Session>> {
        self.session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn session(&self) -> Result<Session, UpstreamError> {
        if let Some(session) = self.kept_session().clone() {
            return Ok(session);
        }
        Ok(self.initialize().await?.1)
    }

    /// Open a new session, kept for later requests; returns the server's instructions and
    /// the session.
    async fn initialize(&self) -> Result<(Option<String>, Session), UpstreamError> {
        let params = json!({
            "protocolVersion": UPSTREAM_PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "botcraft-mcp-stdio", "version": env!("CARGO_PKG_VERSION")}
        });
        let (result, session) = self.exchange("initialize", &params, None).await?;
        let session = Session::new(session.ok_or_else(|| UpstreamError::BadPayload {
            method: "initialize",
            what: format!("no {SESSION_HEADER} header in the answer"),
        })?);
        self.notify_initialized(&session).await?;
        *self.kept_session() = Some(session.clone());
        let result: Value = serde_json::from_str(result.get()).unwrap_or_default();
        let instructions = result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok((instructions, session))
    }

    fn post(&self, session: Option<&Session>) -> reqwest::RequestBuilder {
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
                .header(SESSION_HEADER, &*session.id)
                .header(PROTOCOL_HEADER, UPSTREAM_PROTOCOL);
        }
        builder
    }

    /// POST `body` on `session` (none for `initialize`): over the plain client when there is
    /// one and the headers are valid, else through reqwest (which fails a header it cannot
    /// send as it always has).
    async fn send(
        &self,
        session: Option<&Session>,
        body: Vec<u8>,
    ) -> Result<Answer<'_>, UpstreamError> {
        if let (Some(plain), Some(authorization)) = (&self.plain, &self.authorization) {
            let session = match session.map(|session| &session.header) {
                None => None,
                Some(Some(value)) => Some(value.clone()),
                Some(None) => return self.send_reqwest(session, body).await,
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
        session: Option<&Session>,
        body: Vec<u8>,
    ) -> Result<Answer<'_>, UpstreamError> {
        self.post(session)
            .body(body)
            .send()
            .await
            .map(Answer::Reqwest)
            .map_err(|source| self.unreachable(source.into()))
    }

    async fn notify_initialized(&self, session: &Session) -> Result<(), UpstreamError> {
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

    /// [`Self::send`], and a 307 or 308 the plain client was answered with sent again through
    /// reqwest, which follows it with the same POST as it always has (those two say the
    /// server did not take the request); `again` encodes the body once more. Any other
    /// redirect is reported as the HTTP error it is: it may come after the server took the
    /// request, and reqwest would follow it with a GET, which carries no answer.
    async fn send_following(
        &self,
        session: Option<&Session>,
        body: Vec<u8>,
        again: impl FnOnce() -> Result<Vec<u8>, UpstreamError>,
    ) -> Result<Answer<'_>, UpstreamError> {
        let answer = self.send(session, body).await?;
        let repeat = matches!(
            answer.status(),
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
        );
        if matches!(answer, Answer::Plain(_)) && repeat {
            drop(answer);
            return self.send_reqwest(session, again()?).await;
        }
        Ok(answer)
    }

    // `BOTCRAFT_URL` may carry a credential (user information, a query): errors, which reach
    // the client as tool errors, show it cut, and reqwest's own message without it.
    fn timed_out(&self) -> UpstreamError {
        UpstreamError::TimedOut {
            endpoint: mcp_client::shown_url(&self.endpoint),
            timeout: self.timeout,
        }
    }

    fn unreachable(&self, source: HttpFailure) -> UpstreamError {
        let source = match source {
            HttpFailure::Reqwest(error) => HttpFailure::Reqwest(error.without_url()),
            plain => plain,
        };
        UpstreamError::Unreachable {
            endpoint: mcp_client::shown_url(&self.endpoint),
            source,
        }
    }

    /// POST one request and read its answer (a JSON body or an SSE stream); the session id
    /// of the answer comes back with the result.
    async fn exchange<P: serde::Serialize>(
        &self,
        method: &'static str,
        params: &P,
        session: Option<&Session>,
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

/// A session BotCraft opened: its id, and the id as a header value, made once (none when it
/// is not a valid one: its requests go through reqwest, which fails them as it always has).
#[derive(Clone)]
struct Session {
    id: Arc<str>,
    header: Option<HeaderValue>,
}

impl Session {
    fn new(id: String) -> Self {
        let header = HeaderValue::from_str(&id).ok();
        Self {
            id: id.into(),
            header,
        }
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

    /// The body as text (invalid UTF-8 replaced, as reqwest's `text` does), read up to
    /// `limit` bytes: `Err` with what was read when the body is longer.
    async fn text_within(mut self, limit: usize) -> Result<Result<String, String>, HttpFailure> {
        let mut bytes = Vec::new();
        while let Some(chunk) = self.chunk().await {
            let chunk = chunk?;
            if bytes.len() + chunk.len() > limit {
                bytes.extend_from_slice(&chunk[..limit - bytes.len()]);
                return Ok(Err(lossy(bytes)));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Ok(lossy(bytes)))
    }

    /// The body's next piece; `None` at its end.
    async fn chunk(&mut self) -> Option<Result<Bytes, HttpFailure>> {
        match self {
            Self::Reqwest(response) => response.chunk().await.map_err(Into::into).transpose(),
            Self::Plain(answer) => answer.chunk().await.map(|chunk| chunk.map_err(Into::into)),
        }
    }
}

/// `bytes` as text, invalid UTF-8 replaced (without a copy when it is valid).
fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned())
}

async fn check_status<'a>(
    method: &'static str,
    answer: Answer<'a>,
) -> Result<Answer<'a>, UpstreamError> {
    let status = answer.status();
    if status.is_success() {
        return Ok(answer);
    }
    // Enough of the body for the error's preview; the rest is not read.
    let text = match answer.text_within(ERROR_BODY_READ).await {
        Ok(Ok(text) | Err(text)) => text,
        Err(_) => String::new(),
    };
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
        let text = answer
            .text_within(MAX_ANSWER_BYTES)
            .await
            .map_err(unreachable)?
            .map_err(|_| bad(format!("an answer of more than {MAX_ANSWER_BYTES} bytes")))?;
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
            // The answer carries the call's id and no method: a request of the server's own
            // (a ping, a sampling request) may have the same id, and is not the answer.
            let answers = match serde_json::from_str::<Message>(&event.data) {
                Ok(message) => {
                    message.method.is_none() && message.id.is_some_and(|raw| raw.get() == id)
                }
                // Not an object of the keys read here (an array, a duplicate key): as a value.
                Err(_) => {
                    let message: Value = serde_json::from_str(&event.data).map_err(|_| {
                        bad(format!("an event is not JSON: {}", preview(&event.data)))
                    })?;
                    message.get("method").is_none()
                        && message
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
struct Request<'a, P> {
    jsonrpc: &'static str,
    id: u64,
    method: &'static str,
    params: &'a P,
}

/// `tools/call`'s parameters, written from borrowed parts.
#[derive(serde::Serialize)]
struct CallParams<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a JsonObject>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<TraceMeta>,
}

/// The trace context of a call, for BotCraft's spans to be children of the bridge's.
#[derive(serde::Serialize)]
struct TraceMeta {
    traceparent: String,
}

/// The keys of a JSON-RPC message the bridge reads, each kept as its raw text; `result` and
/// `error` count when present, even as `null`.
#[derive(serde::Deserialize)]
struct Message<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
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
mod tests;
