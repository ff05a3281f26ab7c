//! [`EgressProxy`]: an HTTP proxy on loopback that takes a tool's web traffic (the seeded
//! Playwright's browser points at it) and lets it reach only what [`EgressRules`] allow.
//!
//! - `CONNECT host:port` (HTTPS and WebSockets: what a browser sends through a proxy): the
//!   host is resolved here, every address judged, and the tunnel made to those addresses
//!   only, so a name that resolves again differently (DNS rebinding) reaches nothing new.
//! - A plain-HTTP request in absolute form (`GET http://host/path`): judged the same way,
//!   then sent on with its path alone and without hop-by-hop headers; one request per
//!   connection.
//! - A refusal is `403` with a text saying why: the page of a plain-HTTP request; for a
//!   `CONNECT` (HTTPS, WebSockets) the browser shows only that the tunnel failed
//!   (`ERR_TUNNEL_CONNECTION_FAILED`), and BotCraft's log says why (`warn`).
//!
//! Bounded: at most [`MAX_CONNECTIONS`] connections reading a request at once (more are
//! closed at once) and [`MAX_TUNNELS`] tunnels open (more are answered `503`), 64 KiB of
//! request head read within 10 s, 10 s to resolve and to connect, 60 s for a plain-HTTP
//! answer's head, [`PLAIN_HTTP_LIFETIME`] for the whole exchange; a tunnel ends when either
//! side ends it (without passing on a half-close: browsers close whole) or nothing crosses
//! it for [`TUNNEL_IDLE`] (a host listed in `BOTCRAFT_BROWSER_ALLOW`: never for quiet).

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::address::this_machine;
use crate::rules::EgressRules;

/// Connections reading a request at once; more are closed when accepted.
pub const MAX_CONNECTIONS: usize = 512;
/// Tunnels open at once; more `CONNECT`s are answered `503`.
pub const MAX_TUNNELS: usize = 256;
/// A tunnel across which nothing has gone for this long is closed (a WebSocket's pings
/// keep one open).
pub const TUNNEL_IDLE: Duration = Duration::from_secs(300);
/// The longest wait for a request's head, a name's addresses, or a connection.
const WAIT: Duration = Duration::from_secs(10);
/// The longest a plain-HTTP exchange (request, answer and its whole body) may take.
pub const PLAIN_HTTP_LIFETIME: Duration = Duration::from_secs(600);
/// The longest wait for a plain-HTTP answer's head.
const ANSWER_WAIT: Duration = Duration::from_secs(60);
/// Addresses of one name tried at most.
const MAX_ADDRESSES: usize = 16;

type Body = BoxBody<Bytes, hyper::Error>;

/// The proxy, serving until dropped.
#[derive(Debug)]
pub struct EgressProxy {
    address: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl EgressProxy {
    /// Listen on a free loopback port and serve `rules` there.
    pub async fn start(rules: EgressRules) -> std::io::Result<Self> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            rules,
            tunnels: Arc::new(Semaphore::new(MAX_TUNNELS)),
        });
        let task = tokio::spawn(accept(listener, shared));
        Ok(Self { address, task })
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Its URL, as a proxy setting takes it (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

/// What every connection uses.
struct Shared {
    rules: EgressRules,
    tunnels: Arc<Semaphore>,
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(%error, "the browser's egress proxy cannot accept");
                // Out of descriptors or memory: give the connections being served a moment
                // to end instead of spinning on the same error.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let service = hyper::service::service_fn(move |request| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(handle(request, &shared).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .max_buf_size(64 * 1024)
                .keep_alive(false)
                .timer(TokioTimer::new())
                .header_read_timeout(WAIT)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            // A plain-HTTP exchange whose body drips forever ends here; a CONNECT's
            // connection ends at its hand-over, so the cap never cuts a tunnel.
            let _ = tokio::time::timeout(PLAIN_HTTP_LIFETIME, connection).await;
        });
    }
}

async fn handle(request: Request<Incoming>, shared: &Shared) -> Response<Body> {
    if request.method() == Method::CONNECT {
        tunnel(request, shared).await
    } else {
        forward(request, &shared.rules).await
    }
}

