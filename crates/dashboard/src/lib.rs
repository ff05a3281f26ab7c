//! BotCraft's operator dashboard: a single static page that drives the admin API from the
//! browser, and chats with a bot. [`router`] serves it at `/`, with its scripts and style
//! sheet under `/dashboard/`. The files are embedded with `include_str!`, so the page needs
//! no build step and no files on disk.
//!
//! The page holds no data of its own. It asks for an API key (admin; a chat key gets a
//! read-only page), keeps it in
//! `sessionStorage` and sends it as `Authorization: Bearer` on every fetch, never in a URL.
//! It polls `GET /api/servers` every 2 s. It calls `POST /api/servers/{name}/start|stop|restart`,
//! `GET /api/servers/{name}/logs`, `GET /api/bots`, `GET /api/bots/{id}/servers` and
//! `GET /api/tools/search`, and `PUT /api/bots/{id}/servers/{server}` and `PUT /api/bots/{id}`
//! to change a binding's and a bot's native tools' approval policy.
//!
//! The chat (`chat.js`) posts to `/api/ai/chat` as an AI SDK client does, parses the UI
//! message stream by hand, shows tool calls with their inputs, outputs and images, asks the
//! person to approve or deny a call that asks, and keeps the conversation in
//! `sessionStorage`. Every response carries a strict Content-Security-Policy (no inline
//! script, same-origin fetches only; images from the page or `data:` URLs, which is how a
//! tool result's image arrives).

use axum::Router;
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::get;

/// The page.
pub const INDEX_HTML: &str = include_str!("../assets/index.html");
/// Its script.
pub const APP_JS: &str = include_str!("../assets/app.js");
/// The chat's script.
pub const CHAT_JS: &str = include_str!("../assets/chat.js");
/// Its style sheet.
pub const APP_CSS: &str = include_str!("../assets/app.css");

/// Path of the script, as `index.html` links it.
pub const APP_JS_PATH: &str = "/dashboard/app.js";
/// Path of the chat's script, as `index.html` links it.
pub const CHAT_JS_PATH: &str = "/dashboard/chat.js";
/// Path of the style sheet, as `index.html` links it.
pub const APP_CSS_PATH: &str = "/dashboard/app.css";

/// What the page may load and where it may connect: itself only.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    let headers: [(HeaderName, HeaderValue); 5] = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
    ];
    (headers, body)
}

/// `GET /`, `GET /dashboard/app.js`, `GET /dashboard/chat.js`, `GET /dashboard/app.css`, for any router state; merge
/// it into the app's router.
pub fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            APP_JS_PATH,
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            CHAT_JS_PATH,
            get(|| async { asset("text/javascript; charset=utf-8", CHAT_JS) }),
        )
        .route(
            APP_CSS_PATH,
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
}
