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
    /// Arguments after `@playwright/mcp@latest --headless` (repeat the flag for each);
    /// default: --isolated --no-sandbox --executable-path /usr/bin/chromium.
    #[arg(
        long = "playwright-arg",
        value_name = "ARG",
        allow_hyphen_values = true
    )]
    pub playwright_args: Vec<String>,
    /// The model of the seeded bot `forge` (`openai:MODEL` or `anthropic:MODEL`).
    #[arg(
        long,
        env = "BOTCRAFT_DEFAULT_MODEL",
        default_value = "openai:gpt-4.1-mini",
        value_name = "MODEL"
    )]
    pub default_model: String,
}

impl SeedSettings {
    pub fn config(&self) -> anyhow::Result<SeedConfig> {
        let bin_dir = match &self.bin_dir {
            Some(dir) => dir.clone(),
            None => exe_dir()?,
        };
        let mut config = SeedConfig::new(bin_dir);
        if !self.playwright_args.is_empty() {
            config.playwright_extra_args = self.playwright_args.clone();
        }
        config.bot_model = self.default_model.clone();
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
    let report = store.seed(&config).await.context("seed")?;
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
