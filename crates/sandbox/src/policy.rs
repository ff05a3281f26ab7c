//! A server's sandbox policy as it is stored with the server's config and shown by the API,
//! the CLI and the dashboard: [`SandboxPolicy`].
//!
//! On the wire (camelCase, every field optional):
//!
//! ```json
//! {"enabled": true, "readWrite": ["${FORGE_BASH_LOG_DIR}"], "readOnly": ["/srv/models"],
//!  "network": "all", "unixSockets": false}
//! ```
//!
//! - `enabled`: confine the server (the default); `false` runs it as BotCraft runs it.
//! - `readWrite` / `readOnly`: folders or files beyond what every sandboxed server gets (the
//!   system folders read-only, the workspace and a private temporary folder read-write, its
//!   program read and execute). Entries may name the server's own variables as `${VAR}`. The
//!   workspace itself listed in `readOnly` makes it read-only for the server (a folder of it
//!   in `readWrite` is then the only part it writes).
//! - `network`: `"all"` (the default), `"none"`, or a list of TCP ports the server may
//!   connect to, each a number or a URL (`"${TYPESENSE_URL}"`: its port, or the scheme's).
//!   Not `"all"`, it has no UDP either, unless the list may need a name looked up (a bare
//!   port, or a URL whose host is not one address: [`crate::NetworkRules::looks_up_names`]).
//! - `unixSockets`: whether the server may make Unix sockets (default `false`: `socket(AF_UNIX)`
//!   and a datagram `socketpair` fail with "permission denied", so no socket file its uid
//!   may open is reachable: a Docker daemon, a local database; a stream pair works). Set it
//!   for a server whose job is such a socket, or a browser (Chromium binds one).

use serde::{Deserialize, Serialize};

/// Paths one list may hold at most.
pub const MAX_PATHS: usize = 64;
/// Entries the network list may hold at most.
pub const MAX_PORTS: usize = 64;
/// The longest path or network entry accepted.
pub const MAX_ENTRY_LEN: usize = 4096;

/// How one server's processes are confined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SandboxPolicy {
    /// Confine the server (the default).
    pub enabled: bool,
    /// Folders or files the server may also read and write.
    pub read_write: Vec<String>,
    /// Folders or files the server may also read.
    pub read_only: Vec<String>,
    /// Where the server may connect over TCP.
    pub network: NetworkPolicy,
    /// Whether the server may make Unix sockets (`socket(AF_UNIX)`; default no). Written
    /// only when true, so that a replica of the release before reads every other policy.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unix_sockets: bool,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            read_write: Vec::new(),
            read_only: Vec::new(),
            network: NetworkPolicy::All,
            unix_sockets: false,
        }
    }
}

impl SandboxPolicy {
    /// The default policy with `network`.
    pub fn with_network(network: NetworkPolicy) -> Self {
        Self {
            network,
            ..Self::default()
        }
    }

    /// The default policy with `path` read-write as well.
    pub fn read_write(mut self, path: impl Into<String>) -> Self {
        self.read_write.push(path.into());
        self
    }

