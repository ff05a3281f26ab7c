//! `http-echo [ADDR]`: the floor of any HTTP face of MCP, for `scripts/bench-faces.sh`. A bare
//! axum endpoint that answers each JSON-RPC POST at once with a JSON body: `initialize` with a
//! minimal result, a notification with 202, any other request with a tool result echoing
//! `params.arguments.text`. No session, no auth, no MCP server behind it. Prints
//! `listening on http://ADDR` on stderr when it accepts connections.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

async fn answer(Json(message): Json<Value>) -> Response {
    let Some(id) = message.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = if message["method"] == "initialize" {
        json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "http-echo", "version": "0"},
        })
    } else {
        let text = message["params"]["arguments"]["text"].clone();
        json!({"content": [{"type": "text", "text": text}]})
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on http://{}", listener.local_addr()?);
    let app = axum::Router::new().fallback(axum::routing::post(answer));
    // Small answers go out at once, as BotCraft's listener sends them.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await?;
    Ok(())
}
