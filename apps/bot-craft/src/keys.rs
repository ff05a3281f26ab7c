//! `botcraft keys create | list | revoke`: the store's API keys, on the database directly (as
//! `seed` does), so the first keys can be made before anything serves. A running BotCraft
//! sees a change on its next request: keys are checked against the store, not cached.

use anyhow::Context;
use store::{ApiKeySpec, KeyRole, Store};

use crate::config::DataArgs;

#[derive(Debug, clap::Args)]
pub struct KeysArgs {
    #[command(flatten)]
    pub data: DataArgs,
    #[command(subcommand)]
    pub command: KeysCommand,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RoleArg {
    /// Every route.
    Admin,
    /// Chat, read bots and their tools, search tools (of every bot, or of --bot's alone).
    Chat,
    /// `/mcp`, for one bot (needs --bot).
    Bot,
}

impl From<RoleArg> for KeyRole {
    fn from(role: RoleArg) -> Self {
        match role {
            RoleArg::Admin => Self::Admin,
            RoleArg::Chat => Self::Chat,
            RoleArg::Bot => Self::Bot,
        }
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum KeysCommand {
    /// Create a key; it is printed once, as the last line, and never shown again.
    Create {
        name: String,
        #[arg(long, value_enum)]
        role: RoleArg,
        /// The bot (name or id) of a bot key, or the one bot a chat key may use (default:
        /// every bot).
        #[arg(long)]
        bot: Option<String>,
    },
    /// Every key: name, role, bot, created, last used, revoked. Never a key.
    List,
    /// Revoke a key: its next request fails.
    Revoke { name: String },
}

fn time(ms: Option<i64>) -> String {
    ms.map(|ms| ms.div_euclid(1000))
        .and_then(|seconds| jiff::Timestamp::from_second(seconds).ok())
        .map_or_else(|| "-".to_owned(), |t| t.to_string())
}

pub async fn run(args: KeysArgs) -> anyhow::Result<()> {
    let url = args.data.database_url()?;
    let store = Store::connect(&url).await.context("open the database")?;
    args.data.protect_database_files();
    let result = command(&store, args.command).await;
    store.close().await;
    result
}

async fn command(store: &Store, command: KeysCommand) -> anyhow::Result<()> {
    match command {
        KeysCommand::Create { name, role, bot } => {
            let spec = ApiKeySpec {
                name,
                role: role.into(),
                bot,
            };
            let created = store.create_api_key(&spec).await?;
            let key = &created.key;
            eprintln!(
                "created {} key {:?}{}; it is shown once, below:",
                key.role.as_str(),
                key.name,
                key.bot
                    .as_deref()
                    .map(|bot| format!(" for bot {bot:?}"))
                    .unwrap_or_default()
            );
            println!("{}", created.secret);
        }
        KeysCommand::List => {
            println!(
                "{:<24} {:<6} {:<16} {:<21} {:<21} revoked",
                "name", "role", "bot", "created", "last used"
            );
            for key in store.api_keys().await? {
                println!(
                    "{:<24} {:<6} {:<16} {:<21} {:<21} {}",
                    key.name,
                    key.role.as_str(),
                    key.bot.as_deref().unwrap_or("-"),
                    time(Some(key.created_at)),
                    time(key.last_used_at),
                    time(key.revoked_at),
                );
            }
        }
        KeysCommand::Revoke { name } => {
            let key = store.revoke_api_key(&name).await?;
            println!("revoked {} at {}", key.name, time(key.revoked_at));
        }
    }
    Ok(())
}
