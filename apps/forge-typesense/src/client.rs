//! Typesense over HTTP: the few endpoints forge-typesense uses, and what can
//! go wrong talking to it ([`UpstreamError`], each kind with its reason code).
//!
//! Every request carries `X-TYPESENSE-API-KEY` (marked sensitive) and a
//! deadline. Error bodies are capped and scrubbed of the key; URLs in
//! messages lose any user:password part. Nothing here logs the key.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Method, Url};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use server_kit::ReasonCode;

use crate::config::{Connection, endpoint};

/// At most this much of an error body goes into a message.
pub const MAX_ERROR_BODY: usize = 1024;
/// At most this much of an unparsable answer goes into a message.
pub const BAD_PAYLOAD_QUOTE: usize = 200;
/// Answers longer than this are refused.
pub const MAX_BODY: usize = 32 * 1024 * 1024;
/// Writes (imports, schema changes) may take longer than searches.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(300);

const KEY_HEADER: &str = "X-TYPESENSE-API-KEY";

/// A failed exchange with Typesense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    #[error("Typesense at {url} could not be reached: {detail}.")]
    Unreachable { url: String, detail: String },
    #[error("Typesense at {url} did not answer within {} ms.", timeout.as_millis())]
    Timeout { url: String, timeout: Duration },
    // The seed's text, word for word (`Typesense HTTP ${status}: ${body}`); the URL is in the
    // variant (`forge-typesense index` names it).
    #[error("Typesense HTTP {status}: {body}")]
    Http {
        url: String,
        status: u16,
        body: String,
    },
    #[error(
        "Typesense could not run the search on collection \"{collection}\": {message} (code {code}).{hint}"
    )]
    SearchFailed {
        collection: String,
        code: u16,
        message: String,
        hint: String,
    },
    #[error("Typesense answered {url} with something unexpected: {detail}.")]
    BadPayload { url: String, detail: String },
}

impl UpstreamError {
    pub fn reason(&self) -> ReasonCode {
        match self {
            UpstreamError::Unreachable { .. } | UpstreamError::Timeout { .. } => {
                ReasonCode::UpstreamUnreachable
            }
            UpstreamError::Http { .. } | UpstreamError::SearchFailed { .. } => {
                ReasonCode::UpstreamHttpError
            }
            UpstreamError::BadPayload { .. } => ReasonCode::UpstreamBadPayload,
        }
    }
}

/// One `multi_search` answer: `results[i]` answers `searches[i]`.
#[derive(Debug, Clone, Deserialize)]
pub struct MultiSearchResponse {
    pub results: Vec<SearchResult>,
}

/// One search's result, or its error (which Typesense reports inside a
/// 200 answer as `{"code": 404, "error": "Not found."}`).
#[derive(Debug, Clone, Deserialize)]
pub struct SearchResult {
    pub found: Option<u64>,
    pub hits: Option<Vec<Hit>>,
    pub code: Option<u16>,
    pub error: Option<String>,
}

/// One hit. `text_match` exceeds 2^53, hence `u64`.
#[derive(Debug, Clone, Deserialize)]
pub struct Hit {
    pub document: serde_json::Map<String, Value>,
    /// The current form: field → `{snippet, matched_tokens}` (or an array of
    /// those for array fields).
    #[serde(default)]
    pub highlight: Option<serde_json::Map<String, Value>>,
    /// The older form: `[{field, snippet | snippets, matched_tokens}]`.
    #[serde(default)]
    pub highlights: Option<Vec<OldHighlight>>,
    pub text_match: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct OldHighlight {
    pub field: String,
    pub snippet: Option<String>,
    pub snippets: Option<Vec<String>>,
}

/// One line of an import answer.
#[derive(Debug, Clone, Deserialize)]
pub struct ImportLine {
    pub success: bool,
    pub error: Option<String>,
}

/// A Typesense server and one API key.
#[derive(Debug, Clone)]
pub struct TypesenseClient {
    http: reqwest::Client,
    connection: Connection,
}

impl TypesenseClient {
    pub fn new(connection: Connection) -> Result<Self, UpstreamError> {
        let mut key = HeaderValue::from_str(connection.key.expose()).map_err(|_| {
            UpstreamError::Unreachable {
                url: shown_url(&connection.url),
                detail: "the API key holds characters an HTTP header cannot carry".to_owned(),
            }
        })?;
        key.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(KEY_HEADER, key);
        let http = reqwest::Client::builder()
            .default_headers(headers)
            // Typesense answers where it is asked and never redirects; a redirect would carry
            // the key header (reqwest drops only `Authorization` on another host) elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(connection.timeout)
            .connect_timeout(connection.timeout)
            .build()
            .map_err(|error| UpstreamError::Unreachable {
                url: shown_url(&connection.url),
                detail: format!("cannot build the HTTP client: {}", root_cause(&error)),
            })?;
        Ok(Self { http, connection })
    }

