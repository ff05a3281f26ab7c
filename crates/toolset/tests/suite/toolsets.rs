//! `Toolsets` over a real manager and store, with test-support's fake MCP server: bindings
//! and filters, listing that starts nothing, calls that re-check the binding, the in-memory
//! cache (exact on writes, no query when warm).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_lifecycle::{ManagerSettings, McpServerManager, ServerState};
use pretty_assertions::assert_eq;
use store::{BindingSpec, BotSpec, McpServer, McpServerSpec, Store};
use tokio_util::sync::CancellationToken;
use toolset::{CallError, ListPolicy, ToolRoute, Toolsets};

struct Fixture {
    store: Store,
    manager: Arc<McpServerManager>,
    toolsets: Arc<Toolsets>,
    _dir: tempfile::TempDir,
}

impl Fixture {
    async fn new() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let store = Store::connect(&store::sqlite_url(&dir.path().join("store.db"))).await?;
        let settings = ManagerSettings {
            env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
            stop_grace: Duration::from_secs(2),
            pid_registry: Some(dir.path().join("pids")),
            ..ManagerSettings::default()
        };
        let manager = McpServerManager::new(server_records::records(store.clone()), settings);
        let toolsets = Toolsets::new(store.clone(), manager.clone(), ["tool_search"]);
        Ok(Self {
            store,
            manager,
            toolsets,
            _dir: dir,
        })
    }

    async fn server(&self, name: &str) -> anyhow::Result<McpServer> {
        let binary = test_support::fake_mcp_server_binary()?;
        let server = self
            .store
            .create_server(&McpServerSpec::new(name, binary.display().to_string()))
            .await?;
        self.manager.load_configs().await?;
        Ok(server)
    }

    /// A server writing what it receives to its log (`FAKE_MCP_LOG`).
    async fn logged_server(&self, name: &str) -> anyhow::Result<(McpServer, std::path::PathBuf)> {
        let binary = test_support::fake_mcp_server_binary()?;
        let log = self._dir.path().join(format!("{name}.log"));
        let mut spec = McpServerSpec::new(name, binary.display().to_string());
        spec.env
            .insert("FAKE_MCP_LOG".to_owned(), log.display().to_string());
        let server = self.store.create_server(&spec).await?;
        self.manager.load_configs().await?;
        Ok((server, log))
    }

    fn state(&self, name: &str) -> Option<ServerState> {
        self.manager
            .get_all_statuses()
            .into_iter()
            .find(|s| s.name == name)
            .map(|s| s.state)
    }

    async fn finish(self) {
        self.manager.stop_all().await;
        self.store.close().await;
    }
}

fn summary(set: &toolset::BotToolset) -> Vec<(String, String, bool)> {
    set.tools
        .iter()
        .map(|t| (t.qualified.clone(), t.route.tool.clone(), t.pinned))
        .collect()
}

