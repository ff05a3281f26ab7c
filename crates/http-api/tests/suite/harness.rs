//! What the scenarios share: a store in a temp dir, an MCP manager, providers pointed at the
//! fake LLM, the router, and helpers to send requests and read UI message streams.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_api::{ApiConfig, ApiKeys, AppState, Redactor, default_native_tools};
use inference::providers::{AnthropicSettings, HttpTimeouts, OpenAiSettings};
use inference::{ProviderSettings, Providers};
use mcp_lifecycle::{ManagerSettings, McpServerManager};
use serde_json::Value;
use store::{BindingSpec, BotSpec, McpServerSpec, Store};
use test_support::{FakeLlm, FakeReply, Wire};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

pub const ADMIN_KEY: &str = "test-admin-key-0123456789";
pub const CHAT_KEY: &str = "test-chat-key-9876543210";
pub const OPENAI_KEY: &str = "sk-test-openai-secret-42";
pub const ANTHROPIC_KEY: &str = "sk-ant-test-secret-42";
pub const WIRES: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];
/// Body limit of the test app: small, so "huge" is cheap to send.
pub const BODY_LIMIT: usize = 64 * 1024;
/// The fixture's limit of messages per chat request.
pub const MAX_CHAT_MESSAGES: usize = 50;

/// A safety bound on waits that must succeed; never reached when the code works.
pub const BOUND: Duration = Duration::from_secs(30);

pub async fn bounded<F: Future>(what: &str, future: F) -> anyhow::Result<F::Output> {
    tokio::time::timeout(BOUND, future)
        .await
        .with_context(|| format!("{what} did not happen within {BOUND:?}"))
}

pub fn model(wire: Wire) -> &'static str {
    match wire {
        Wire::OpenAi => "openai:gpt-test",
        Wire::Anthropic => "anthropic:claude-test",
    }
}

/// A built binary of another package, next to this test's own directory
/// (`target/debug/deps/..`). Builds nothing.
pub fn sibling_binary(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .context("test executable has no target dir")?;
    let path = dir.join(name);
    anyhow::ensure!(
        path.is_file(),
        "{} is missing: build it first (`cargo build -p {name}`)",
        path.display()
    );
    Ok(path)
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub store: Store,
    pub manager: Arc<McpServerManager>,
    pub llm: FakeLlm,
    pub state: AppState,
    pub app: Router,
}

pub struct Options {
    pub idle: Duration,
    /// Load the embedding model of `BOTCRAFT_EMBEDDING_MODEL`: `tool_search` is hybrid,
    /// its vectors kept in the fixture's store.
    pub embedding: bool,
    /// The caps on chat turns running at once.
    pub streams: http_api::chat_streams::StreamLimits,
    /// Servers added or changed through the API get their tools listed in the background
    /// (off by default here: the other tests see servers start only when they ask).
    pub listing: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(20),
            embedding: false,
            streams: http_api::chat_streams::StreamLimits::default(),
            listing: false,
        }
    }
}

impl Fixture {
    pub async fn new(replies: impl IntoIterator<Item = FakeReply>) -> anyhow::Result<Self> {
        Self::with_options(replies, Options::default()).await
    }

