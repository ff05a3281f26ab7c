//! A store in a temp dir, a manager over it, and fake servers configured in the store.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use mcp_lifecycle::{
    LifecycleError, ManagerSettings, McpServerManager, RestartPolicy, ServerState,
};
use store::{McpServer, McpServerSpec, Store};

pub struct Fixture {
    pub manager: Arc<McpServerManager>,
    pub store: Store,
    pub dir: tempfile::TempDir,
    binary: PathBuf,
}

pub fn settings(dir: &std::path::Path) -> ManagerSettings {
    ManagerSettings {
        env: BTreeMap::from([
            (
                "PATH".to_owned(),
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned(),
            ),
            ("FAKE_SECRET".to_owned(), "s3cret".to_owned()),
        ]),
        env_policy: mcp_lifecycle::EnvPolicy::with_extra("FAKE_SECRET, MISSING_KEY"),
        stop_grace: Duration::from_secs(2),
        ping_timeout: Duration::from_millis(500),
        health_interval: Duration::from_secs(3600),
        restart: RestartPolicy {
            base: Duration::from_millis(10),
            max: Duration::from_millis(50),
            jitter: 0.1,
            max_consecutive_failures: 3,
            stable_after: Duration::from_secs(3600),
        },
        pid_registry: Some(dir.join("pids")),
        stderr_lines: 200,
        run_as: None,
        reap_orphans: false,
        cgroups: false,
        sandbox: None,
        oauth: None,
        listing: mcp_lifecycle::listing::ListingSettings::default(),
    }
}

impl Fixture {
    pub async fn new() -> anyhow::Result<Self> {
        Self::with(|_| {}).await
    }

    pub async fn with(tweak: impl FnOnce(&mut ManagerSettings)) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let store = Store::connect(&store::sqlite_url(&dir.path().join("store.db"))).await?;
        let mut settings = settings(dir.path());
        tweak(&mut settings);
        let manager = McpServerManager::new(server_records::records(store.clone()), settings);
        let binary = test_support::fake_mcp_server_binary()?;
        Ok(Self {
            manager,
            store,
            dir,
            binary,
        })
    }

    /// A fake server named `name`, logging to `log_path(name)`, with `env` fault modes.
    pub async fn add(
        &self,
        name: &str,
        env: &[(&str, &str)],
        tweak: impl FnOnce(McpServerSpec) -> McpServerSpec,
    ) -> anyhow::Result<McpServer> {
        let mut spec = McpServerSpec::new(name, self.binary.display().to_string())
            .env("FAKE_MCP_LOG", self.log_path(name).display().to_string());
        for (key, value) in env {
            spec = spec.env(*key, *value);
        }
        let server = self.store.create_server(&tweak(spec)).await?;
        self.manager.load_configs().await?;
        Ok(server)
    }

    /// Any server, as written in the store.
    pub async fn add_spec(&self, spec: McpServerSpec) -> anyhow::Result<McpServer> {
        let server = self.store.create_server(&spec).await?;
        self.manager.load_configs().await?;
        Ok(server)
    }

    pub fn pid(&self, name: &str) -> Option<u32> {
        self.manager
            .get_all_statuses()
            .into_iter()
            .find(|s| s.name == name)
            .and_then(|s| s.pid)
    }

    pub fn log_path(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.log"))
    }

    pub fn log(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.log_path(name))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Start a fake server `name` that leaves a `setsid` grandchild: (server pid, grandchild
    /// pid).
    pub async fn start_with_grandchild(&self, name: &str) -> anyhow::Result<(u32, u32)> {
        let pid_file = self.dir.path().join(format!("{name}.grandchild.pid"));
        self.add(
            name,
            &[(
                "FAKE_MCP_GRANDCHILD_PID_FILE",
                &pid_file.display().to_string(),
            )],
            |s| s,
        )
        .await?;
        self.manager.start_server(name).await?;
        let grandchild: u32 = std::fs::read_to_string(&pid_file)?.trim().parse()?;
        Ok((self.started_pids(name)[0], grandchild))
    }

    /// The pids the fake server logged at each start.
    pub fn started_pids(&self, name: &str) -> Vec<u32> {
        self.log(name)
            .iter()
            .filter_map(|line| line.strip_prefix("start ")?.parse().ok())
            .collect()
    }

    pub fn state(&self, name: &str) -> Option<ServerState> {
        self.manager
            .get_all_statuses()
            .into_iter()
            .find(|s| s.name == name)
            .map(|s| s.state)
    }

    /// Wait (on state-change notifications, at most 20 s) until `done` holds.
    pub async fn until(
        &self,
        name: &str,
        mut done: impl FnMut(&Self) -> bool,
    ) -> anyhow::Result<()> {
        let mut states = self.manager.watch_state(name)?;
        tokio::time::timeout(Duration::from_secs(20), async {
            while !done(self) {
                states.changed().await.context("state channel closed")?;
            }
            anyhow::Ok(())
        })
        .await
        .context("condition not reached within 20 s")?
    }

    pub fn last_error(&self, name: &str) -> Option<LifecycleError> {
        self.manager.last_error(name).ok().flatten()
    }

    pub async fn finish(self) {
        self.manager.stop_all().await;
        self.store.close().await;
    }
}

pub fn text(result: &mcp_lifecycle::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

pub fn args(value: serde_json::Value) -> Option<mcp_lifecycle::JsonObject> {
    value.as_object().cloned()
}

pub fn alive(pid: u32) -> bool {
    mcp_lifecycle::hygiene::identify(pid).is_some_and(mcp_lifecycle::hygiene::is_alive)
}