    /// An unconfined server.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// Refuse what can never be a valid policy (whatever the server's variables): too many
    /// entries, empty or overlong ones, relative paths, ports out of range.
    pub fn validate(&self) -> Result<(), PolicyError> {
        for (field, paths) in [
            ("readWrite", &self.read_write),
            ("readOnly", &self.read_only),
        ] {
            if paths.len() > MAX_PATHS {
                return Err(PolicyError::TooMany {
                    field,
                    max: MAX_PATHS,
                });
            }
            for path in paths {
                check_entry(field, path)?;
                if !path.starts_with('/') && !path.starts_with("${") {
                    return Err(PolicyError::Relative {
                        field,
                        entry: path.clone(),
                    });
                }
            }
        }
        if let NetworkPolicy::Connect(entries) = &self.network {
            if entries.len() > MAX_PORTS {
                return Err(PolicyError::TooMany {
                    field: "network",
                    max: MAX_PORTS,
                });
            }
            for entry in entries {
                if let NetworkEntry::Named(text) = entry {
                    check_entry("network", text)?;
                    if !text.contains("${") {
                        port_of(text).ok_or_else(|| PolicyError::BadPort {
                            entry: text.clone(),
                        })?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The policy as the API writes it.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

fn check_entry(field: &'static str, entry: &str) -> Result<(), PolicyError> {
    if entry.trim().is_empty() || entry.len() > MAX_ENTRY_LEN || entry.contains('\0') {
        return Err(PolicyError::BadEntry {
            field,
            max: MAX_ENTRY_LEN,
        });
    }
    Ok(())
}

/// Where a sandboxed server may connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkPolicy {
    /// Anywhere.
    All,
    /// Nowhere over TCP (no connect, no listen).
    None,
    /// To these TCP ports only (no listen; a server also allowed Unix sockets may listen on
    /// a port the kernel picks, which Landlock's `bind` rule does not see).
    Connect(Vec<NetworkEntry>),
}

/// One allowed destination: a port, or a URL (possibly a `${VAR}` template) whose port counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkEntry {
    Port(u16),
    Named(String),
}

impl NetworkPolicy {
    fn to_value(&self) -> serde_json::Value {
        match self {
            Self::All => "all".into(),
            Self::None => "none".into(),
            Self::Connect(entries) => entries
                .iter()
                .map(|entry| match entry {
                    NetworkEntry::Port(port) => serde_json::Value::from(*port),
                    NetworkEntry::Named(text) => text.clone().into(),
                })
                .collect::<Vec<_>>()
                .into(),
        }
    }

    fn from_value(value: &serde_json::Value) -> Option<Self> {
        match value {
            serde_json::Value::String(word) => match word.as_str() {
                "all" => Some(Self::All),
                "none" => Some(Self::None),
                _ => None,
            },
            serde_json::Value::Array(items) => items
                .iter()
                .map(|item| match item {
                    serde_json::Value::Number(number) => number
                        .as_u64()
                        .and_then(|port| u16::try_from(port).ok())
                        .filter(|port| *port > 0)
                        .map(NetworkEntry::Port),
                    serde_json::Value::String(text) => Some(NetworkEntry::Named(text.clone())),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .map(Self::Connect),
            _ => None,
        }
    }
}

impl Serialize for NetworkPolicy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for NetworkPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Self::from_value(&value).ok_or_else(|| {
            serde::de::Error::custom(
                "network is \"all\", \"none\" or a list of TCP ports (numbers 1-65535 or URLs)",
            )
        })
    }
}

/// Whether `entry` is a URL whose host is not one address (`http://typesense.search:8108`,
/// `http://localhost:8108`, `mongodb://10.0.0.1:27017,db2:27017`), so that the server's
/// resolver may look a name up (over UDP when it asks DNS); `false` for a port number, one
/// address (`http://127.0.0.1:8108`, `http://[::1]:80`, `http://[fe80::1%25eth0]`) and what
/// is not a URL. A spelling of an address that only a resolver reads (`127.1`) counts as a
/// name.
pub fn names_a_host(entry: &str) -> bool {
    let Some((_, host_port)) = url_host_port(entry) else {
        return false;
    };
    let port_only = |text: &str| text.bytes().all(|b| b.is_ascii_digit());
    if let Some(bracketed) = host_port.strip_prefix('[') {
        // `[v6]`, `[v6%zone]` or either with `:port`.
        let Some((v6, after)) = bracketed.split_once(']') else {
            return true;
        };
        let address = v6.split('%').next().unwrap_or_default();
        let port_after = after.is_empty() || after.strip_prefix(':').is_some_and(port_only);
        return address.parse::<std::net::Ipv6Addr>().is_err() || !port_after;
    }
    let host = match host_port.rsplit_once(':') {
        Some((host, port)) if port_only(port) => host,
        _ => host_port,
    };
    host.parse::<std::net::Ipv4Addr>().is_err()
}

/// A URL's scheme and its authority's `host[:port]` (the user information left out); `None`
/// when `entry` is not a URL.
fn url_host_port(entry: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = entry.trim().split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    Some((
        scheme,
        authority.rsplit_once('@').map_or(authority, |(_, hp)| hp),
    ))
}

/// The TCP port `entry` names: a number, or a URL's explicit port, or its scheme's (http 80,
/// https 443); `None` when it names none.
pub fn port_of(entry: &str) -> Option<u16> {
    let entry = entry.trim();
    if let Ok(port) = entry.parse::<u16>() {
        return (port > 0).then_some(port);
    }
    let (scheme, host_port) = url_host_port(entry)?;
    // `[v6]:port` or `host:port`.
    let port = match host_port.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || host_port.starts_with('[') => {
            if port.is_empty() || port.contains(']') {
                None
            } else {
                Some(port)
            }
        }
        _ => None,
    };
    match port {
        Some(port) => port.parse::<u16>().ok().filter(|port| *port > 0),
        None => match scheme.to_ascii_lowercase().as_str() {
            "http" | "ws" => Some(80),
            "https" | "wss" => Some(443),
            _ => None,
        },
    }
}

/// Why a policy is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("sandbox.{field}: at most {max} entries")]
    TooMany { field: &'static str, max: usize },
    #[error("sandbox.{field}: an entry is empty, holds a NUL or is longer than {max} bytes")]
    BadEntry { field: &'static str, max: usize },
    #[error("sandbox.{field}: {entry:?} is not an absolute path (nor a ${{VAR}} template)")]
    Relative { field: &'static str, entry: String },
    #[error(
        "sandbox.network: {entry:?} names no TCP port (give a number, or a URL with a port or an http/https scheme)"
    )]
    BadPort { entry: String },
    #[error("sandbox.{field}: {entry:?} has a malformed ${{VAR}} reference")]
    BadReference { field: &'static str, entry: String },
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn policies_read_and_write_as_documented() {
        let cases = [
            (json!({}), SandboxPolicy::default()),
            (json!({"enabled": false}), SandboxPolicy::disabled()),
            (
                json!({"network": "none"}),
                SandboxPolicy::with_network(NetworkPolicy::None),
            ),
            (
                json!({"network": [8108, "${TYPESENSE_URL}"], "readWrite": ["/srv/x"]}),
                SandboxPolicy::with_network(NetworkPolicy::Connect(vec![
                    NetworkEntry::Port(8108),
                    NetworkEntry::Named("${TYPESENSE_URL}".into()),
                ]))
                .read_write("/srv/x"),
            ),
            (
                json!({"unixSockets": true}),
                SandboxPolicy {
                    unix_sockets: true,
                    ..SandboxPolicy::default()
                },
            ),
        ];
        for (value, policy) in cases {
            assert_eq!(
                serde_json::from_value::<SandboxPolicy>(value.clone()).ok(),
                Some(policy.clone()),
                "{value}"
            );
            let written = policy.to_value();
            assert_eq!(
                serde_json::from_value::<SandboxPolicy>(written).ok(),
                Some(policy)
            );
        }
        for bad in [
            json!({"network": "some"}),
            json!({"network": [0]}),
            json!({"network": [70000]}),
            json!({"network": [true]}),
            json!({"enabled": "yes"}),
            json!({"unixSockets": "yes"}),
            json!({"readWrite": "/srv"}),
            json!({"writable": ["/srv"]}),
        ] {
            assert!(
                serde_json::from_value::<SandboxPolicy>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn validation_refuses_what_can_never_work() {
        let long = "/".repeat(MAX_ENTRY_LEN + 1);
        let cases = [
            (SandboxPolicy::default().read_write("relative/dir"), false),
            (SandboxPolicy::default().read_write(""), false),
            (SandboxPolicy::default().read_write(long), false),
            (SandboxPolicy::default().read_write("/srv/data"), true),
            (SandboxPolicy::default().read_write("${LOG_DIR}"), true),
            (
                SandboxPolicy::with_network(NetworkPolicy::Connect(vec![NetworkEntry::Named(
                    "typesense".into(),
                )])),
                false,
            ),
            (
                SandboxPolicy::with_network(NetworkPolicy::Connect(vec![NetworkEntry::Named(
                    "http://127.0.0.1:8108".into(),
                )])),
                true,
            ),
        ];
        for (policy, valid) in cases {
            assert_eq!(policy.validate().is_ok(), valid, "{policy:?}");
        }
        let many = SandboxPolicy {
            read_only: vec!["/x".to_owned(); MAX_PATHS + 1],
            ..SandboxPolicy::default()
        };
        assert_eq!(
            many.validate(),
            Err(PolicyError::TooMany {
                field: "readOnly",
                max: MAX_PATHS
            })
        );
    }

    #[test]
    fn ports_come_from_numbers_and_urls() {
        let cases = [
            ("8108", Some(8108)),
            ("0", None),
            ("http://127.0.0.1:8108", Some(8108)),
            ("http://typesense/collections", Some(80)),
            ("https://search.example.com", Some(443)),
            ("https://user:pw@host:9443/x", Some(9443)),
            ("http://[::1]:7700/", Some(7700)),
            ("http://[::1]/", Some(80)),
            ("ftp://host", None),
            ("host:8108", None),
            ("http://host:99999", None),
        ];
        for (entry, port) in cases {
            assert_eq!(port_of(entry), port, "{entry}");
        }
    }
}
