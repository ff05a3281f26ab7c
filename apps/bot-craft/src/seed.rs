//! `botcraft seed [--database-url URL] [--import FILE]`, and the seed settings `serve`
//! shares.

use std::path::PathBuf;

use anyhow::Context;
use store::{SeedConfig, Store};

use crate::config::{DataArgs, exe_dir};

/// What the seed data depends on here.
#[derive(Debug, Clone, clap::Args)]
pub struct SeedSettings {
    /// Where the forge server binaries are; default: the directory of this executable.
    #[arg(long, env = "BOTCRAFT_BIN_DIR", value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// The folder forge-filesystem's file tools are confined to (its `WORKSPACE_ROOT`).
    #[arg(
        long,
        env = "BOTCRAFT_WORKSPACE_ROOT",
        default_value = "/workspace",
        value_name = "DIR"
    )]
    pub workspace_root: PathBuf,
    /// The repository forge-discovery browses and forge-filesystem keeps `.trash/` in
    /// (`REPO_PATH` / `REPO_ROOT`).
    #[arg(
        long,
        env = "BOTCRAFT_REPO_ROOT",
        default_value = "/workspace/erik/uvilo-os",
        value_name = "DIR"
    )]
    pub repo_root: PathBuf,
    /// An installed Playwright MCP program (`playwright-mcp`, a path or a name on PATH);
    /// default: `npx --yes @playwright/mcp@0.0.83`.
    #[arg(long, env = "BOTCRAFT_PLAYWRIGHT_COMMAND", value_name = "PROGRAM")]
    pub playwright_command: Option<String>,
    /// Run Chromium without its sandbox (`--no-sandbox`), which it needs as root and in most
    /// containers; default: only when running as root.
    #[arg(long, env = "BOTCRAFT_PLAYWRIGHT_NO_SANDBOX", value_name = "BOOL")]
    pub playwright_no_sandbox: Option<bool>,
    /// Arguments after `--headless` instead of the defaults (repeat the flag for each);
    /// default: --isolated --no-webmcp [--no-sandbox] --executable-path /usr/bin/chromium.
    #[arg(
        long = "playwright-arg",
        value_name = "ARG",
        allow_hyphen_values = true
    )]
    pub playwright_args: Vec<String>,
    /// Where `serve` writes the deployment's variables without BotCraft's secrets, for
    /// forge-bash's injection (seeded as its FORGE_BASH_ENV_FILE) when tool servers run as a
    /// user who cannot read PID 1 (BOTCRAFT_TOOL_USER).
    #[arg(long, env = "BOTCRAFT_TOOL_ENV_FILE", value_name = "FILE")]
    pub tool_env_file: Option<PathBuf>,
    /// The model of the seeded bot `forge` (`openai:MODEL` or `anthropic:MODEL`).
    #[arg(
        long,
        env = "BOTCRAFT_DEFAULT_MODEL",
        default_value = store::DEFAULT_BOT_MODEL,
        value_name = "MODEL"
    )]
    pub default_model: String,
}

fn absolute(path: &std::path::Path) -> anyhow::Result<String> {
    let path =
        std::path::absolute(path).with_context(|| format!("make {} absolute", path.display()))?;
    Ok(path.display().to_string())
}

/// A line for each configured root that is not a folder: the servers start anyway (seed 001),
/// but their calls fail until it exists.
pub fn missing_roots(config: &SeedConfig) -> Vec<String> {
    [
        ("workspace root", "--workspace-root", &config.workspace_root),
        ("repository root", "--repo-root", &config.repo_root),
    ]
    .into_iter()
    .filter(|(_, _, path)| !std::path::Path::new(path).is_dir())
    .map(|(what, flag, path)| {
        format!("the {what} {path} is not a folder: file tools fail until it exists (set {flag})")
    })
    .collect()
}

/// Whether this process runs as root.
fn running_as_root() -> bool {
    nix::unistd::geteuid().is_root()
}

impl SeedSettings {
    pub fn config(&self) -> anyhow::Result<SeedConfig> {
        let bin_dir = match &self.bin_dir {
            Some(dir) => dir.clone(),
            None => exe_dir()?,
        };
        let mut config = SeedConfig::new(bin_dir);
        if let Some(program) = self.playwright_command.as_deref().map(str::trim)
            && !program.is_empty()
        {
            config = config.with_playwright_program(program);
        }
        config.playwright_extra_args = if self.playwright_args.is_empty() {
            store::playwright_extra_args(self.playwright_no_sandbox.unwrap_or_else(running_as_root))
        } else {
            self.playwright_args.clone()
        };
        config.workspace_root = absolute(&self.workspace_root)?;
        config.repo_root = absolute(&self.repo_root)?;
        config.bot_model = self.default_model.clone();
        config.bash_env_file = match &self.tool_env_file {
            Some(file) => Some(absolute(file)?),
            None => None,
        };
        Ok(config)
    }
}

#[derive(Debug, clap::Args)]
pub struct SeedArgs {
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    seed: SeedSettings,
    /// An `mcpServers` JSON file (Claude Desktop, Cursor, VS Code) to import as well.
    #[arg(long, value_name = "FILE")]
    import: Option<PathBuf>,
}

pub async fn run(args: SeedArgs) -> anyhow::Result<()> {
    let url = args.data.database_url()?;
    let config = args.seed.config()?;
    let store = Store::connect(&url).await.context("open the database")?;
    args.data.protect_database_files();
    let report = store.seed(&config).await.context("seed")?;
    for warning in missing_roots(&config) {
        eprintln!("botcraft seed: {warning}");
    }
    println!(
        "servers created: {}; kept: {}; bot forge {}; bindings created: {}",
        list(&report.servers_created),
        list(&report.servers_kept),
        if report.bot_created {
            "created"
        } else {
            "kept"
        },
        list(&report.bindings_created),
    );
    if let Some(path) = args.import {
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        let plan = store::parse_mcp_servers(&text)
            .with_context(|| format!("{} is not an mcpServers file", path.display()))?;
        let report = store.import_servers(&plan).await.context("import")?;
        println!(
            "imported: created {}; updated {}",
            list(&report.created),
            list(&report.updated)
        );
        for skipped in &report.skipped {
            println!("skipped {}: {}", skipped.name, skipped.reason);
        }
    }
    store.close().await;
    Ok(())
}

pub fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
