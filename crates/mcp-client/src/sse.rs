//! The client side of MCP's HTTP+SSE transport (revision 2024-11-05), which rmcp 3.x no longer
//! ships: a `GET` of the server's URL opens an event stream whose first `endpoint` event names
//! where to `POST` messages; every server message arrives as a `message` event on the stream.
//!
//! Rules:
//! - The endpoint must have the stream's origin (scheme, host, port). A server naming another
//!   host would receive BotCraft's headers (a bearer token) with every message: refused.
//! - One event is at most [`MAX_EVENT_BYTES`]; a longer one ends the stream (the same bound
//!   as the stdio line limit, `mcp_wire::DEFAULT_MAX_LINE_LENGTH`), so a hostile server cannot grow BotCraft's memory.
//! - A `message` that is not JSON-RPC is logged (its size, not its text) and skipped.
//! - The stream ending closes the transport: the manager sees the connection as lost.

use std::borrow::Cow;
use std::sync::Arc;

use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use thiserror::Error;
use tokio::sync::mpsc;

/// The largest event accepted from a server, in bytes.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Messages buffered between the stream reader and rmcp's service loop (as rmcp's own
/// transports do): each may be an event of up to [`MAX_EVENT_BYTES`], decoded, so a server
/// that sends faster than the loop takes holds at most a few of them in memory.
const INCOMING_BUFFER: usize = 4;