    pub fn collection(&self) -> &str {
        &self.connection.collection
    }

    /// The URL of `path` as messages show it (no credentials).
    pub fn shown_endpoint(&self, path: &str) -> String {
        shown(&endpoint(&self.connection.url, path))
    }

    /// `POST /multi_search` with `{"searches": [...]}`.
    pub async fn multi_search(
        &self,
        searches: Vec<Value>,
    ) -> Result<MultiSearchResponse, UpstreamError> {
        let body = serde_json::json!({ "searches": searches });
        let (url, text) = self
            .send(
                Method::POST,
                "/multi_search",
                Some(Payload::Json(body)),
                None,
            )
            .await?;
        self.parse(&url, &text)
    }

    /// The collection's description, or `None` when it does not exist.
    pub async fn get_collection(&self) -> Result<Option<Value>, UpstreamError> {
        let path = format!("/collections/{}", self.connection.collection);
        match self.send(Method::GET, &path, None, None).await {
            Ok((url, text)) => self.parse(&url, &text).map(Some),
            Err(UpstreamError::Http { status: 404, .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    pub async fn create_collection(&self, schema: Value) -> Result<(), UpstreamError> {
        self.send(
            Method::POST,
            "/collections",
            Some(Payload::Json(schema)),
            Some(WRITE_TIMEOUT),
        )
        .await
        .map(|_| ())
    }

    /// `PATCH /collections/{c}` adding `fields` to the schema.
    pub async fn add_fields(&self, fields: Vec<Value>) -> Result<(), UpstreamError> {
        let path = format!("/collections/{}", self.connection.collection);
        let body = serde_json::json!({ "fields": fields });
        self.send(
            Method::PATCH,
            &path,
            Some(Payload::Json(body)),
            Some(WRITE_TIMEOUT),
        )
        .await
        .map(|_| ())
    }

    /// `id → content_hash` of every stored document that has a
    /// `content_hash` (documents without one were not written by us).
    pub async fn stored_hashes(&self) -> Result<HashMap<String, String>, UpstreamError> {
        let path = format!(
            "/collections/{}/documents/export?include_fields=id,content_hash",
            self.connection.collection
        );
        let (url, text) = self
            .send(Method::GET, &path, None, Some(WRITE_TIMEOUT))
            .await?;
        #[derive(Deserialize)]
        struct Stored {
            id: String,
            content_hash: Option<String>,
        }
        let mut hashes = HashMap::new();
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            let stored: Stored = self.parse(&url, line)?;
            if let Some(hash) = stored.content_hash {
                hashes.insert(stored.id, hash);
            }
        }
        Ok(hashes)
    }

    /// `POST /collections/{c}/documents/import?action=upsert` with JSONL.
    pub async fn import(&self, jsonl: String) -> Result<Vec<ImportLine>, UpstreamError> {
        let path = format!(
            "/collections/{}/documents/import?action=upsert",
            self.connection.collection
        );
        let (url, text) = self
            .send(
                Method::POST,
                &path,
                Some(Payload::Text(jsonl)),
                Some(WRITE_TIMEOUT),
            )
            .await?;
        text.lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| self.parse(&url, line))
            .collect()
    }

    /// Delete one document; one that is already gone is not an error.
    pub async fn delete_document(&self, id: &str) -> Result<(), UpstreamError> {
        let path = format!("/collections/{}/documents/{id}", self.connection.collection);
        match self
            .send(Method::DELETE, &path, None, Some(WRITE_TIMEOUT))
            .await
        {
            Ok(_) | Err(UpstreamError::Http { status: 404, .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Send one request; a 2xx answer's body as text, else an error.
    async fn send(
        &self,
        method: Method,
        path: &str,
        payload: Option<Payload>,
        timeout: Option<Duration>,
    ) -> Result<(String, String), UpstreamError> {
        let target = endpoint(&self.connection.url, path);
        let url = shown(&target);
        let mut request = self.http.request(method, &target);
        if let Some(timeout) = timeout {
            request = request.timeout(timeout);
        }
        request = match payload {
            Some(Payload::Json(value)) => request.json(&value),
            Some(Payload::Text(text)) => request.header(CONTENT_TYPE, "text/plain").body(text),
            None => request,
        };
        let timeout = timeout.unwrap_or(self.connection.timeout);
        let mut response = request
            .send()
            .await
            .map_err(|error| transport_error(&url, timeout, &error))?;
        let status = response.status();
        let limit = if status.is_success() {
            MAX_BODY
        } else {
            MAX_ERROR_BODY
        };
        let mut body = Vec::new();
        let mut more = 0usize;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| transport_error(&url, timeout, &error))?
        {
            let room = (limit + 1).saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            more += chunk.len() - chunk.len().min(room);
            if !status.is_success() && body.len() > limit {
                // Enough to show; do not read a huge error body to the end.
                more += 1;
                break;
            }
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        if !status.is_success() {
            return Err(UpstreamError::Http {
                url,
                status: status.as_u16(),
                body: self.error_body(&text, limit, more),
            });
        }
        if body.len() > limit {
            return Err(UpstreamError::BadPayload {
                url,
                detail: format!("the answer is larger than {} MiB", MAX_BODY / 1024 / 1024),
            });
        }
        Ok((url, text))
    }

    /// `text` as JSON, else a bad-payload error quoting how the text starts.
    fn parse<T: DeserializeOwned>(&self, url: &str, text: &str) -> Result<T, UpstreamError> {
        serde_json::from_str(text).map_err(|error| UpstreamError::BadPayload {
            url: url.to_owned(),
            detail: format!(
                "{error}; the answer starts with: {}",
                self.error_body(text, BAD_PAYLOAD_QUOTE, 0)
            ),
        })
    }

    /// An error body for a message: capped, on one line, without the key.
    fn error_body(&self, text: &str, limit: usize, more: usize) -> String {
        let key = self.connection.key.expose();
        let scrubbed = if key.is_empty() {
            text.to_owned()
        } else {
            text.replace(key, "***")
        };
        let one_line = scrubbed.split_whitespace().collect::<Vec<_>>().join(" ");
        if one_line.is_empty() {
            return "(empty body)".to_owned();
        }
        let mut shown: String = one_line.chars().take(limit).collect();
        if more > 0 || one_line.len() > shown.len() {
            shown.push_str(&format!(" … (cut at {limit} bytes)"));
        }
        shown
    }
}

enum Payload {
    Json(Value),
    Text(String),
}

fn transport_error(url: &str, timeout: Duration, error: &reqwest::Error) -> UpstreamError {
    if error.is_timeout() {
        UpstreamError::Timeout {
            url: url.to_owned(),
            timeout,
        }
    } else {
        UpstreamError::Unreachable {
            url: url.to_owned(),
            detail: root_cause(error),
        }
    }
}

/// The innermost cause: "Connection refused (os error 111)" rather than
/// "error sending request".
fn root_cause(error: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// A URL as shown in messages: without user or password.
fn shown_url(url: &Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.to_string()
}

fn shown(target: &str) -> String {
    Url::parse(target)
        .map(|url| shown_url(&url))
        .unwrap_or_else(|_| target.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiKey;
    use pretty_assertions::assert_eq;

    fn client(key: &str) -> TypesenseClient {
        TypesenseClient::new(Connection {
            url: Url::parse("http://user:pw@127.0.0.1:1/").expect("url"),
            key: ApiKey::new(key),
            collection: "uvilo".into(),
            timeout: Duration::from_secs(1),
        })
        .expect("client")
    }

    #[test]
    fn reason_codes_follow_the_kind_of_failure() {
        let url = String::from("u");
        let cases = [
            (
                UpstreamError::Unreachable {
                    url: url.clone(),
                    detail: "refused".into(),
                },
                ReasonCode::UpstreamUnreachable,
            ),
            (
                UpstreamError::Timeout {
                    url: url.clone(),
                    timeout: Duration::from_secs(15),
                },
                ReasonCode::UpstreamUnreachable,
            ),
            (
                UpstreamError::Http {
                    url: url.clone(),
                    status: 500,
                    body: "x".into(),
                },
                ReasonCode::UpstreamHttpError,
            ),
            (
                UpstreamError::SearchFailed {
                    collection: "c".into(),
                    code: 404,
                    message: "Not found.".into(),
                    hint: String::new(),
                },
                ReasonCode::UpstreamHttpError,
            ),
            (
                UpstreamError::BadPayload {
                    url,
                    detail: "x".into(),
                },
                ReasonCode::UpstreamBadPayload,
            ),
        ];
        for (error, code) in cases {
            assert_eq!(error.reason(), code, "{error}");
        }
    }

    #[test]
    fn error_bodies_are_capped_one_line_and_without_the_key() {
        let client = client("sekrit");
        assert_eq!(
            client.error_body("{\"message\":\n \"bad key sekrit\"}", 1024, 0),
            "{\"message\": \"bad key ***\"}"
        );
        let long = "x".repeat(2000);
        let shown = client.error_body(&long, 1024, 10);
        assert_eq!(shown, format!("{} … (cut at 1024 bytes)", "x".repeat(1024)));
        assert_eq!(client.error_body("  ", 1024, 0), "(empty body)");
    }

    #[test]
    fn urls_in_messages_have_no_credentials() {
        assert_eq!(
            shown("http://user:pw@127.0.0.1:1/multi_search"),
            "http://127.0.0.1:1/multi_search"
        );
    }

    #[test]
    fn hits_keep_text_match_above_2_pow_53_exactly() {
        let hit: Hit =
            serde_json::from_str(r#"{"document": {}, "text_match": 578730123365711977}"#)
                .expect("hit");
        assert_eq!(hit.text_match, Some(578_730_123_365_711_977));
    }
}
