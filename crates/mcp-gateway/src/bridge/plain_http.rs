//! The bridge's HTTP/1.1 client for a plain `http://` BotCraft with no proxy in between: a
//! few kept-alive connections to the one endpoint, each used by one request at a time
//! (hyper's connection API, nothing else on top).
//!
//! reqwest, which the bridge uses for every other endpoint, parses the endpoint's URL again
//! for its redirect policy on every request, copies the headers twice, matches proxies and
//! checks out a connection from a pool keyed by host: work a bridge that only ever POSTs to
//! one address does not need (issue 38; `docs/benchmarks.md` counts it). What stays as
//! reqwest has it: the URL as the `url` crate reads it (the caller hands the parsed
//! endpoint), the `Host` header as hyper-util writes it, connections opened by hyper-util's
//! connector with reqwest's settings (`TCP_NODELAY`, TCP keepalive 15 s × 3, a 30 s
//! `TCP_USER_TIMEOUT`, happy eyeballs), idle connections dropped after 90 s, and a request
//! that a reused connection closed before writing it sent again on another (a request already
//! written is never sent twice: a `tools/call` is not idempotent). Redirects are the caller's
//! (`upstream.rs` hands a 307 or 308 to reqwest).
//!
//! A connection goes back to the pool once its answer's body has been read to the end (or
//! all of its announced length was read); a request dropped halfway (a timeout, the caller
//! gone) closes its connection.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Body as _, Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HOST, HeaderValue};
use hyper::{Request, Response, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use tower::Service as _;

/// Idle connections kept for reuse (more are opened under load, and closed when done).
const MAX_IDLE: usize = 32;

/// An idle connection older than this is closed, not used (reqwest's `pool_idle_timeout`).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Longest wait for a kept connection that is not yet free again (its last exchange still
/// finishing) before a new one is opened instead.
const READY_WAIT: Duration = Duration::from_secs(1);

/// Why a plain HTTP exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum PlainHttpError {
    #[error("cannot connect to {address}: {source}")]
    Connect {
        address: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{0}")]
    Http(#[from] hyper::Error),
}

/// An endpoint the plain client can reach: `http://HOST[:PORT]/PATH`, no user info.
#[derive(Clone)]
pub struct PlainTarget {
    /// `HOST:PORT`, for errors.
    address: String,
    /// `http://HOST:PORT`, for the connector.
    origin: Uri,
    /// The `Host` header: the host, and the port unless it is 80.
    host: HeaderValue,
    /// The request target, in origin form (`/mcp?query`).
    path: Uri,
}

impl PlainTarget {
    /// The target for `url` when it is a plain `http://` URL with no user info; `None` for
    /// anything else, which goes to reqwest.
    pub fn of(url: &reqwest::Url) -> Option<Self> {
        if url.scheme() != "http" || !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        let host = url.host_str()?;
        let port = url.port_or_known_default()?;
        let address = format!("{host}:{port}");
        let host_header = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let path = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        Some(Self {
            origin: format!("http://{address}").parse().ok()?,
            address,
            host: HeaderValue::from_str(&host_header).ok()?,
            path: path.parse().ok()?,
        })
    }
}

/// An idle connection and when it became idle.
struct Idle {
    sender: SendRequest<Full<Bytes>>,
    since: Instant,
}

/// Kept-alive HTTP/1.1 connections to one [`PlainTarget`].
pub struct PlainHttp {
    target: PlainTarget,
    connector: HttpConnector,
    idle: Mutex<Vec<Idle>>,
}

impl PlainHttp {
    pub fn new(target: PlainTarget, connect_timeout: Duration) -> Self {
        // reqwest's own settings for its connector (reqwest 0.13's `ClientBuilder` defaults).
        let mut connector = HttpConnector::new();
        connector.enforce_http(true);
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(connect_timeout));
        connector.set_keepalive(Some(Duration::from_secs(15)));
        connector.set_keepalive_interval(Some(Duration::from_secs(15)));
        connector.set_keepalive_retries(Some(3));
        connector.set_tcp_user_timeout(Some(Duration::from_secs(30)));
        Self {
            target,
            connector,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// A POST to the target with `headers` (the `Host` header added) and `body`: the
    /// answer's head, and its body to read with [`PlainAnswer::chunk`].
    pub async fn post(
        &self,
        headers: hyper::HeaderMap,
        body: Vec<u8>,
    ) -> Result<PlainAnswer<'_>, PlainHttpError> {
        let mut request = Request::new(Full::new(Bytes::from(body)));
        *request.method_mut() = hyper::Method::POST;
        *request.uri_mut() = self.target.path.clone();
        *request.headers_mut() = headers;
        request.headers_mut().insert(HOST, self.target.host.clone());
        // A kept connection first; one its server closed before the request went out gives
        // the request back, and it goes to the next (or a new one).
        while let Some(mut sender) = self.checkout() {
            // Free once its connection has finished the last exchange (at once, nearly
            // always); an error if it closed.
            if !sender.is_ready() {
                match tokio::time::timeout(READY_WAIT, sender.ready()).await {
                    Ok(Ok(())) => {}
                    _ => continue,
                }
            }
            match sender.try_send_request(request).await {
                Ok(response) => return Ok(self.answer(response, sender)),
                Err(mut failed) => match failed.take_message() {
                    Some(unsent) => request = unsent,
                    None => return Err(failed.into_error().into()),
                },
            }
        }
        let mut sender = self.connect().await?;
        let response = sender.send_request(request).await?;
        Ok(self.answer(response, sender))
    }

    fn answer(
        &self,
        response: Response<Incoming>,
        sender: SendRequest<Full<Bytes>>,
    ) -> PlainAnswer<'_> {
        let (head, body) = response.into_parts();
        PlainAnswer {
            head,
            body,
            ended: false,
            sender: Some(sender),
            pool: self,
        }
    }

    /// A kept connection not known to be closed nor idle too long (the most recently used
    /// first).
    fn checkout(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self
            .idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while let Some(Idle { sender, since }) = idle.pop() {
            if !sender.is_closed() && since.elapsed() < IDLE_TIMEOUT {
                return Some(sender);
            }
        }
        None
    }

    fn checkin(&self, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self
            .idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(Idle {
                sender,
                since: Instant::now(),
            });
        }
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, PlainHttpError> {
        let failed = |source: Box<dyn std::error::Error + Send + Sync>| PlainHttpError::Connect {
            address: self.target.address.clone(),
            source,
        };
        let stream = self
            .connector
            .clone()
            .call(self.target.origin.clone())
            .await
            .map_err(|error| failed(error.into()))?;
        let (sender, connection) = hyper::client::conn::http1::handshake(stream)
            .await
            .map_err(PlainHttpError::Http)?;
        // The connection's task ends when its sender is dropped or the peer closes it.
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "a connection to BotCraft ended");
            }
        });
        Ok(sender)
    }
}

