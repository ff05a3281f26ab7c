//! One HTML page on 127.0.0.1, for browser tests (Playwright MCP, Chromium): every request
//! gets it, over HTTP/1.1 with `connection: close`.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serve `html` on a free loopback port for as long as the runtime runs; its URL.
pub async fn serve_page(html: String) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let html = html.clone();
            tokio::spawn(async move {
                let mut request = vec![0u8; 8192];
                let _ = socket.read(&mut request).await;
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{html}",
                    html.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    Ok(url)
}
