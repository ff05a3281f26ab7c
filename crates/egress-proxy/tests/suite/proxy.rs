//! The proxy between a client speaking to it as a browser does and two local servers: a page
//! the rules allow and a "metadata" service they do not.

use std::sync::{Arc, Mutex};

use egress_proxy::{EgressProxy, EgressRules};
use pretty_assertions::assert_eq;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

const SECRET: &str = "metadata-secret-0c1d";

/// A server on 127.0.0.1 answering every request with `body`, keeping each request line.
async fn local_server(body: &'static str) -> anyhow::Result<(u16, Arc<Mutex<Vec<String>>>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let head = read_head(&mut stream).await;
                if let Some(line) = head.lines().next() {
                    kept.lock().expect("lock").push(line.to_owned());
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    Ok((port, seen))
}

/// What a stream sends up to the end of a head.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Everything the proxy answers to `request`, until it closes.
async fn ask(proxy: &EgressProxy, request: &str) -> anyhow::Result<String> {
    let mut stream = TcpStream::connect(proxy.address()).await?;
    stream.write_all(request.as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// The status line of `answer` and its body.
fn status_and_body(answer: &str) -> (&str, &str) {
    let status = answer.lines().next().unwrap_or_default();
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    (status, body)
}

#[tokio::test]
async fn the_browser_reaches_what_the_rules_allow_and_nothing_else() -> anyhow::Result<()> {
    let (page, page_seen) = local_server("page").await?;
    let (metadata, metadata_seen) = local_server(SECRET).await?;
    let proxy = EgressProxy::start(EgressRules::parse(&format!("127.0.0.1:{page}"))?).await?;

    // Plain HTTP in absolute form: the allowed page, sent on with its path alone.
    let answer = ask(
        &proxy,
        &format!("GET http://127.0.0.1:{page}/a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:{page}\r\nProxy-Connection: keep-alive\r\n\r\n"),
    )
    .await?;
    assert_eq!(status_and_body(&answer), ("HTTP/1.1 200 OK", "page"));
    assert_eq!(*page_seen.lock().expect("lock"), ["GET /a?b=1 HTTP/1.1"]);

    // A tunnel to the allowed page, then a request through it.
    let mut tunnel = TcpStream::connect(proxy.address()).await?;
    tunnel
        .write_all(
            format!("CONNECT 127.0.0.1:{page} HTTP/1.1\r\nHost: 127.0.0.1:{page}\r\n\r\n")
                .as_bytes(),
        )
        .await?;
    let established = read_head(&mut tunnel).await;
    assert!(established.starts_with("HTTP/1.1 200"), "{established}");
    tunnel
        .write_all(b"GET /tunneled HTTP/1.1\r\nHost: x\r\n\r\n")
        .await?;
    let mut through = String::new();
    tunnel.read_to_string(&mut through).await?;
    assert_eq!(status_and_body(&through), ("HTTP/1.1 200 OK", "page"));

    // The metadata service, however it is named: refused, with why.
    let refused = [
        format!("GET http://127.0.0.1:{metadata}/latest/meta-data HTTP/1.1\r\nHost: x\r\n\r\n"),
        format!("GET http://localhost:{metadata}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
        format!("GET http://[::ffff:127.0.0.1]:{metadata}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
        format!("GET http://2130706433:{metadata}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
        format!("CONNECT 127.0.0.1:{metadata} HTTP/1.1\r\nHost: x\r\n\r\n"),
        format!("CONNECT localhost:{metadata} HTTP/1.1\r\nHost: x\r\n\r\n"),
    ];
    for request in &refused {
        let answer = ask(&proxy, request).await?;
        let (status, body) = status_and_body(&answer);
        assert_eq!(status, "HTTP/1.1 403 Forbidden", "{request}: {answer}");
        assert!(
            body.contains("loopback address") && !body.contains(SECRET),
            "{request}: {body}"
        );
    }
    assert_eq!(*metadata_seen.lock().expect("lock"), Vec::<String>::new());

    // Not a proxy's request.
    let answer = ask(&proxy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").await?;
    assert_eq!(status_and_body(&answer).0, "HTTP/1.1 400 Bad Request");
    Ok(())
}