#[tokio::test]
async fn a_bot_gets_its_enabled_bindings_tools_cut_to_the_filter_and_listing_starts_nothing()
-> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let one = fx.server("one").await?;
    let two = fx.server("two").await?;
    let three = fx.server("three").await?;
    let bot = fx.store.create_bot(&BotSpec::new("b", "m")).await?;
    let filtered = BindingSpec {
        tool_filter: vec!["echo".into(), "env".into()],
        pinned_tools: vec!["echo".into()],
        ..BindingSpec::default()
    };
    fx.store.bind(&bot.id, &one.id, &filtered).await?;
    fx.store
        .bind(&bot.id, &two.id, &BindingSpec::default())
        .await?;
    let disabled = BindingSpec {
        enabled: false,
        ..BindingSpec::default()
    };
    fx.store.bind(&bot.id, &three.id, &disabled).await?;
    fx.manager.get_tools("one").await?;
    fx.manager.stop_all().await;

    let set = fx.toolsets.load("b", ListPolicy::CachedOnly).await?;
    assert_eq!(
        summary(&set),
        vec![
            ("one__echo".into(), "echo".into(), true),
            ("one__env".into(), "env".into(), false),
        ]
    );
    assert_eq!(set.servers, ["one", "two"]);
    assert_eq!(
        set.unavailable
            .iter()
            .map(|u| u.server.as_str())
            .collect::<Vec<_>>(),
        ["two"]
    );
    for name in ["one", "two", "three"] {
        assert_eq!(fx.state(name), Some(ServerState::Stopped), "{name} started");
    }
    // A chat turn's policy lists a server never listed once, by starting it.
    let turn = fx
        .toolsets
        .load(&bot.id, ListPolicy::CachedThenStart)
        .await?;
    assert!(turn.unavailable.is_empty());
    assert_eq!(turn.tools.len(), 2 + 4);
    assert_eq!(fx.state("two"), Some(ServerState::Running));
    assert_eq!(fx.state("three"), Some(ServerState::Stopped));
    assert!(matches!(
        fx.toolsets.load("nobody", ListPolicy::CachedOnly).await,
        Err(toolset::ToolsetError::UnknownBot { .. })
    ));
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn calls_recheck_the_binding_and_writes_are_seen_at_once() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let one = fx.server("one").await?;
    let bot = fx.store.create_bot(&BotSpec::new("b", "m")).await?;
    fx.store
        .bind(&bot.id, &one.id, &BindingSpec::default())
        .await?;
    let echo = ToolRoute::new("one", "echo");
    let args = serde_json::json!({"text": "hi"}).as_object().cloned();
    let answered = fx
        .toolsets
        .call("b", &echo, args.clone(), CancellationToken::new())
        .await?;
    assert_eq!(answered.is_error, Some(false));
    // Narrow the binding: the very next call is refused, no cache goes stale.
    let narrow = BindingSpec {
        tool_filter: vec!["env".into()],
        ..BindingSpec::default()
    };
    fx.store.bind(&bot.id, &one.id, &narrow).await?;
    let refused = fx
        .toolsets
        .call("b", &echo, args, CancellationToken::new())
        .await;
    assert_eq!(
        refused,
        Err(CallError::NotAllowed {
            bot: "b".into(),
            server: "one".into(),
            tool: "echo".into()
        })
    );
    let set = fx.toolsets.load("b", ListPolicy::CachedOnly).await?;
    assert_eq!(
        summary(&set),
        vec![("one__env".into(), "env".into(), false)]
    );
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let slept = fx
        .toolsets
        .call(
            "b",
            &ToolRoute::new("one", "env"),
            serde_json::json!({"name": "PATH"}).as_object().cloned(),
            cancelled,
        )
        .await;
    assert_eq!(slept, Err(CallError::Cancelled));
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_cancelled_call_tells_the_server() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let (one, log) = fx.logged_server("one").await?;
    let bot = fx.store.create_bot(&BotSpec::new("b", "m")).await?;
    fx.store
        .bind(&bot.id, &one.id, &BindingSpec::default())
        .await?;
    let lines = || -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let cancel = CancellationToken::new();
    let sleep = ToolRoute::new("one", "sleep");
    // The fake server logs `sleeping` once it has the call: the signal to cancel.
    let mut events = fx.manager.server_events("one")?;
    let call = fx.toolsets.call(
        "b",
        &sleep,
        serde_json::json!({"ms": 60_000}).as_object().cloned(),
        cancel.clone(),
    );
    let cancelled = async {
        // The server has the call, then the turn goes away.
        let _ = tokio::time::timeout(Duration::from_secs(20), async {
            while !matches!(
                events.recv().await,
                Ok(mcp_lifecycle::ServerEvent::Log(_)) | Err(_)
            ) {}
        })
        .await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, cancelled);
    assert_eq!(result, Err(CallError::Cancelled));
    // Requests are read in order: once this echo is answered, the cancel was received.
    let echo = ToolRoute::new("one", "echo");
    fx.toolsets
        .call(
            "b",
            &echo,
            serde_json::json!({"text": "after"}).as_object().cloned(),
            CancellationToken::new(),
        )
        .await?;
    let log = lines();
    let told = log.iter().position(|l| l == "notifications/cancelled");
    let last_call = log.iter().rposition(|l| l == "tools/call");
    assert!(
        matches!((told, last_call), (Some(c), Some(e)) if c < e),
        "{log:?}"
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_warm_toolset_is_reused_and_costs_no_query() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let one = fx.server("one").await?;
    let bot = fx.store.create_bot(&BotSpec::new("b", "m")).await?;
    fx.store
        .bind(&bot.id, &one.id, &BindingSpec::default())
        .await?;
    let first = fx.toolsets.load("b", ListPolicy::CachedThenStart).await?;
    let echo = ToolRoute::new("one", "echo");
    let args = serde_json::json!({"text": "hi"}).as_object().cloned();
    fx.toolsets
        .call("b", &echo, args.clone(), CancellationToken::new())
        .await?;

    let before = fx.store.queries_run();
    for _ in 0..10 {
        let again = fx.toolsets.load("b", ListPolicy::CachedOnly).await?;
        assert!(Arc::ptr_eq(&first, &again));
        fx.toolsets
            .call("b", &echo, args.clone(), CancellationToken::new())
            .await?;
        assert_eq!(fx.toolsets.bot(&bot.id).await?.name, "b");
    }
    assert_eq!(
        fx.store.queries_run() - before,
        0,
        "queries on the warm path"
    );

    // The server's list changes: a new toolset, with a new hash.
    let mut events = fx.manager.subscribe();
    fx.toolsets
        .call(
            "b",
            &ToolRoute::new("one", "change_tools"),
            Some(serde_json::Map::new()),
            CancellationToken::new(),
        )
        .await?;
    let changed = loop {
        let set = fx.toolsets.load("b", ListPolicy::CachedOnly).await?;
        if set.tools.iter().any(|t| t.route.tool == "added") {
            break set;
        }
        tokio::time::timeout(Duration::from_secs(10), events.recv()).await??;
    };
    assert_ne!(changed.hash, first.hash);
    fx.finish().await;
    Ok(())
}