/// The answer to a [`PlainHttp::post`]: its head, and its body to read. Its connection goes
/// back to the pool once the body has been read to its end, or when the answer is dropped
/// with every byte its length announced read (an event stream's answer read up to the event
/// that carries it).
pub struct PlainAnswer<'a> {
    pub head: hyper::http::response::Parts,
    body: Incoming,
    ended: bool,
    sender: Option<SendRequest<Full<Bytes>>>,
    pool: &'a PlainHttp,
}

impl PlainAnswer<'_> {
    /// The body's next piece of data; `None` at its end.
    pub async fn chunk(&mut self) -> Option<Result<Bytes, PlainHttpError>> {
        if self.ended {
            return None;
        }
        loop {
            match self.body.frame().await {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => return Some(Ok(data)),
                    Err(_trailers) => continue,
                },
                Some(Err(error)) => {
                    self.sender = None;
                    return Some(Err(error.into()));
                }
                None => {
                    self.ended = true;
                    return None;
                }
            }
        }
    }
}

impl Drop for PlainAnswer<'_> {
    fn drop(&mut self) {
        if let Some(sender) = self.sender.take()
            && (self.ended || self.body.is_end_stream())
        {
            self.pool.checkin(sender);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    use pretty_assertions::assert_eq;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::sync::Notify;

    use super::*;

    fn target(url: &str) -> Option<PlainTarget> {
        PlainTarget::of(&reqwest::Url::parse(url).expect("a URL"))
    }

    /// The address, `Host` and path are what reqwest (the `url` crate, hyper-util's `Host`)
    /// would use for the same URL.
    #[test]
    fn only_plain_http_urls_are_targets_read_as_reqwest_reads_them() {
        let cases = [
            (
                "http://127.0.0.1:3000/mcp",
                Some(("127.0.0.1:3000", "127.0.0.1:3000", "/mcp")),
            ),
            ("http://h/mcp?x=1", Some(("h:80", "h", "/mcp?x=1"))),
            ("http://h:80/mcp", Some(("h:80", "h", "/mcp"))),
            ("HTTP://H:9/./mcp", Some(("h:9", "h:9", "/mcp"))),
            (
                "http://127.1:3000/mcp",
                Some(("127.0.0.1:3000", "127.0.0.1:3000", "/mcp")),
            ),
            (
                "http://[0:0:0:0:0:0:0:1]:8/mcp",
                Some(("[::1]:8", "[::1]:8", "/mcp")),
            ),
            ("http://h:9", Some(("h:9", "h:9", "/"))),
            ("https://h/mcp", None),
            ("http://user:secret@h/mcp", None),
            ("http://user@h/mcp", None),
            ("ftp://h/mcp", None),
        ];
        for (url, expected) in cases {
            let got = target(url).map(|t| {
                (
                    t.address.clone(),
                    t.host.to_str().expect("ascii").to_owned(),
                    t.path.to_string(),
                )
            });
            let expected = expected.map(|(a, h, p)| (a.to_owned(), h.to_owned(), p.to_owned()));
            assert_eq!(got, expected, "{url}");
        }
    }

    /// How a test server treats its connections.
    #[derive(Clone, Copy)]
    enum Serving {
        KeepAlive,
        /// Answers with `Connection: close` and closes.
        CloseEach,
        /// Holds the first request until the test ends.
        HoldFirst,
        /// Fails the second request: the connection is closed without an answer.
        FailSecond,
    }

    /// A loopback server echoing each body with the `Host` it was sent as `x-host`.
    struct Server {
        target: PlainTarget,
        /// Connections accepted.
        accepted: Arc<AtomicUsize>,
        /// Requests received.
        requests: Arc<AtomicUsize>,
        /// Told when a held request arrived.
        held: Arc<Notify>,
    }

    async fn server(serving: Serving) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        let served = Server {
            target: target(&format!("http://127.0.0.1:{port}/mcp")).expect("target"),
            accepted: Arc::new(AtomicUsize::new(0)),
            requests: Arc::new(AtomicUsize::new(0)),
            held: Arc::new(Notify::new()),
        };
        let (accepted, held, requests) = (
            served.accepted.clone(),
            served.held.clone(),
            served.requests.clone(),
        );
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                let (held, requests) = (held.clone(), requests.clone());
                let service = service_fn(move |request: Request<Incoming>| {
                    let (held, requests) = (held.clone(), requests.clone());
                    async move {
                        let seen = requests.fetch_add(1, Ordering::SeqCst);
                        if seen == 0 && matches!(serving, Serving::HoldFirst) {
                            held.notify_one();
                            std::future::pending::<()>().await;
                        }
                        let host = request.headers().get(HOST).cloned();
                        let body = request.into_body().collect().await?.to_bytes();
                        if seen == 1 && matches!(serving, Serving::FailSecond) {
                            return Err("refused".into());
                        }
                        let mut answer = Response::new(Full::new(body));
                        if let Some(host) = host {
                            answer.headers_mut().insert("x-host", host);
                        }
                        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(answer)
                    }
                });
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder.keep_alive(!matches!(serving, Serving::CloseEach));
                tokio::spawn(builder.serve_connection(TokioIo::new(stream), service));
            }
        });
        served
    }

    /// The whole body of `answer`.
    async fn body_of(mut answer: PlainAnswer<'_>) -> Vec<u8> {
        let mut body = Vec::new();
        while let Some(chunk) = answer.chunk().await {
            body.extend_from_slice(&chunk.expect("a piece"));
        }
        body
    }

    async fn post_text(client: &PlainHttp, text: &str) -> String {
        let answer = tokio::time::timeout(
            Duration::from_secs(10),
            client.post(hyper::HeaderMap::new(), text.as_bytes().to_vec()),
        )
        .await
        .expect("an answer in time")
        .expect("an answer");
        assert_eq!(
            answer.head.headers.get("x-host").map(|h| h.to_str().ok()),
            Some(Some(client.target.host.to_str().expect("ascii"))),
        );
        String::from_utf8(body_of(answer).await).expect("utf-8")
    }

    fn client(server: &Server) -> PlainHttp {
        PlainHttp::new(server.target.clone(), Duration::from_secs(5))
    }

    /// A kept connection carries the next requests; one its server closes (`Connection:
    /// close`) is not used again.
    #[tokio::test]
    async fn connections_are_kept_unless_their_server_closes_them() {
        // (how the server serves, connections three requests in turn take)
        for (serving, connections) in [(Serving::KeepAlive, 1), (Serving::CloseEach, 3)] {
            let server = server(serving).await;
            let client = client(&server);
            for text in ["one", "two", "three"] {
                assert_eq!(post_text(&client, text).await, text);
            }
            assert_eq!(server.accepted.load(Ordering::SeqCst), connections);
        }
    }

    #[tokio::test]
    async fn requests_at_once_take_a_connection_each_and_keep_them() {
        let server = server(Serving::KeepAlive).await;
        let client = client(&server);
        let texts: Vec<String> = (0..4).map(|i| format!("call {i}")).collect();
        let answers =
            futures::future::join_all(texts.iter().map(|text| post_text(&client, text))).await;
        assert_eq!(answers, texts);
        let opened = server.accepted.load(Ordering::SeqCst);
        assert!((1..=4).contains(&opened), "{opened}");
        // Every one of them went back to the pool: four more at once open none.
        let answers =
            futures::future::join_all(texts.iter().map(|text| post_text(&client, text))).await;
        assert_eq!(answers, texts);
        assert_eq!(server.accepted.load(Ordering::SeqCst), opened);
    }

    #[tokio::test]
    async fn a_request_dropped_before_its_answer_closes_its_connection() {
        let server = server(Serving::HoldFirst).await;
        let client = client(&server);
        tokio::select! {
            _ = client.post(hyper::HeaderMap::new(), b"held".to_vec()) => {
                panic!("the held request was answered")
            }
            () = server.held.notified() => {}
        }
        assert_eq!(post_text(&client, "next").await, "next");
        assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_written_request_is_never_sent_again() {
        let server = server(Serving::FailSecond).await;
        let client = client(&server);
        assert_eq!(post_text(&client, "one").await, "one");
        let failed = client
            .post(hyper::HeaderMap::new(), b"two".to_vec())
            .await
            .err()
            .expect("the server closed the connection without an answer");
        assert!(matches!(failed, PlainHttpError::Http(_)), "{failed:?}");
        assert_eq!(server.requests.load(Ordering::SeqCst), 2);
        assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
    }

    /// An answer read to its end, or to the length it announced (an event stream's answer
    /// read up to the event that carries it), frees its connection for the next request; one
    /// dropped unread closes it.
    #[tokio::test]
    async fn an_answer_frees_its_connection_once_read_to_its_length() {
        #[derive(Debug, Clone, Copy)]
        enum Read {
            ToItsEnd,
            ToItsLength,
            Not,
        }
        // (how much of the answer is read, connections opened once the next one is answered)
        let cases = [(Read::ToItsEnd, 1), (Read::ToItsLength, 1), (Read::Not, 2)];
        for (read, connections) in cases {
            let server = server(Serving::KeepAlive).await;
            let client = client(&server);
            let text = b"an answer of known length";
            let mut answer = client
                .post(hyper::HeaderMap::new(), text.to_vec())
                .await
                .expect("an answer");
            let got = match read {
                Read::ToItsEnd => body_of(answer).await,
                Read::ToItsLength => {
                    let mut got = Vec::new();
                    while got.len() < text.len() {
                        let chunk = answer.chunk().await.expect("more").expect("a piece");
                        got.extend_from_slice(&chunk);
                    }
                    drop(answer);
                    got
                }
                Read::Not => {
                    drop(answer);
                    text.to_vec()
                }
            };
            assert_eq!(got, text, "{read:?}");
            assert_eq!(post_text(&client, "again").await, "again", "{read:?}");
            assert_eq!(
                server.accepted.load(Ordering::SeqCst),
                connections,
                "{read:?}"
            );
        }
    }

    /// A server that answers one request on each connection, kept alive as far as HTTP
    /// says, then closes it while it is idle (an idle timeout).
    #[tokio::test]
    async fn an_idle_connection_its_server_closed_is_not_used() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        {
            let accepted = accepted.clone();
            tokio::spawn(async move {
                while let Ok((mut stream, _)) = listener.accept().await {
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let mut request = Vec::new();
                    let mut buffer = [0u8; 1024];
                    // The head and the body ("ping", 4 bytes).
                    while !request.ends_with(b"\r\n\r\nping") {
                        let n = stream.read(&mut buffer).await.expect("read");
                        assert!(n > 0, "the request ended early");
                        request.extend_from_slice(&buffer[..n]);
                    }
                    stream
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\npong")
                        .await
                        .expect("write");
                    drop(stream);
                }
            });
        }
        let client = PlainHttp::new(
            target(&format!("http://127.0.0.1:{port}/mcp")).expect("target"),
            Duration::from_secs(5),
        );
        for round in 1..=2 {
            let answer = client
                .post(hyper::HeaderMap::new(), b"ping".to_vec())
                .await
                .expect("an answer");
            assert_eq!(body_of(answer).await, b"pong");
            assert_eq!(accepted.load(Ordering::SeqCst), round);
            // Kept, until the connection sees its server's close.
            let closed = async {
                let all_closed = || {
                    let idle = client.idle.lock().expect("lock");
                    idle.iter().all(|idle| idle.sender.is_closed())
                };
                while !all_closed() {
                    tokio::task::yield_now().await;
                }
            };
            tokio::time::timeout(Duration::from_secs(10), closed)
                .await
                .expect("the close seen");
        }
    }

    #[tokio::test]
    async fn a_closed_port_is_a_connect_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        drop(listener);
        let client = PlainHttp::new(
            target(&format!("http://127.0.0.1:{port}/mcp")).expect("target"),
            Duration::from_secs(5),
        );
        let error = client
            .post(hyper::HeaderMap::new(), Vec::new())
            .await
            .err()
            .expect("no server");
        assert!(
            matches!(&error, PlainHttpError::Connect { address, .. } if *address == format!("127.0.0.1:{port}")),
            "{error:?}"
        );
    }
}
