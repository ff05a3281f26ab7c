//! The bridge's HTTP/1.1 client for a plain `http://` BotCraft with no proxy in between: a
//! few kept-alive connections to the one endpoint, each used by one request at a time
//! (hyper's connection API, nothing else on top).
//!
//! reqwest, which the bridge uses for every other endpoint, parses the endpoint's URL again
//! for its redirect policy on every request, copies the headers twice, matches proxies and
//! checks out a connection from a pool keyed by host: work a bridge that only ever POSTs to
//! one address does not need (issue 38; `docs/benchmarks.md` counts it). What stays as
//! reqwest has it: the connect timeout, `TCP_NODELAY`, connections kept alive and reused,
//! and a request that a reused connection closed before it was written going out again on a
//! new one (a request already written is never sent twice: a `tools/call` is not idempotent).
//!
//! A connection goes back to the pool only once its answer's body has been read to the end;
//! a request dropped halfway (a timeout, the caller gone) closes its connection.

use std::sync::Mutex;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HOST, HeaderValue};
use hyper::{Request, Response, Uri};
use hyper_util::rt::TokioIo;

/// Idle connections kept for reuse (more are opened under load, and closed when done).
const MAX_IDLE: usize = 32;

/// Why a plain HTTP exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum PlainHttpError {
    #[error("cannot connect to {address}: {source}")]
    Connect {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot connect to {address} within {timeout:?}")]
    ConnectTimedOut { address: String, timeout: Duration },
    #[error("{0}")]
    Http(#[from] hyper::Error),
}

/// An endpoint the plain client can reach: `http://HOST[:PORT]/PATH`, no user info.
#[derive(Debug, Clone)]
pub struct PlainTarget {
    /// `HOST:PORT`, to connect to.
    address: String,
    /// The `Host` header: the URL's authority.
    host: HeaderValue,
    /// The request target, in origin form (`/mcp?query`).
    path: Uri,
}

impl PlainTarget {
    /// The target for `endpoint` when it is a plain `http://` URL the client can take;
    /// `None` for anything else (https, user info, a URL that does not parse), which goes
    /// to reqwest.
    pub fn of(endpoint: &str) -> Option<Self> {
        let uri: Uri = endpoint.parse().ok()?;
        if uri.scheme_str() != Some("http") {
            return None;
        }
        let authority = uri.authority()?;
        if authority.as_str().contains('@') || authority.host().is_empty() {
            return None;
        }
        let port = authority.port_u16().unwrap_or(80);
        let host = authority.host();
        let address = format!("{host}:{port}");
        let path = uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse::<Uri>()
            .ok()?;
        Some(Self {
            address,
            host: HeaderValue::from_str(authority.as_str()).ok()?,
            path,
        })
    }
}

/// Kept-alive HTTP/1.1 connections to one [`PlainTarget`].
pub struct PlainHttp {
    target: PlainTarget,
    connect_timeout: Duration,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

impl PlainHttp {
    pub fn new(target: PlainTarget, connect_timeout: Duration) -> Self {
        Self {
            target,
            connect_timeout,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// A POST to the target with `headers` (the `Host` header added) and `body`: the
    /// answer's head, and its body to read with [`PlainAnswer::bytes`] or
    /// [`PlainAnswer::chunk`].
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
            // Ready once its connection has finished the last answer; an error if it closed.
            if sender.ready().await.is_err() {
                continue;
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
            sender: Some(sender),
            pool: self,
        }
    }

    /// A kept connection not known to be closed (the most recently used first).
    fn checkout(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self
            .idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while let Some(sender) = idle.pop() {
            if !sender.is_closed() {
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
            idle.push(sender);
        }
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, PlainHttpError> {
        let address = &self.target.address;
        let stream = tokio::time::timeout(
            self.connect_timeout,
            tokio::net::TcpStream::connect(address),
        )
        .await
        .map_err(|_| PlainHttpError::ConnectTimedOut {
            address: address.clone(),
            timeout: self.connect_timeout,
        })?
        .map_err(|source| PlainHttpError::Connect {
            address: address.clone(),
            source,
        })?;
        // Each request is one write of head and body: nothing to gain by waiting for more.
        stream
            .set_nodelay(true)
            .map_err(|source| PlainHttpError::Connect {
                address: address.clone(),
                source,
            })?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
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
/// back to the pool once the body has been read to its end.
pub struct PlainAnswer<'a> {
    pub head: hyper::http::response::Parts,
    body: Incoming,
    sender: Option<SendRequest<Full<Bytes>>>,
    pool: &'a PlainHttp,
}

impl PlainAnswer<'_> {
    /// The whole body.
    pub async fn bytes(self) -> Result<Bytes, PlainHttpError> {
        let PlainAnswer {
            body, sender, pool, ..
        } = self;
        let bytes = body.collect().await?.to_bytes();
        if let Some(sender) = sender {
            pool.checkin(sender);
        }
        Ok(bytes)
    }

    /// The body's next piece of data; `None` at its end.
    pub async fn chunk(&mut self) -> Option<Result<Bytes, PlainHttpError>> {
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
                    self.release();
                    return None;
                }
            }
        }
    }

    fn release(&mut self) {
        if let Some(sender) = self.sender.take() {
            self.pool.checkin(sender);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use hyper::service::service_fn;
    use pretty_assertions::assert_eq;
    use tokio::sync::Notify;

    use super::*;

    #[test]
    fn only_plain_http_urls_are_targets() {
        let cases = [
            (
                "http://127.0.0.1:3000/mcp",
                Some(("127.0.0.1:3000", "127.0.0.1:3000", "/mcp")),
            ),
            ("http://h/mcp?x=1", Some(("h:80", "h", "/mcp?x=1"))),
            ("http://[::1]:8/mcp", Some(("[::1]:8", "[::1]:8", "/mcp"))),
            ("http://h:9", Some(("h:9", "h:9", "/"))),
            ("https://h/mcp", None),
            ("http://user:secret@h/mcp", None),
            ("ftp://h/mcp", None),
            ("not a url", None),
        ];
        for (url, expected) in cases {
            let target = PlainTarget::of(url);
            let got = target.as_ref().map(|t| {
                (
                    t.address.as_str(),
                    t.host.to_str().expect("ascii"),
                    t.path.to_string(),
                )
            });
            let expected = expected.map(|(a, h, p)| (a, h, p.to_owned()));
            assert_eq!(got, expected, "{url}");
        }
    }

    /// How a test server treats its connections.
    #[derive(Clone, Copy)]
    enum Serving {
        KeepAlive,
        /// Answers with `Connection: close` and closes.
        CloseEach,
        /// Holds the first request until the test lets it go (never, here).
        HoldFirst,
    }

    /// A server on a loopback port echoing each body; the connections it accepted.
    async fn server(serving: Serving) -> (PlainTarget, Arc<AtomicUsize>, Arc<Notify>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let held = Arc::new(Notify::new());
        let requests = Arc::new(AtomicUsize::new(0));
        {
            let (accepted, held) = (accepted.clone(), held.clone());
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let (held, requests) = (held.clone(), requests.clone());
                    let service = service_fn(move |request: Request<Incoming>| {
                        let (held, requests) = (held.clone(), requests.clone());
                        async move {
                            let first = requests.fetch_add(1, Ordering::SeqCst) == 0;
                            if first && matches!(serving, Serving::HoldFirst) {
                                held.notify_one();
                                std::future::pending::<()>().await;
                            }
                            let host = request.headers().get(HOST).cloned();
                            let body = request.into_body().collect().await?.to_bytes();
                            let mut answer = Response::new(Full::new(body));
                            if let Some(host) = host {
                                answer.headers_mut().insert("x-host", host);
                            }
                            Ok::<_, hyper::Error>(answer)
                        }
                    });
                    let mut builder = hyper::server::conn::http1::Builder::new();
                    builder.keep_alive(!matches!(serving, Serving::CloseEach));
                    tokio::spawn(builder.serve_connection(TokioIo::new(stream), service));
                }
            });
        }
        let target = PlainTarget::of(&format!("http://127.0.0.1:{port}/mcp")).expect("target");
        (target, accepted, held)
    }

    async fn post_text(client: &PlainHttp, text: &str) -> String {
        let answer = client
            .post(hyper::HeaderMap::new(), text.as_bytes().to_vec())
            .await
            .expect("an answer");
        assert_eq!(
            answer.head.headers.get("x-host").map(|h| h.to_str().ok()),
            Some(Some(client.target.host.to_str().expect("ascii"))),
        );
        let bytes = answer.bytes().await.expect("a body");
        String::from_utf8(bytes.to_vec()).expect("utf-8")
    }

    #[tokio::test]
    async fn a_kept_connection_carries_the_next_requests() {
        let (target, accepted, _) = server(Serving::KeepAlive).await;
        let client = PlainHttp::new(target, Duration::from_secs(5));
        for text in ["one", "two", "three"] {
            assert_eq!(post_text(&client, text).await, text);
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn requests_at_once_take_a_connection_each_and_keep_them() {
        let (target, accepted, _) = server(Serving::KeepAlive).await;
        let client = PlainHttp::new(target, Duration::from_secs(5));
        let texts: Vec<String> = (0..4).map(|i| format!("call {i}")).collect();
        let answers =
            futures::future::join_all(texts.iter().map(|text| post_text(&client, text))).await;
        assert_eq!(answers, texts);
        let opened = accepted.load(Ordering::SeqCst);
        assert!((1..=4).contains(&opened), "{opened}");
        // Every one of them went back to the pool: four more at once open none.
        let answers =
            futures::future::join_all(texts.iter().map(|text| post_text(&client, text))).await;
        assert_eq!(answers, texts);
        assert_eq!(accepted.load(Ordering::SeqCst), opened);
    }

    #[tokio::test]
    async fn a_connection_its_server_closes_is_not_used_again() {
        let (target, accepted, _) = server(Serving::CloseEach).await;
        let client = PlainHttp::new(target, Duration::from_secs(5));
        for text in ["one", "two", "three"] {
            assert_eq!(post_text(&client, text).await, text);
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_request_dropped_before_its_answer_closes_its_connection() {
        let (target, accepted, held) = server(Serving::HoldFirst).await;
        let client = PlainHttp::new(target, Duration::from_secs(5));
        tokio::select! {
            _ = client.post(hyper::HeaderMap::new(), b"held".to_vec()) => {
                panic!("the held request was answered")
            }
            () = held.notified() => {}
        }
        assert_eq!(post_text(&client, "next").await, "next");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_answer_read_in_pieces_frees_its_connection_at_its_end() {
        let (target, accepted, _) = server(Serving::KeepAlive).await;
        let client = PlainHttp::new(target, Duration::from_secs(5));
        let mut answer = client
            .post(hyper::HeaderMap::new(), b"pieces".to_vec())
            .await
            .expect("an answer");
        let mut read = Vec::new();
        while let Some(chunk) = answer.chunk().await {
            read.extend_from_slice(&chunk.expect("a piece"));
        }
        assert_eq!(read, b"pieces");
        assert_eq!(post_text(&client, "again").await, "again");
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_closed_port_is_a_connect_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        drop(listener);
        let target = PlainTarget::of(&format!("http://127.0.0.1:{port}/mcp")).expect("target");
        let client = PlainHttp::new(target, Duration::from_secs(5));
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
