//! Settings, read once from the environment in `main` into typed values.
//!
//! The server starts with nothing: missing settings are kept as such and
//! only a call that needs them fails (`not_configured`, naming the
//! variables). API keys live in [`ApiKey`], whose `Debug` hides the value, so
//! a key cannot reach a log line or an error message by accident.

use std::fmt;
use std::time::Duration;

use reqwest::Url;

pub const URL_VAR: &str = "TYPESENSE_URL";
pub const SEARCH_KEY_VAR: &str = "TYPESENSE_SEARCH_KEY";
pub const ADMIN_KEY_VAR: &str = "TYPESENSE_API_KEY";
pub const COLLECTION_VAR: &str = "TYPESENSE_COLLECTION";
pub const TIMEOUT_VAR: &str = "TYPESENSE_TIMEOUT_MS";
pub const REPO_VAR: &str = "REPO_PATH";

pub const DEFAULT_COLLECTION: &str = "uvilo";
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
pub const DEFAULT_REPO_PATH: &str = "/workspace/erik/uvilo-os";

/// An API key. Never printed: `Debug` shows `ApiKey(***)`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// Where Typesense is and how to reach it: everything a request needs.
#[derive(Debug, Clone)]
pub struct Connection {
    pub url: Url,
    pub key: ApiKey,
    pub collection: String,
    pub timeout: Duration,
}

/// A setting that is missing or unusable. The message names the variable
/// and never its value when the value is a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "Typesense is not configured: set {}. {URL_VAR} is the server's base URL (e.g. http://localhost:8108).",
        missing.join(" and ")
    )]
    Missing { missing: Vec<&'static str> },
    #[error("{URL_VAR} is not an http(s) URL: {value:?} ({reason}).")]
    BadUrl { value: String, reason: String },
    #[error("{TIMEOUT_VAR} must be a whole number of milliseconds above 0, not {value:?}.")]
    BadTimeout { value: String },
}

/// The environment as read once: each variable's value, or `None` when unset
/// or empty.
#[derive(Debug, Clone, Default)]
pub struct RawEnv {
    pub url: Option<String>,
    pub search_key: Option<String>,
    pub admin_key: Option<String>,
    pub collection: Option<String>,
    pub timeout_ms: Option<String>,
    pub repo_path: Option<String>,
}

impl RawEnv {
    /// The variables as `main` read them (trimmed; unset, empty or blank is `None`).
    pub fn from_settings(settings: &server_kit::Settings) -> Self {
        let read = |name: &str| settings.text(name);
        RawEnv {
            url: read(URL_VAR),
            search_key: read(SEARCH_KEY_VAR),
            admin_key: read(ADMIN_KEY_VAR),
            collection: read(COLLECTION_VAR),
            timeout_ms: read(TIMEOUT_VAR),
            repo_path: read(REPO_VAR),
        }
    }

    /// The connection the MCP server searches with (the search key).
    pub fn search_connection(&self) -> Result<Connection, ConfigError> {
        self.connection(self.search_key.as_deref(), SEARCH_KEY_VAR)
    }

    /// The connection `forge-typesense index` writes with (the admin key).
    pub fn admin_connection(&self) -> Result<Connection, ConfigError> {
        self.connection(self.admin_key.as_deref(), ADMIN_KEY_VAR)
    }

    pub fn collection(&self) -> String {
        self.collection
            .clone()
            .unwrap_or_else(|| DEFAULT_COLLECTION.to_owned())
    }

    pub fn repo_path(&self) -> String {
        self.repo_path
            .clone()
            .unwrap_or_else(|| DEFAULT_REPO_PATH.to_owned())
    }

    fn connection(
        &self,
        key: Option<&str>,
        key_var: &'static str,
    ) -> Result<Connection, ConfigError> {
        let mut missing = Vec::new();
        if self.url.is_none() {
            missing.push(URL_VAR);
        }
        if key.is_none() {
            missing.push(key_var);
        }
        let (Some(url), Some(key)) = (self.url.as_deref(), key) else {
            return Err(ConfigError::Missing { missing });
        };
        Ok(Connection {
            url: parse_url(url)?,
            key: ApiKey::new(key),
            collection: self.collection(),
            timeout: self.timeout()?,
        })
    }

    fn timeout(&self) -> Result<Duration, ConfigError> {
        match self.timeout_ms.as_deref() {
            None => Ok(DEFAULT_TIMEOUT),
            Some(text) => match text.parse::<u64>() {
                Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
                _ => Err(ConfigError::BadTimeout {
                    value: text.to_owned(),
                }),
            },
        }
    }
}

fn parse_url(text: &str) -> Result<Url, ConfigError> {
    let bad = |reason: &str| ConfigError::BadUrl {
        value: text.to_owned(),
        reason: reason.to_owned(),
    };
    let url = Url::parse(text).map_err(|error| bad(&error.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https"));
    }
    if url.host_str().is_none() {
        return Err(bad("no host"));
    }
    Ok(url)
}

/// `base` + `path` (which starts with `/`), keeping any path prefix of the
/// base (a Typesense behind `https://host/typesense`).
pub fn endpoint(base: &Url, path: &str) -> String {
    format!("{}{path}", base.as_str().trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn env(url: Option<&str>, search_key: Option<&str>) -> RawEnv {
        RawEnv {
            url: url.map(str::to_owned),
            search_key: search_key.map(str::to_owned),
            ..RawEnv::default()
        }
    }

    #[test]
    fn missing_settings_are_named() {
        let cases = [
            (env(None, None), "TYPESENSE_URL and TYPESENSE_SEARCH_KEY"),
            (env(Some("http://h:8108"), None), "TYPESENSE_SEARCH_KEY"),
            (env(None, Some("k")), "TYPESENSE_URL"),
        ];
        for (raw, names) in cases {
            let error = raw.search_connection().expect_err("missing");
            assert_eq!(
                error.to_string(),
                format!(
                    "Typesense is not configured: set {names}. TYPESENSE_URL is the server's base URL (e.g. http://localhost:8108)."
                )
            );
        }
    }

    #[test]
    fn urls_must_be_http() {
        for bad in ["localhost:8108", "ftp://h", "not a url"] {
            let error = env(Some(bad), Some("k"))
                .search_connection()
                .expect_err("bad url");
            assert!(
                matches!(error, ConfigError::BadUrl { .. }),
                "{bad}: {error}"
            );
        }
        let connection = env(Some("https://h/ts/"), Some("secret"))
            .search_connection()
            .expect("good url");
        assert_eq!(
            endpoint(&connection.url, "/multi_search"),
            "https://h/ts/multi_search"
        );
        assert_eq!(connection.collection, "uvilo");
        assert_eq!(connection.timeout, Duration::from_secs(15));
    }

    #[test]
    fn keys_never_show_in_debug() {
        let connection = env(Some("http://h"), Some("very-secret"))
            .search_connection()
            .expect("connection");
        let printed = format!("{connection:?}");
        assert!(!printed.contains("very-secret"), "{printed}");
        assert!(printed.contains("ApiKey(***)"));
    }

    #[test]
    fn timeouts_are_positive_milliseconds() {
        let mut raw = env(Some("http://h"), Some("k"));
        raw.timeout_ms = Some("250".into());
        assert_eq!(
            raw.search_connection().expect("ok").timeout,
            Duration::from_millis(250)
        );
        raw.timeout_ms = Some("0".into());
        assert_eq!(
            raw.search_connection().expect_err("zero"),
            ConfigError::BadTimeout { value: "0".into() }
        );
    }
}