    pub async fn with_options(
        replies: impl IntoIterator<Item = FakeReply>,
        options: Options,
    ) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let store = Store::connect(&store::sqlite_url(&dir.path().join("db.sqlite"))).await?;
        let settings = ManagerSettings {
            env: std::env::vars()
                .filter(|(key, _)| key == "PATH" || key == "HOME")
                .collect(),
            stop_grace: Duration::from_millis(500),
            pid_registry: Some(dir.path().join("pids")),
            listing: mcp_lifecycle::listing::ListingSettings {
                enabled: options.listing,
                ..mcp_lifecycle::listing::ListingSettings::default()
            },
            ..ManagerSettings::default()
        };
        let manager = McpServerManager::new(server_records::records(store.clone()), settings);
        let llm = FakeLlm::start(replies).await?;
        let providers = Providers::new(ProviderSettings {
            openai: OpenAiSettings {
                api_key: Some(OPENAI_KEY.into()),
                base_url: Some(llm.openai_base_url()),
            },
            anthropic: AnthropicSettings {
                api_key: Some(ANTHROPIC_KEY.into()),
                base_url: Some(llm.anthropic_base_url()),
            },
            timeouts: HttpTimeouts {
                connect: Duration::from_secs(5),
                idle: options.idle,
            },
        })?;
        let embedder = if options.embedding {
            let dir = std::env::var_os("BOTCRAFT_EMBEDDING_MODEL")
                .filter(|v| !v.is_empty())
                .context(
                    "BOTCRAFT_EMBEDDING_MODEL is not set; this test runs the real model: \
                     export BOTCRAFT_EMBEDDING_MODEL=\"$(scripts/embedding-model-setup.sh)\"",
                )?;
            let model = tokio::task::spawn_blocking(move || {
                embedding::Embedder::load(std::path::Path::new(&dir))
            })
            .await??;
            Some(Arc::new(model))
        } else {
            None
        };
        let config = ApiConfig {
            catalogs: http_api::ToolCatalogs::new(search_index::SearchIndexes::new(
                embedder,
                Some(store.clone()),
            )),
            api_keys: ApiKeys::new([ADMIN_KEY]).with([CHAT_KEY], http_api::Role::Chat),
            max_body_bytes: BODY_LIMIT,
            max_chat_messages: MAX_CHAT_MESSAGES,
            cancel_grace: Duration::from_secs(2),
            redactor: Redactor::new([OPENAI_KEY, ANTHROPIC_KEY, ADMIN_KEY, CHAT_KEY]),
            chat_streams: http_api::chat_streams::ChatStreams::new(options.streams),
            ..ApiConfig::default()
        };
        let state = AppState {
            store: store.clone(),
            manager: manager.clone(),
            providers,
            toolsets: http_api::new_toolsets(&store, &manager, &default_native_tools()),
            native: default_native_tools(),
            config: Arc::new(config),
            shutdown: CancellationToken::new(),
            metrics: observability::BotCraftMetrics::new()?,
        };
        let app = http_api::app(state.clone());
        Ok(Self {
            dir,
            store,
            manager,
            llm,
            state,
            app,
        })
    }

    /// A fake MCP server named `name` (lazy, not always-on), logging to `<dir>/<name>.log`.
    pub async fn add_fake_server(
        &self,
        name: &str,
        configure: impl FnOnce(McpServerSpec) -> McpServerSpec,
    ) -> anyhow::Result<store::McpServer> {
        let binary = test_support::fake_mcp_server_binary()?;
        let log = self.dir.path().join(format!("{name}.log"));
        let spec = McpServerSpec::new(name, binary.display().to_string())
            .env("FAKE_MCP_LOG", log.display().to_string())
            .instructions(format!("Use {name} to echo text."));
        let server = self.store.create_server(&configure(spec)).await?;
        self.manager.load_configs().await?;
        Ok(server)
    }

    /// A bot on `model` bound to `servers`.
    pub async fn add_bot(
        &self,
        name: &str,
        model: &str,
        servers: &[&store::McpServer],
    ) -> anyhow::Result<store::Bot> {
        let mut spec = BotSpec::new(name, model);
        spec.system_prompt = format!("You are {name}.");
        let bot = self.store.create_bot(&spec).await?;
        for server in servers {
            self.store
                .bind(&bot.id, &server.id, &BindingSpec::default())
                .await?;
        }
        Ok(bot)
    }

    /// Sends a request through the router (no socket) and reads the whole body.
    pub async fn send(&self, request: Request<Body>) -> anyhow::Result<Reply> {
        let response = bounded("the response", self.app.clone().oneshot(request)).await??;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = bounded(
            "the whole body",
            axum::body::to_bytes(response.into_body(), usize::MAX),
        )
        .await??;
        Ok(Reply {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
            bytes: bytes.to_vec(),
        })
    }

    pub async fn finish(self) {
        self.manager.stop_all().await;
    }
}

/// A request with the admin key and an optional JSON body.
pub fn request(method: &str, path: &str, body: Option<&Value>) -> Request<Body> {
    let builder = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {ADMIN_KEY}"));
    match body {
        Some(body) => builder
            .header("content-type", "application/json")
            .body(Body::from(body.to_string())),
        None => builder.body(Body::empty()),
    }
    .unwrap_or_default()
}

/// The chat request body for one user message.
pub fn chat_body(bot: &str, text: &str) -> Value {
    serde_json::json!({
        "botId": bot,
        "id": "chat-1",
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}],
    })
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    /// The body as text (invalid UTF-8 replaced); `bytes` as sent.
    pub body: String,
    pub bytes: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> anyhow::Result<Value> {
        serde_json::from_str(&self.body).with_context(|| format!("not JSON: {}", self.body))
    }

    /// The `error.code` of a JSON error body.
    pub fn error_code(&self) -> String {
        self.json()
            .ok()
            .and_then(|v| v["error"]["code"].as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("<no error code in {:?}>", self.body))
    }

    /// The chunks of a UI message stream, checking it ends with `[DONE]`.
    pub fn chunks(&self) -> anyhow::Result<Vec<Value>> {
        parse_sse(&self.body)
    }
}

/// Parses `data: …\n\n` frames; the last must be `[DONE]`.
pub fn parse_sse(body: &str) -> anyhow::Result<Vec<Value>> {
    let frames: Vec<&str> = body
        .split("\n\n")
        .filter(|frame| !frame.is_empty())
        .collect();
    let (last, chunks) = frames.split_last().context("an empty stream")?;
    anyhow::ensure!(
        *last == "data: [DONE]",
        "stream does not end with [DONE]: {body}"
    );
    chunks
        .iter()
        .map(|frame| {
            let data = frame
                .strip_prefix("data: ")
                .with_context(|| format!("not an SSE data frame: {frame:?}"))?;
            Ok(serde_json::from_str(data)?)
        })
        .collect()
}

/// The `type` of each chunk.
pub fn types(chunks: &[Value]) -> Vec<String> {
    chunks
        .iter()
        .map(|chunk| chunk["type"].as_str().unwrap_or("?").to_owned())
        .collect()
}
