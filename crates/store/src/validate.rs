//! Validation on write: every spec is checked here before any SQL runs.
//!
//! Refused env keys ([`is_forbidden_env_key`]): a stored config must not be able to change
//! which code a server process loads or how its interpreter starts. Refused are
//! - every `LD_*` key (the dynamic loader: `LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT`, …)
//!   and every `DYLD_*` key (its macOS counterpart);
//! - `PATH` (BotCraft's own `PATH` is passed on; a config cannot redirect `npx` or `node`);
//! - interpreter hooks: `NODE_OPTIONS`, `NODE_PATH`, `PYTHONPATH`, `PYTHONHOME`,
//!   `PYTHONSTARTUP`, `PYTHONUSERBASE`, `PERL5LIB`, `PERL5OPT`, `PERLLIB`, `RUBYOPT`,
//!   `RUBYLIB`, `JAVA_TOOL_OPTIONS`, `_JAVA_OPTIONS`, `JDK_JAVA_OPTIONS`, `CLASSPATH`;
//! - shell start-up and parsing: `BASH_ENV`, `ENV`, `SHELLOPTS`, `BASHOPTS`, `IFS`;
//! - glibc hooks: `GCONV_PATH`, `GLIBC_TUNABLES`, `MALLOC_CHECK_`, `HOSTALIASES`, `LOCALDOMAIN`, `RESOLV_HOST_CONF`;
//!
//! Keys are compared case-sensitively, as the loader and interpreters read them.
//!
//! A third-party document (an MCP Registry entry) may not set, besides, what chooses where a
//! package or an image comes from ([`is_package_source_key`]): an operator's own config may
//! (a company mirror, a rootless Docker's `DOCKER_HOST`).

use crate::api_keys::ApiKeySpec;
use crate::approval::ApprovalPolicy;
use crate::error::ValidationError;
use crate::model::{BindingSpec, BotSpec, McpServerSpec};
use env_template::{is_variable_name, parse_env_value};

/// The longest accepted timeout (tool call, initialize, idle): 24 hours in ms.
pub const MAX_TIMEOUT_MS: i64 = 24 * 60 * 60 * 1000;
/// The largest accepted step limit of a bot.
pub const MAX_STEP_LIMIT: i64 = 1000;
/// The largest `maxToolResultChars` a bot may set (10 million characters).
pub const MAX_TOOL_RESULT_CHARS: i64 = 10_000_000;
/// The longest accepted server or bot name.
pub const MAX_NAME_LEN: usize = 64;

const FORBIDDEN_ENV_PREFIXES: &[&str] = &["LD_", "DYLD_"];

/// Package managers' and container runtimes' settings ([`is_package_source_key`]).
const PACKAGE_SOURCE_PREFIXES: &[&str] = &[
    "UV_",
    "PIP_",
    "BUN_",
    "YARN_",
    "PNPM_",
    "COREPACK_",
    "DOCKER_",
    "PODMAN_",
    "CONTAINERS_",
];
/// Variables that point a package manager at files or certificates of someone's choosing.
const PACKAGE_SOURCE_KEYS: &[&str] = &[
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_TLS_REJECT_UNAUTHORIZED",
    "CONTAINER_HOST",
    "CONTAINER_CONNECTION",
    "CONTAINER_SSHKEY",
    "REGISTRY_AUTH_FILE",
];

/// Whether `key` chooses where a package or an image comes from, or what a package manager
/// trusts: every `UV_*`, `PIP_*`, `BUN_*`, `YARN_*`, `PNPM_*`, `COREPACK_*`, `DOCKER_*`,
/// `PODMAN_*` and `CONTAINERS_*` key, `npm_config_*` in any case (npm reads both), podman's
/// `CONTAINER_HOST` and kin, the home and XDG folders, proxies, CA bundles and TLS checks. A registry document may set none of them
/// (`npm_config_registry` made a pinned `npx` package come from another registry).
pub fn is_package_source_key(key: &str) -> bool {
    const NPM: &str = "npm_config_";
    PACKAGE_SOURCE_KEYS.contains(&key)
        || PACKAGE_SOURCE_PREFIXES.iter().any(|p| key.starts_with(p))
        || key
            .get(..NPM.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(NPM))
}
const FORBIDDEN_ENV_KEYS: &[&str] = &[
    "PATH",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "PERL5LIB",
    "PERL5OPT",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "IFS",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "MALLOC_CHECK_",
    "HOSTALIASES",
    "LOCALDOMAIN",
    "RESOLV_HOST_CONF",
];

/// Whether a server config may not set `key` (see the module docs for the list).
pub fn is_forbidden_env_key(key: &str) -> bool {
    FORBIDDEN_ENV_KEYS.contains(&key) || FORBIDDEN_ENV_PREFIXES.iter().any(|p| key.starts_with(p))
}

fn name(entity: &'static str, name: &str) -> Result<(), ValidationError> {
    if name.trim().is_empty() {
        return Err(ValidationError::EmptyName { entity });
    }
    let ok = name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ValidationError::BadName {
            entity,
            name: name.to_owned(),
        })
    }
}