/// `CONNECT host:port`: judged, connected, then the upgraded connection joined to it.
async fn tunnel(request: Request<Incoming>, shared: &Shared) -> Response<Body> {
    let Some((host, port)) = request
        .uri()
        .authority()
        .and_then(|authority| Some((authority.host().to_owned(), authority.port_u16()?)))
    else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port".into());
    };
    let Ok(slot) = shared.tunnels.clone().try_acquire_owned() else {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("too many open connections (at most {MAX_TUNNELS})"),
        );
    };
    let upstream = match reach(&host, port, &shared.rules).await {
        Ok(upstream) => upstream,
        Err(answer) => return answer,
    };
    // A host the operator listed (a dev server, whose reload socket may be quiet for long)
    // keeps its tunnels however quiet; the slot still counts.
    let idle_limit = (!shared.rules.lists(&host, port)).then_some(TUNNEL_IDLE);
    tokio::spawn(async move {
        let _slot = slot;
        let Ok(upgraded) = hyper::upgrade::on(request).await else {
            return;
        };
        join(TokioIo::new(upgraded), upstream, idle_limit).await;
    });
    Response::new(empty())
}

/// Bytes both ways between `client` and `upstream` until either side ends or fails, or
/// nothing crosses either way for `idle_limit` (none: never); then both are closed (a peer
/// that stops reading or never closes holds nothing).
async fn join<C, U>(client: C, upstream: U, idle_limit: Option<Duration>)
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    U: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut upstream_read, mut upstream_write) = tokio::io::split(upstream);
    let start = tokio::time::Instant::now();
    // When bytes last crossed, in milliseconds since `start`.
    let last = AtomicU64::new(0);
    tokio::select! {
        () = pass(&mut client_read, &mut upstream_write, start, &last) => {}
        () = pass(&mut upstream_read, &mut client_write, start, &last) => {}
        () = idle(start, &last, idle_limit) => {}
    }
}

/// Copy `from` to `to` until the end or an error, noting each crossing in `last`.
async fn pass<R, W>(from: &mut R, to: &mut W, start: tokio::time::Instant, last: &AtomicU64)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut buffer = vec![0_u8; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(read) if read > 0 => read,
            _ => return,
        };
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
        let now = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        last.store(now, Ordering::Relaxed);
    }
}

/// Returns once nothing has crossed for `limit` (never without one).
async fn idle(start: tokio::time::Instant, last: &AtomicU64, limit: Option<Duration>) {
    let Some(limit) = limit else {
        return std::future::pending().await;
    };
    loop {
        let deadline = start + Duration::from_millis(last.load(Ordering::Relaxed)) + limit;
        if tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep_until(deadline).await;
    }
}

/// `GET http://host/path`: judged, connected, sent on with its path alone.
async fn forward(request: Request<Incoming>, rules: &EgressRules) -> Response<Body> {
    let uri = request.uri().clone();
    if uri.scheme_str() != Some("http") {
        return text(
            StatusCode::BAD_REQUEST,
            "this is a proxy: send http:// URLs in absolute form, and CONNECT for the rest".into(),
        );
    }
    let Some(host) = uri.host().map(str::to_owned) else {
        return text(StatusCode::BAD_REQUEST, "the URL names no host".into());
    };
    let port = uri.port_u16().unwrap_or(80);
    let upstream = match reach(&host, port, rules).await {
        Ok(upstream) => upstream,
        Err(answer) => return answer,
    };
    let (mut parts, body) = request.into_parts();
    parts.uri = match uri.path_and_query() {
        Some(path) => path.as_str().parse().unwrap_or_default(),
        None => hyper::Uri::from_static("/"),
    };
    strip_hop_by_hop(&mut parts.headers);
    let Ok((mut sender, connection)) =
        hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await
    else {
        return text(StatusCode::BAD_GATEWAY, format!("{host}:{port}: no HTTP"));
    };
    tokio::spawn(connection);
    let answer = tokio::time::timeout(
        ANSWER_WAIT,
        sender.send_request(Request::from_parts(parts, body)),
    );
    match answer.await {
        Ok(Ok(response)) => {
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, body.boxed())
        }
        Ok(Err(error)) => text(
            StatusCode::BAD_GATEWAY,
            format!("{host}:{port} did not answer: {error}"),
        ),
        Err(_) => text(
            StatusCode::GATEWAY_TIMEOUT,
            format!("{host}:{port} did not answer within {ANSWER_WAIT:?}"),
        ),
    }
}

