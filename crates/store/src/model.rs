//! The stored models, named as the Prisma models they mirror, and the specs used to write them.

use crate::approval::ApprovalPolicy;
use sandbox::SandboxPolicy;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Default tool-call timeout of a server, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: i64 = 30_000;
/// Default `initialize` timeout of a server, in milliseconds.
pub const DEFAULT_INIT_TIMEOUT_MS: i64 = 30_000;
/// Default idle time before a server that is not always-on is stopped, in milliseconds.
pub const DEFAULT_IDLE_TIMEOUT_MS: i64 = 60_000;
/// Default number of model steps in one chat turn.
pub const DEFAULT_STEP_LIMIT: i64 = 10;
/// The longest text one tool result gives a bot's model unless the bot says otherwise.
pub const DEFAULT_MAX_TOOL_RESULT_CHARS: i64 = 100_000;

/// A stored MCP server configuration (`"McpServer"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServer {
    pub id: String,
    pub name: String,
    /// How BotCraft reaches the server: a child process over stdio, or a remote URL.
    pub transport: Transport,
    /// The program of a stdio server; empty for a remote one.
    pub command: String,
    pub args: Vec<String>,
    /// Environment for the process; values may hold `${VAR}` references resolved at spawn.
    pub env: BTreeMap<String, String>,
    /// The endpoint of a remote server (`streamable-http`, `sse`); `None` for stdio.
    pub url: Option<String>,
    /// HTTP headers sent to a remote server; values may hold `${VAR}` references.
    pub headers: BTreeMap<String, String>,
    /// How a stdio server's processes are confined (`sandbox::SandboxPolicy`).
    pub sandbox: SandboxPolicy,
    /// Tool-call timeout, ms.
    pub timeout: i64,
    /// `initialize` timeout, ms.
    pub init_timeout: i64,
    pub always_on: bool,
    pub idle_timeout_ms: i64,
    pub instructions: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Milliseconds since the Unix epoch.
    pub updated_at: i64,
}

impl McpServer {
    /// The writable part of this server, for an update.
    pub fn spec(&self) -> McpServerSpec {
        McpServerSpec {
            name: self.name.clone(),
            transport: self.transport,
            command: self.command.clone(),
            args: self.args.clone(),
            env: self.env.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            sandbox: self.sandbox.clone(),
            timeout: self.timeout,
            init_timeout: self.init_timeout,
            always_on: self.always_on,
            idle_timeout_ms: self.idle_timeout_ms,
            instructions: self.instructions.clone(),
        }
    }
}

/// What is written for an MCP server: everything but the id and the times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerSpec {
    pub name: String,
    #[serde(default)]
    pub transport: Transport,
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub sandbox: SandboxPolicy,
    #[serde(default = "default_timeout")]
    pub timeout: i64,
    #[serde(default = "default_init_timeout")]
    pub init_timeout: i64,
    #[serde(default)]
    pub always_on: bool,
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_ms: i64,
    #[serde(default)]
    pub instructions: Option<String>,
}

fn default_timeout() -> i64 {
    DEFAULT_TIMEOUT_MS
}
fn default_init_timeout() -> i64 {
    DEFAULT_INIT_TIMEOUT_MS
}
fn default_idle_timeout() -> i64 {
    DEFAULT_IDLE_TIMEOUT_MS
}

impl McpServerSpec {
    /// The `${VAR}` names its env values and header values refer to.
    pub fn variable_references(&self) -> std::collections::BTreeSet<&str> {
        self.env
            .values()
            .chain(self.headers.values())
            .filter_map(|value| env_template::parse_env_value(value).ok())
            .flatten()
            .filter_map(|segment| match segment {
                env_template::EnvSegment::Reference(name) => Some(name),
                env_template::EnvSegment::Literal(_) => None,
            })
            .collect()
    }

    /// A server with the model's defaults: 30 s timeouts, 60 s idle, not always-on.
    pub fn new(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: Transport::Stdio,
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            url: None,
            headers: BTreeMap::new(),
            sandbox: SandboxPolicy::default(),
            timeout: DEFAULT_TIMEOUT_MS,
            init_timeout: DEFAULT_INIT_TIMEOUT_MS,
            always_on: false,
            idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
            instructions: None,
        }
    }

    /// A remote server at `url`, reached over `transport`, with the model's defaults.
    pub fn remote(name: impl Into<String>, transport: Transport, url: impl Into<String>) -> Self {
        Self {
            transport,
            url: Some(url.into()),
            ..Self::new(name, "")
        }
    }

    pub fn sandbox(mut self, policy: SandboxPolicy) -> Self {
        self.sandbox = policy;
        self
    }

    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Each of `pairs` in the environment.
    pub fn envs(mut self, pairs: &[(&str, &str)]) -> Self {
        for (key, value) in pairs {
            self.env.insert((*key).to_owned(), (*value).to_owned());
        }
        self
    }

    pub fn timeout(mut self, ms: i64) -> Self {
        self.timeout = ms;
        self
    }

    pub fn init_timeout(mut self, ms: i64) -> Self {
        self.init_timeout = ms;
        self
    }

    pub fn always_on(mut self, always_on: bool) -> Self {
        self.always_on = always_on;
        self
    }

    pub fn idle_timeout_ms(mut self, ms: i64) -> Self {
        self.idle_timeout_ms = ms;
        self
    }

    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }
}