/// How the SSE transport failed. Messages name no header value and no query string.
#[derive(Debug, Error)]
pub enum SseError {
    #[error("the event stream could not be opened: {0}")]
    Connect(String),
    #[error("the event stream answered HTTP {status}")]
    Status { status: u16 },
    #[error("the event stream is not text/event-stream (Content-Type {content_type:?})")]
    NotEventStream { content_type: String },
    #[error("the event stream ended before it named the message endpoint")]
    NoEndpoint,
    #[error("the message endpoint {endpoint:?} is not of the stream's origin")]
    ForeignEndpoint { endpoint: String },
    #[error("an event of more than {MAX_EVENT_BYTES} bytes")]
    EventTooLarge,
    #[error("posting a message failed: {0}")]
    Post(String),
    #[error("the message endpoint answered HTTP {status}")]
    PostStatus { status: u16 },
    #[error("a message could not be encoded")]
    Encode(#[source] serde_json::Error),
}

/// An open HTTP+SSE connection.
pub struct SseClientTransport {
    http: reqwest::Client,
    endpoint: Arc<str>,
    headers: HeaderMap,
    /// How long one POST may wait for its answer's head ([`POST_TIMEOUT`]).
    post_timeout: std::time::Duration,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

/// How long one POST to the message endpoint may wait for its answer's head. A server
/// answers there with 202 at once (what it has to say comes on the event stream); one that
/// never answers would otherwise keep a connection and a task per message (a ping every
/// 15 s included) for as long as its stream stays up. Past it the POST's connection is
/// closed and the message counts as delivered (some servers hold the POST open until their
/// handler ends): its answer is awaited on the stream, under the request's own timeout.
pub const POST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl Drop for SseClientTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// One parsed server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    pub event: String,
    pub data: String,
}

/// The `text/event-stream` parser: fields `event` and `data` (others ignored), comments, any
/// of the three line ends, one leading space after the colon dropped; an event of more than
/// [`MAX_EVENT_BYTES`] is refused. Also what `mcp-stdio`'s bridge reads `/mcp`'s answers with.
#[derive(Debug, Default)]
pub struct EventParser {
    line: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// The last byte was a CR: a following LF belongs to the same line end.
    after_cr: bool,
}

impl EventParser {
    /// Feed `chunk`; complete events go to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<Event>) -> Result<(), SseError> {
        while !chunk.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if chunk[0] == b'\n' {
                    chunk = &chunk[1..];
                    continue;
                }
            }
            // The run of bytes up to the next line end goes on the line at once.
            let run = memchr::memchr2(b'\n', b'\r', chunk).unwrap_or(chunk.len());
            self.line.extend_from_slice(&chunk[..run]);
            if self.line.len() + self.data.len() > MAX_EVENT_BYTES {
                return Err(SseError::EventTooLarge);
            }
            let Some(&end) = chunk.get(run) else {
                break;
            };
            self.after_cr = end == b'\r';
            self.end_line(out);
            chunk = &chunk[run + 1..];
        }
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<Event>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if self.has_data {
                out.push(Event {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event.clear();
            self.has_data = false;
            return;
        }
        if line.first() == Some(&b':') {
            return;
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }
}

/// The origin of an absolute `http(s)` URL: `scheme://authority`.
fn origin(url: &str) -> Option<&str> {
    let scheme_end = url.find("://")? + 3;
    let rest = &url[scheme_end..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(&url[..scheme_end + end])
}

/// `endpoint` (as the server sent it) resolved against the stream's `url`: an absolute URL
/// of the same origin, a path (`/messages?sessionId=…`) or a relative reference.
pub(crate) fn resolve_endpoint(url: &str, endpoint: &str) -> Result<String, SseError> {
    let foreign = || SseError::ForeignEndpoint {
        endpoint: crate::http::shown_url(endpoint),
    };
    let base = origin(url).ok_or_else(foreign)?;
    if endpoint.contains("://") || endpoint.starts_with("//") {
        let absolute = if endpoint.starts_with("//") {
            let scheme = &base[..base.find("://").map_or(0, |at| at + 1)];
            format!("{scheme}{endpoint}")
        } else {
            endpoint.to_owned()
        };
        return match origin(&absolute) {
            Some(other) if other.eq_ignore_ascii_case(base) => Ok(absolute),
            _ => Err(foreign()),
        };
    }
    if endpoint.starts_with('/') {
        return Ok(format!("{base}{endpoint}"));
    }
    // Relative to the stream's path: drop its last segment (and its query).
    let path = url[base.len()..].split(['?', '#']).next().unwrap_or("");
    let directory = path.rfind('/').map_or("/", |at| &path[..=at]);
    Ok(format!("{base}{directory}{endpoint}"))
}

impl SseClientTransport {
    /// Each POST waits at most `timeout` for its answer's head (default [`POST_TIMEOUT`]).
    pub fn with_post_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.post_timeout = timeout;
        self
    }

    /// Open the event stream at `url` and wait for its `endpoint` event.
    pub async fn connect(
        http: reqwest::Client,
        url: &str,
        headers: HeaderMap,
    ) -> Result<Self, SseError> {
        let response = http
            .get(url)
            .headers(headers.clone())
            .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
            .send()
            .await
            .map_err(|error| SseError::Connect(error.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(SseError::Status {
                status: response.status().as_u16(),
            });
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if !content_type
            .to_ascii_lowercase()
            .starts_with("text/event-stream")
        {
            return Err(SseError::NotEventStream { content_type });
        }
        let mut body = response.bytes_stream();
        let mut parser = EventParser::default();
        let mut events = Vec::new();
        let endpoint = 'found: loop {
            let Some(chunk) = body.next().await else {
                return Err(SseError::NoEndpoint);
            };
            let chunk =
                chunk.map_err(|error| SseError::Connect(error.without_url().to_string()))?;
            parser.feed(&chunk, &mut events)?;
            while !events.is_empty() {
                let event = events.remove(0);
                if event.event == "endpoint" {
                    break 'found resolve_endpoint(url, event.data.trim())?;
                }
            }
        };
        let (tx, incoming) = mpsc::channel(INCOMING_BUFFER);
        let server_url = crate::http::shown_url(url);
        let reader = tokio::spawn(async move {
            // Events that came in the endpoint's chunk first.
            for event in events {
                if !deliver(&tx, event, &server_url).await {
                    return;
                }
            }
            let mut ready = Vec::new();
            while let Some(chunk) = body.next().await {
                let Ok(chunk) = chunk else {
                    tracing::debug!(url = %server_url, "the SSE stream broke");
                    return;
                };
                if let Err(error) = parser.feed(&chunk, &mut ready) {
                    tracing::warn!(url = %server_url, %error, "the SSE stream is closed");
                    return;
                }
                for event in ready.drain(..) {
                    if !deliver(&tx, event, &server_url).await {
                        return;
                    }
                }
            }
            tracing::debug!(url = %server_url, "the SSE stream ended");
        });
        Ok(Self {
            http,
            endpoint: endpoint.into(),
            headers,
            post_timeout: POST_TIMEOUT,
            incoming,
            reader,
        })
    }
}

/// Hand a `message` event to the service loop; false once nobody listens.
async fn deliver(tx: &mpsc::Sender<RxJsonRpcMessage<RoleClient>>, event: Event, url: &str) -> bool {
    if !(event.event.is_empty() || event.event == "message") {
        return true;
    }
    match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&event.data) {
        Ok(message) => tx.send(message).await.is_ok(),
        Err(error) => {
            tracing::warn!(url, bytes = event.data.len(), %error, "skipped an SSE message that is not JSON-RPC");
            true
        }
    }
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseError;

    fn name() -> Cow<'static, str> {
        Cow::Borrowed("sse")
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let http = self.http.clone();
        let endpoint = Arc::clone(&self.endpoint);
        let post_timeout = self.post_timeout;
        let mut headers = self.headers.clone();
        if let Some(traceparent) = crate::trace_header::traceparent_header(&item) {
            headers.insert(
                reqwest::header::HeaderName::from_static(observability::TRACEPARENT),
                traceparent,
            );
        }
        async move {
            let body = serde_json::to_vec(&item).map_err(SseError::Encode)?;
            let response = http
                .post(endpoint.as_ref())
                .timeout(post_timeout)
                .headers(headers)
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .body(body)
                .send()
                .await;
            let response = match response {
                Ok(response) => response,
                // Written and not answered in time: delivered (a server that keeps the POST
                // open while its handler runs answers on the event stream all the same). Not
                // an error, which would have the message sent again as never delivered: a
                // tool call would run twice. The connection is closed either way.
                Err(error) if error.is_timeout() => {
                    tracing::debug!(
                        "a message's POST got no answer in time; its answer is awaited on the event stream"
                    );
                    return Ok(());
                }
                Err(error) => return Err(SseError::Post(error.without_url().to_string())),
            };
            if response.status().is_success() {
                Ok(())
            } else {
                Err(SseError::PostStatus {
                    status: response.status().as_u16(),
                })
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.incoming.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<Event> {
        let mut parser = EventParser::default();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut out).expect("within the limit");
        }
        out
    }

    fn event(event: &str, data: &str) -> Event {
        Event {
            event: event.into(),
            data: data.into(),
        }
    }

    /// A server whose event stream works but whose message endpoint takes a POST and never
    /// answers: the send ends at the POST's timeout (it would wait for ever), as delivered
    /// (an error would have the message sent again, and a tool call run twice).
    #[tokio::test]
    async fn a_post_never_answered_fails_at_its_timeout() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/sse", listener.local_addr().expect("address"));
        let server = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let mut head = [0u8; 4096];
                let read = stream.read(&mut head).await.unwrap_or(0);
                if head[..read].starts_with(b"GET") {
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\nevent: endpoint\ndata: /messages\n\n";
                    let _ = stream.write_all(answer.as_bytes()).await;
                }
                // The POST is read and never answered; both connections stay open.
                held.push(stream);
            }
        });
        let mut transport =
            SseClientTransport::connect(reqwest::Client::new(), &url, HeaderMap::new())
                .await
                .expect("the stream opens")
                .with_post_timeout(std::time::Duration::from_millis(200));
        let ping = rmcp::model::ClientJsonRpcMessage::request(
            rmcp::model::ClientRequest::PingRequest(rmcp::model::PingRequest::default()),
            rmcp::model::NumberOrString::Number(1),
        );
        let sent = tokio::time::timeout(std::time::Duration::from_secs(10), transport.send(ping))
            .await
            .expect("the send ends at its timeout, not never");
        assert!(sent.is_ok(), "{sent:?}");
        server.abort();
    }

    #[test]
    fn events_parse_across_chunks_and_line_ends() {
        let cases: Vec<(Vec<&[u8]>, Vec<Event>)> = vec![
            (
                vec![b"event: endpoint\ndata: /messages?sessionId=1\n\n"],
                vec![event("endpoint", "/messages?sessionId=1")],
            ),
            (
                vec![b"event: mess", b"age\r\ndata: {\"a\"", b":1}\r\n\r\n"],
                vec![event("message", "{\"a\":1}")],
            ),
            (
                vec![b": keep-alive\n\ndata:x\rdata: y\r\r"],
                vec![event("", "x\ny")],
            ),
            (vec![b"event: ping\n\n"], vec![]),
            (vec![b"data: half"], vec![]),
            (vec![b"retry: 10\nid: 4\ndata\n\n"], vec![event("", "")]),
        ];
        for (chunks, expected) in cases {
            assert_eq!(parse(&chunks), expected, "{chunks:?}");
        }
    }

    #[test]
    fn an_event_over_the_limit_is_refused() {
        let mut parser = EventParser::default();
        let mut out = Vec::new();
        let line = vec![b'a'; 1024 * 1024];
        let mut result = parser.feed(b"data: ", &mut out);
        for _ in 0..17 {
            if result.is_err() {
                break;
            }
            result = parser.feed(&line, &mut out);
        }
        assert!(matches!(result, Err(SseError::EventTooLarge)), "{result:?}");
    }

    #[test]
    fn endpoints_resolve_on_the_stream_origin_only() {
        let url = "http://127.0.0.1:8080/mcp/sse?team=a";
        let ok = [
            (
                "/messages?sessionId=7",
                "http://127.0.0.1:8080/messages?sessionId=7",
            ),
            ("messages?s=1", "http://127.0.0.1:8080/mcp/messages?s=1"),
            ("http://127.0.0.1:8080/m?s=2", "http://127.0.0.1:8080/m?s=2"),
            ("//127.0.0.1:8080/m", "http://127.0.0.1:8080/m"),
        ];
        for (endpoint, expected) in ok {
            assert_eq!(
                resolve_endpoint(url, endpoint).ok().as_deref(),
                Some(expected),
                "{endpoint}"
            );
        }
        for foreign in [
            "http://evil.example/messages",
            "https://127.0.0.1:8080/m",
            "http://127.0.0.1:9999/m",
            "//evil.example/m",
        ] {
            assert!(
                matches!(
                    resolve_endpoint(url, foreign),
                    Err(SseError::ForeignEndpoint { .. })
                ),
                "{foreign}"
            );
        }
    }
}