/// A connection to `host:port` if the rules allow every address it resolves to (an answer
/// to send back otherwise).
async fn reach(host: &str, port: u16, rules: &EgressRules) -> Result<TcpStream, Response<Body>> {
    let addresses = match resolve(host, port).await {
        Ok(addresses) if !addresses.is_empty() => addresses,
        _ => {
            return Err(text(
                StatusCode::BAD_GATEWAY,
                format!("{host}: no address found"),
            ));
        }
    };
    let ips: Vec<IpAddr> = addresses.iter().map(SocketAddr::ip).collect();
    if let Err(refusal) = rules.verdict(host, port, &ips, &this_machine()) {
        tracing::warn!(%refusal, address = %refusal.address, "a tool's web request refused");
        return Err(text(StatusCode::FORBIDDEN, refusal.to_string()));
    }
    match tokio::time::timeout(WAIT, TcpStream::connect(&addresses[..])).await {
        Ok(Ok(stream)) => Ok(stream),
        _ => Err(text(
            StatusCode::BAD_GATEWAY,
            format!("{host}:{port}: cannot connect"),
        )),
    }
}

/// The addresses of `host` (an address as written, or a name looked up), at most
/// [`MAX_ADDRESSES`].
async fn resolve(host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    // As the rules read it (`10.0.0.5.` is the address it spells, not a name).
    let bare = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let found = tokio::time::timeout(WAIT, tokio::net::lookup_host((bare, port)))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    Ok(found.take(MAX_ADDRESSES).collect())
}

/// Headers of one hop only, and those the `Connection` header names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::PROXY_AUTHORIZATION,
        header::PROXY_AUTHENTICATE,
        header::TE,
        header::TRAILER,
        header::UPGRADE,
        HeaderName::from_static("keep-alive"),
        HeaderName::from_static("proxy-connection"),
    ] {
        headers.remove(name);
    }
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn empty() -> Body {
    Full::new(Bytes::new())
        .map_err(|never| match never {})
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt as _;

    /// The browser closes its side: the tunnel ends, though the far side never speaks or
    /// closes (it would otherwise hold two descriptors for good).
    #[tokio::test(start_paused = true)]
    async fn a_tunnel_ends_when_either_side_ends() {
        let (client, client_peer) = tokio::io::duplex(1024);
        let (upstream, _silent_upstream) = tokio::io::duplex(1024);
        let started = tokio::time::Instant::now();
        let joined = tokio::spawn(join(client, upstream, Some(TUNNEL_IDLE)));
        drop(client_peer);
        joined.await.expect("the tunnel ended");
        // At once, not by the idle watchdog (paused time would jump to it).
        assert!(started.elapsed() < TUNNEL_IDLE, "{:?}", started.elapsed());
    }

    /// A listed host's tunnel has no idle limit: quiet for far longer, it is still open.
    #[tokio::test(start_paused = true)]
    async fn a_listed_hosts_tunnel_stays_open_however_quiet() {
        let (client, _client_peer) = tokio::io::duplex(1024);
        let (upstream, _upstream_peer) = tokio::io::duplex(1024);
        let joined = tokio::spawn(join(client, upstream, None));
        tokio::time::sleep(TUNNEL_IDLE * 10).await;
        assert!(!joined.is_finished());
        joined.abort();
    }

    /// Both sides open and silent: the tunnel ends [`TUNNEL_IDLE`] after the last bytes
    /// crossed it, either way (a download the client sends nothing during stays open).
    #[tokio::test(start_paused = true)]
    async fn an_idle_tunnel_ends() {
        let (client, _client_peer) = tokio::io::duplex(1024);
        let (upstream, mut upstream_peer) = tokio::io::duplex(1024);
        let started = tokio::time::Instant::now();
        let joined = tokio::spawn(join(client, upstream, Some(TUNNEL_IDLE)));
        // Bytes down only (the client sends nothing), halfway through.
        tokio::time::sleep(TUNNEL_IDLE / 2).await;
        upstream_peer.write_all(b"data").await.expect("write");
        joined.await.expect("the tunnel ended");
        let elapsed = started.elapsed();
        assert!(
            elapsed >= TUNNEL_IDLE + TUNNEL_IDLE / 2 && elapsed < TUNNEL_IDLE * 2,
            "{elapsed:?}"
        );
    }
}