/// How BotCraft reaches an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// A child process spoken to over stdin and stdout.
    #[default]
    Stdio,
    /// A remote server at a URL, over streamable HTTP (MCP 2025-03-26 and later).
    StreamableHttp,
    /// A remote server at a URL, over the HTTP+SSE transport of MCP 2024-11-05.
    Sse,
}

impl Transport {
    pub const ALL: [Self; 3] = [Self::Stdio, Self::StreamableHttp, Self::Sse];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::StreamableHttp => "streamable-http",
            Self::Sse => "sse",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
    }

    /// Whether the server is reached at a URL rather than run as a child.
    pub fn is_remote(self) -> bool {
        self != Self::Stdio
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a bot's MCP tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolLoadingMode {
    /// Every allowed tool is offered to the model.
    Eager,
    /// `tool_search` and the pinned tools are offered; the rest are found by search.
    Deferred,
    /// Eager while the tool set is small, deferred beyond.
    #[default]
    Auto,
}

impl ToolLoadingMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Eager => "eager",
            Self::Deferred => "deferred",
            Self::Auto => "auto",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "eager" => Some(Self::Eager),
            "deferred" => Some(Self::Deferred),
            "auto" => Some(Self::Auto),
            _ => None,
        }
    }
}

/// A stored bot (`"Bot"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bot {
    pub id: String,
    pub name: String,
    /// The provider's model identifier, as the inference layer reads it.
    pub model: String,
    pub system_prompt: String,
    pub step_limit: i64,
    pub tool_loading_mode: ToolLoadingMode,
    /// The model takes images: images in tool results reach it as images.
    pub vision: bool,
    /// The longest text one tool result gives the model; the rest is cut, and the cut said.
    pub max_tool_result_chars: i64,
    /// When a call of one of its native tools waits for approval (`tool_search` never does).
    pub native_tool_approval: ApprovalPolicy,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What is written for a bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BotSpec {
    pub name: String,
    pub model: String,
    #[serde(default)]
    pub system_prompt: String,
    #[serde(default = "default_step_limit")]
    pub step_limit: i64,
    #[serde(default)]
    pub tool_loading_mode: ToolLoadingMode,
    /// The model takes images: images in tool results reach it as images (default false:
    /// they are described in text).
    #[serde(default)]
    pub vision: bool,
    /// The longest text one tool result gives the model (default 100,000 characters).
    #[serde(default = "default_max_tool_result_chars")]
    pub max_tool_result_chars: i64,
    /// When a call of one of its native tools waits for approval (default `never`).
    #[serde(default)]
    pub native_tool_approval: ApprovalPolicy,
}

fn default_step_limit() -> i64 {
    DEFAULT_STEP_LIMIT
}

fn default_max_tool_result_chars() -> i64 {
    DEFAULT_MAX_TOOL_RESULT_CHARS
}

impl BotSpec {
    pub fn new(name: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            model: model.into(),
            system_prompt: String::new(),
            step_limit: DEFAULT_STEP_LIMIT,
            tool_loading_mode: ToolLoadingMode::Auto,
            vision: false,
            max_tool_result_chars: DEFAULT_MAX_TOOL_RESULT_CHARS,
            native_tool_approval: ApprovalPolicy::Never,
        }
    }
}

/// A bot's binding to an MCP server (`"BotMcpServer"`), unique per pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BotMcpServer {
    pub id: String,
    pub bot_id: String,
    pub mcp_server_id: String,
    pub enabled: bool,
    /// Raw tool names the bot may use; empty means all.
    pub tool_filter: Vec<String>,
    /// Raw tool names always offered, even in deferred loading.
    pub pinned_tools: Vec<String>,
    /// When a call of one of the server's tools waits for a person's approval.
    pub approval: ApprovalPolicy,
}

/// What is written for a binding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingSpec {
    pub enabled: bool,
    pub tool_filter: Vec<String>,
    pub pinned_tools: Vec<String>,
    /// Default `never`.
    #[serde(default)]
    pub approval: ApprovalPolicy,
}

impl Default for BindingSpec {
    fn default() -> Self {
        Self {
            enabled: true,
            tool_filter: Vec::new(),
            pinned_tools: Vec::new(),
            approval: ApprovalPolicy::Never,
        }
    }
}

impl BotMcpServer {
    /// Whether the binding lets the bot use the raw tool `name`.
    pub fn allows(&self, name: &str) -> bool {
        self.enabled && (self.tool_filter.is_empty() || self.tool_filter.iter().any(|t| t == name))
    }
}

/// A binding together with the server it points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BoundServer {
    pub binding: BotMcpServer,
    pub server: McpServer,
}

/// The last tool list captured from a server (`"McpToolCache"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCache {
    pub mcp_server_id: String,
    /// The `tools` array of `tools/list`, each entry as the server sent it.
    pub tools: Vec<serde_json::Value>,
    /// Hex SHA-256 of the canonical JSON of `tools` (object keys sorted).
    pub hash: String,
    pub captured_at: i64,
}
