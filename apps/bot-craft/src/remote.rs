//! The HTTP client of the admin API that the CLI commands (`servers`, `bots`, `tools`,
//! `chat`) use against a running `botcraft serve` (`BOTCRAFT_URL`, `BOTCRAFT_API_KEY`).
//! Going through the API (rather than the database) means a change reaches the running
//! manager at once, and process commands (start, logs, tool calls, chat) have a process to
//! act on.

use anyhow::Context;
use reqwest::Method;
use serde_json::Value;

use crate::config::RemoteArgs;

pub struct Remote {
    base: String,
    key: Option<String>,
    http: reqwest::Client,
}

impl Remote {
    pub fn new(args: &RemoteArgs) -> Self {
        Self {
            base: args.url.trim_end_matches('/').to_owned(),
            key: args.key(),
            http: reqwest::Client::new(),
        }
    }

    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let builder = self.http.request(method, format!("{}{path}", self.base));
        match &self.key {
            Some(key) => builder.bearer_auth(key),
            None => builder,
        }
    }

    /// Sends a request and returns its JSON body (`null` for 204); an error answer becomes
    /// an error naming its code and message.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<Value> {
        let mut request = self.request(method.clone(), path);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.with_context(|| {
            format!(
                "cannot reach BotCraft at {} (is `botcraft serve` running?)",
                self.base
            )
        })?;
        check(response).await
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send(Method::GET, path, None).await
    }
}

/// The JSON of a successful response, or an error from the API's error body.
pub async fn check(response: reqwest::Response) -> anyhow::Result<Value> {
    let status = response.status();
    let text = response.text().await?;
    if status.is_success() {
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        return serde_json::from_str(&text).context("BotCraft answered something that is not JSON");
    }
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    match (
        body["error"]["code"].as_str(),
        body["error"]["message"].as_str(),
    ) {
        (Some(code), Some(message)) => anyhow::bail!("{status} {code}: {message}"),
        _ => anyhow::bail!("{status}: {text}"),
    }
}

/// `name` as a path segment.
pub fn segment(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `value` as pretty JSON. serde escapes what is below U+0020; DEL, C1 controls and
/// invisible characters in its strings (a tool's result, a server's text) are written as
/// JSON escapes too ([`crate::terminal::printable_json`]): the same value, nothing that
/// drives or hides on a terminal.
pub fn print_json(value: &Value) {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    println!("{}", crate::terminal::printable_json(&text));
}