/// What a server's name is in its tools' names (`server__tool`): `.` written `_`, as every
/// character outside `[A-Za-z0-9_-]` is (a valid name has no other).
pub fn tool_name_prefix(name: &str) -> String {
    name.replace('.', "_")
}

/// Whether a server's name leaves its tools' names unambiguous: its [`tool_name_prefix`]
/// holds no `__` and does not end with `_`. Then the first `__` of a tool's name is where its
/// server's part ends, so no tool of one server can be named as another server's tool is
/// (`corp` + `fs__delete` against `corp__fs` + `delete`, `gh` + `_x` against `gh_` + `x`).
pub fn unambiguous_server_name(name: &str) -> bool {
    let prefix = tool_name_prefix(name);
    !prefix.contains("__") && !prefix.ends_with('_')
}

fn timeout(server: &str, field: &'static str, value: i64) -> Result<(), ValidationError> {
    if (1..=MAX_TIMEOUT_MS).contains(&value) {
        Ok(())
    } else {
        Err(ValidationError::TimeoutOutOfRange {
            server: server.to_owned(),
            field,
            value,
            max: MAX_TIMEOUT_MS,
        })
    }
}

/// Whether `text` holds a character no process argument or environment may carry: NUL (the
/// kernel cannot pass it) or another C0 control or DEL, tab and newline excepted where
/// `multiline` (an argument or a value may be a script).
fn has_control(text: &str, multiline: bool) -> bool {
    text.chars().any(|c| {
        (c.is_ascii_control() || c == '\u{7f}') && !(multiline && matches!(c, '\t' | '\n'))
    })
}

/// Check an MCP server spec.
pub fn server(spec: &McpServerSpec) -> Result<(), ValidationError> {
    name("MCP server", &spec.name)?;
    if !unambiguous_server_name(&spec.name) {
        return Err(ValidationError::AmbiguousServerName {
            name: spec.name.clone(),
        });
    }
    let server = spec.name.as_str();
    if spec.transport.is_remote() {
        remote(spec)?;
    } else {
        if spec.command.trim().is_empty() {
            return Err(ValidationError::EmptyCommand {
                server: server.to_owned(),
            });
        }
        let not_for = |field| ValidationError::NotForTransport {
            server: server.to_owned(),
            transport: spec.transport.to_string(),
            field,
        };
        if spec.url.is_some() {
            return Err(not_for("url"));
        }
        if !spec.headers.is_empty() {
            return Err(not_for("headers"));
        }
    }
    let control = |field: String| ValidationError::ControlCharacter {
        server: server.to_owned(),
        field,
    };
    if has_control(&spec.command, false) {
        return Err(control("command".into()));
    }
    if let Some(index) = spec.args.iter().position(|arg| has_control(arg, true)) {
        return Err(control(format!("args[{index}]")));
    }
    for (key, value) in &spec.env {
        if has_control(value, true) {
            return Err(control(format!("env {key}")));
        }
    }
    if spec
        .instructions
        .as_deref()
        .is_some_and(|text| text.contains('\0'))
    {
        return Err(control("instructions".into()));
    }
    sandbox_policy(server, &spec.sandbox)?;
    timeout(server, "timeout", spec.timeout)?;
    timeout(server, "initTimeout", spec.init_timeout)?;
    timeout(server, "idleTimeoutMs", spec.idle_timeout_ms)?;
    for (key, value) in &spec.env {
        if !is_variable_name(key) {
            return Err(ValidationError::BadEnvKey {
                server: server.to_owned(),
                key: key.clone(),
            });
        }
        if is_forbidden_env_key(key) {
            return Err(ValidationError::ForbiddenEnvKey {
                server: server.to_owned(),
                key: key.clone(),
            });
        }
        if parse_env_value(value).is_err() {
            return Err(ValidationError::BadEnvReference {
                server: server.to_owned(),
                key: key.clone(),
            });
        }
    }
    Ok(())
}

/// Headers a remote server's transport sets itself: a config may not set or override them.
pub const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
    "te",
    "transfer-encoding",
    "upgrade",
];

/// Whether `name` is an HTTP header name (RFC 9110 `token`).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Why `url` is not an endpoint BotCraft connects to, if it is not: an absolute `http` or
/// `https` URL with a host, no user or password (a credential belongs in a header, where it
/// is never shown), no whitespace or control character.
pub fn url_problem(url: &str) -> Option<&'static str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let Some(rest) = rest else {
        return Some("the scheme is not http or https");
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("it holds whitespace or a control character");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Some("it carries a user or password");
    }
    let host = authority
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(authority, |(host, _)| host);
    if host.is_empty() || host == "[]" {
        return Some("it has no host");
    }
    None
}

