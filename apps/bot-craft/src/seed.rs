//! `botcraft seed [--database-url URL] [--import FILE]`.

use std::path::PathBuf;

use anyhow::Context;
use store::{SeedConfig, Store};

#[derive(Debug, clap::Args)]
pub struct SeedArgs {
    /// `sqlite://…` or `postgres://…`; default: `botcraft.db` (SQLite) in the current directory,
    /// created on first run.
    #[arg(long, env = "DATABASE_URL")]
    database_url: Option<String>,
    /// An `mcpServers` JSON file (Claude Desktop, Cursor, VS Code) to import as well.
    #[arg(long, value_name = "FILE")]
    import: Option<PathBuf>,
    /// Where the forge server binaries are; default: the directory of this executable.
    #[arg(long, env = "BOTCRAFT_BIN_DIR", value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Arguments after `@playwright/mcp@latest --headless` (repeat the flag for each);
    /// default: --isolated --no-sandbox --executable-path /usr/bin/chromium.
    #[arg(
        long = "playwright-arg",
        value_name = "ARG",
        allow_hyphen_values = true
    )]
    playwright_args: Vec<String>,
}

pub async fn run(args: SeedArgs) -> anyhow::Result<()> {
    let url = match args.database_url {
        Some(url) => url,
        None => store::sqlite_url(&std::env::current_dir()?.join("botcraft.db")),
    };
    let bin_dir = match args.bin_dir {
        Some(dir) => dir,
        None => std::env::current_exe()
            .context("locate the running executable")?
            .parent()
            .map(PathBuf::from)
            .context("the executable has no parent directory")?,
    };
    let mut config = SeedConfig::new(bin_dir);
    if !args.playwright_args.is_empty() {
        config.playwright_extra_args = args.playwright_args;
    }
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

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
