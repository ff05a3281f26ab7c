//! A web page that sends the browser inward: to a "metadata" service on BotCraft's host
//! (cloud credentials live at such an address), by address, by name, by another spelling of
//! the address, and by a redirect from a page the rules allow. The browser's egress proxy
//! refuses each. Code run in the server's Node process, which could go around the proxy, has
//! its connections refused by the kernel (Landlock: TCP to the proxy's port alone), and its
//! UDP too (the system-call filter: no datagram socket where no host is named by name). The
//! service is never asked, and no datagram arrives.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::Attacked;

/// What the "metadata" service hands whoever asks.
const METADATA_SECRET: &str = "metadata-credentials-9b7e";

/// The pages of the case: two the rules allow, one they do not.
pub(super) struct WebFixture {
    /// A plain page (the false-block suite browses it).
    pub page: String,
    /// A page that redirects to the metadata service.
    redirect: String,
    metadata_port: u16,
    metadata_hits: Arc<AtomicUsize>,
}

impl WebFixture {
    pub async fn start() -> anyhow::Result<Self> {
        let page = test_support::serve_page(
            "<!doctype html><html><body><h1>Sandboxed browsing works</h1></body></html>".to_owned(),
        )
        .await?;
        let (metadata_port, metadata_hits) = http_service(format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{METADATA_SECRET}",
            METADATA_SECRET.len()
        ))
        .await?;
        let (redirect_port, _) = http_service(format!(
            "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{metadata_port}/latest/meta-data/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        ))
        .await?;
        Ok(Self {
            page,
            redirect: format!("http://127.0.0.1:{redirect_port}/"),
            metadata_port,
            metadata_hits,
        })
    }

    /// `BOTCRAFT_BROWSER_ALLOW` for BotCraft: the two pages, not the metadata service.
    pub fn allowed(&self) -> String {
        let host = |url: &str| {
            url.trim_start_matches("http://")
                .trim_end_matches('/')
                .to_owned()
        };
        format!("{},{}", host(&self.page), host(&self.redirect))
    }
}

/// A server on 127.0.0.1 that answers every connection with `answer`, counting them.
async fn http_service(answer: String) -> anyhow::Result<(u16, Arc<AtomicUsize>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut request = [0_u8; 4096];
                let _ = stream.read(&mut request).await;
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    Ok((port, hits))
}

/// The browser server (`browser`, added as seeded by the false-block suite: through the
/// egress proxy, TCP to the proxy alone) sent to the metadata service every way a page could,
/// and code run in its Node process trying the service directly: nothing of it comes back,
/// and it is never asked.
pub(super) async fn a_page_cannot_send_the_browser_inward(at: &Attacked) -> anyhow::Result<()> {
    let port = at.web.metadata_port;
    let targets = [
        format!("http://127.0.0.1:{port}/latest/meta-data/"),
        format!("http://localhost:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        format!("http://2130706433:{port}/"),
        at.web.redirect.clone(),
    ];
    for url in &targets {
        let (status, body) = at
            .send(
                reqwest::Method::POST,
                "/api/servers/browser/tools/browser_navigate/call",
                &at.admin,
                Some(json!({"arguments": {"url": url}})),
            )
            .await?;
        assert_eq!(status, 200, "{url}: {body}");
        assert!(!body.contains(METADATA_SECRET), "{url}: {body}");
        // The proxy's refusal is the page (its text in the snapshot file), or the tunnel's
        // failure is the navigation's error.
        assert!(
            body.contains("HTTP status: 403 Forbidden") || body.contains("ERR_"),
            "{url}: refused: {body}"
        );
    }
    // Code the model has the server run in Node (a tool that asks in chat; the admin API runs
    // it at once) goes around the browser's proxy: Node's `fetch`, a socket of the host's
    // own `net`, and a UDP datagram (which Landlock judges for nobody). Its TCP reaches the
    // proxy's port alone, and it makes no datagram socket.
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0")?;
    receiver.set_nonblocking(true)?;
    let udp_port = receiver.local_addr()?.port();
    let code = format!(
        r#"async (page) => {{
  const outcomes = [];
  try {{
    const answer = await fetch('http://127.0.0.1:{port}/latest/meta-data/');
    outcomes.push('fetch read ' + await answer.text());
  }} catch (error) {{
    outcomes.push('fetch refused: ' + (error.cause && error.cause.code));
  }}
  const host = page.constructor.constructor('return process')();
  const net = host.getBuiltinModule('net');
  outcomes.push(await new Promise((resolve) => {{
    const socket = net.connect({port}, '127.0.0.1', () => socket.write('GET / HTTP/1.0\r\n\r\n'));
    let read = '';
    socket.on('data', (data) => {{ read += data; }});
    socket.on('end', () => resolve('socket read ' + read));
    socket.on('error', (error) => resolve('socket refused: ' + error.code));
  }}));
  const dgram = host.getBuiltinModule('dgram');
  outcomes.push(await new Promise((resolve) => {{
    const udp = dgram.createSocket('udp4');
    udp.on('error', (error) => resolve('udp refused: ' + error.code));
    udp.send('what the page read', {udp_port}, '127.0.0.1', (error) => {{
      resolve(error ? 'udp refused: ' + error.code : 'udp sent');
      udp.close();
    }});
  }}));
  return outcomes;
}}"#
    );
    let (status, body) = at
        .send(
            reqwest::Method::POST,
            "/api/servers/browser/tools/browser_run_code_unsafe/call",
            &at.admin,
            Some(json!({"arguments": {"code": code}})),
        )
        .await?;
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains(METADATA_SECRET), "{body}");
    assert!(
        body.contains("fetch refused: EACCES")
            && body.contains("socket refused: EACCES")
            && body.contains("udp refused: EACCES"),
        "the kernel refuses both connections and the datagram socket: {body}"
    );
    // A loopback datagram is queued at its receiver before the send returns: had one been
    // sent, it would be here now.
    let mut datagram = [0_u8; 64];
    assert!(
        receiver.recv(&mut datagram).is_err(),
        "a datagram arrived: {:?}",
        String::from_utf8_lossy(&datagram)
    );
    assert_eq!(
        at.web.metadata_hits.load(Ordering::SeqCst),
        0,
        "the metadata service was asked"
    );
    at.stop("browser").await
}