fn remote(spec: &McpServerSpec) -> Result<(), ValidationError> {
    let server = spec.name.as_str();
    let transport = spec.transport.to_string();
    let url = spec
        .url
        .as_deref()
        .ok_or_else(|| ValidationError::MissingUrl {
            server: server.to_owned(),
            transport: transport.clone(),
        })?;
    if let Some(reason) = url_problem(url) {
        return Err(ValidationError::BadUrl {
            server: server.to_owned(),
            reason: reason.to_owned(),
        });
    }
    let not_for = |field| ValidationError::NotForTransport {
        server: server.to_owned(),
        transport: transport.clone(),
        field,
    };
    if !spec.command.is_empty() {
        return Err(not_for("command"));
    }
    if !spec.args.is_empty() {
        return Err(not_for("args"));
    }
    if !spec.env.is_empty() {
        return Err(not_for("env"));
    }
    for (name, value) in &spec.headers {
        if !is_header_name(name) {
            return Err(ValidationError::BadHeaderName {
                server: server.to_owned(),
                name: name.clone(),
            });
        }
        if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(ValidationError::ReservedHeader {
                server: server.to_owned(),
                name: name.clone(),
            });
        }
        if has_control(value, false) {
            return Err(ValidationError::ControlCharacter {
                server: server.to_owned(),
                field: format!("header {name}"),
            });
        }
        if parse_env_value(value).is_err() {
            return Err(ValidationError::BadHeaderReference {
                server: server.to_owned(),
                name: name.clone(),
            });
        }
    }
    Ok(())
}

/// Check a bot spec.
pub fn bot(spec: &BotSpec) -> Result<(), ValidationError> {
    name("bot", &spec.name)?;
    approval("nativeToolApproval", &spec.native_tool_approval)?;
    if spec.model.trim().is_empty() {
        return Err(ValidationError::EmptyModel {
            bot: spec.name.clone(),
        });
    }
    if !(1..=MAX_STEP_LIMIT).contains(&spec.step_limit) {
        return Err(ValidationError::StepLimitOutOfRange {
            bot: spec.name.clone(),
            value: spec.step_limit,
            max: MAX_STEP_LIMIT,
        });
    }
    if !(1..=MAX_TOOL_RESULT_CHARS).contains(&spec.max_tool_result_chars) {
        return Err(ValidationError::ToolResultCapOutOfRange {
            bot: spec.name.clone(),
            value: spec.max_tool_result_chars,
            max: MAX_TOOL_RESULT_CHARS,
        });
    }
    Ok(())
}

/// Check a binding spec (the bot and server are checked against the database).
pub fn binding(spec: &BindingSpec) -> Result<(), ValidationError> {
    approval("approval", &spec.approval)?;
    if spec.tool_filter.iter().any(|t| t.trim().is_empty()) {
        return Err(ValidationError::EmptyToolName { list: "toolFilter" });
    }
    if spec.pinned_tools.iter().any(|t| t.trim().is_empty()) {
        return Err(ValidationError::EmptyToolName {
            list: "pinnedTools",
        });
    }
    Ok(())
}

/// Check a key spec: a valid name, and a bot named exactly when the role is `bot`.
pub fn api_key(spec: &ApiKeySpec) -> Result<(), ValidationError> {
    name("key", &spec.name)?;
    crate::api_keys::check(spec)
}

/// An approval policy's globs: 1 to [`crate::approval::MAX_APPROVAL_GLOBS`] of them, each
/// non-empty, at most 200 characters, no control characters.
pub fn approval(field: &'static str, policy: &ApprovalPolicy) -> Result<(), ValidationError> {
    let ApprovalPolicy::Tools(globs) = policy else {
        return Ok(());
    };
    let bad = |reason: &str| ValidationError::BadApproval {
        field,
        reason: reason.to_owned(),
    };
    if globs.is_empty() {
        return Err(bad("an empty list asks for nothing: use \"never\""));
    }
    if globs.len() > crate::approval::MAX_APPROVAL_GLOBS {
        return Err(bad(&format!(
            "{} globs; at most {}",
            globs.len(),
            crate::approval::MAX_APPROVAL_GLOBS
        )));
    }
    for glob in globs {
        if glob.trim().is_empty()
            || glob.chars().count() > 200
            || glob.chars().any(char::is_control)
        {
            return Err(bad(&format!(
                "glob {glob:?} is empty, too long or has control characters"
            )));
        }
    }
    Ok(())
}

/// The policy's own checks, and its `${VAR}` references in the env's template syntax (the
/// launcher expands them with it).
fn sandbox_policy(server: &str, policy: &sandbox::SandboxPolicy) -> Result<(), ValidationError> {
    let bad = |source| ValidationError::BadSandbox {
        server: server.to_owned(),
        source,
    };
    policy.validate().map_err(bad)?;
    let named = match &policy.network {
        sandbox::NetworkPolicy::Connect(entries) => entries
            .iter()
            .filter_map(|entry| match entry {
                sandbox::NetworkEntry::Named(text) => Some(("network", text)),
                sandbox::NetworkEntry::Port(_) => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let entries = policy
        .read_write
        .iter()
        .map(|entry| ("readWrite", entry))
        .chain(policy.read_only.iter().map(|entry| ("readOnly", entry)))
        .chain(named);
    for (field, entry) in entries {
        if parse_env_value(entry).is_err() {
            return Err(bad(sandbox::PolicyError::BadReference {
                field,
                entry: entry.clone(),
            }));
        }
    }
    Ok(())
}
