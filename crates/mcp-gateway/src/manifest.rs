//! The bot manifest: what the stdio bridge answers `initialize` and `tools/list` from without
//! any service. `{"bot", "instructions", "tools"}`, the tools exactly as the gateway's
//! `tools/list` carries them for that bot (qualified names, sorted).
//!
//! A manifest is either bundled (`--manifest FILE`), the cache the bridge writes after
//! fetching the live list from BotCraft (`CACHE_DIR/BOT.json`), or, for the seeded bot
//! `forge` only, the committed `crates/mcp-gateway/manifests/forge.json` built into the
//! binary ([`built_in`]). A committed manifest is a second copy
//! of the truth: [`check`] fails when it drifts from what BotCraft would serve.

use std::path::{Path, PathBuf};

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use server_kit::manifest::ManifestError as FileError;

use crate::backend::ServerInstructions;
use crate::exposed::{ExposedTools, combined_instructions};

/// The committed manifest of the seeded bot, built into the binary.
const BUILT_IN_FORGE: &str = include_str!("../manifests/forge.json");

/// The manifest built into this binary for `bot`: the seeded bot's committed manifest, so
/// `botcraft mcp-stdio --bot forge` lists its tools on a machine that never reached BotCraft.
/// `None` for any other bot.
pub fn built_in(bot: &str) -> Option<BotManifest> {
    if bot != store::DEFAULT_BOT_NAME {
        return None;
    }
    serde_json::from_str::<BotManifest>(BUILT_IN_FORGE)
        .ok()
        .filter(|manifest| manifest.bot == bot)
}

/// One server of a bot: its name, its raw tools, its instructions.
pub type ServerTools = (String, Vec<Tool>, Option<String>);

/// What the bridge serves for one bot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BotManifest {
    pub bot: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    pub tools: Vec<Tool>,
}

/// A bot manifest that cannot be read, written or trusted: the file's own errors (a drift of
/// the committed one too) are server-kit's.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(transparent)]
    File(#[from] server_kit::manifest::ManifestError),
    #[error("the manifest {path} is for bot {found:?}, not {expected:?}")]
    WrongBot {
        path: PathBuf,
        expected: String,
        found: String,
    },
}

impl BotManifest {
    /// The manifest of bot `bot` whose servers list `servers` (server name, its raw tools and
    /// its instructions): the tools named and ordered as the gateway names them, the
    /// instructions combined as the gateway's `initialize` combines them.
    pub fn from_servers(bot: &str, servers: &[ServerTools]) -> Self {
        let listing = ExposedTools::build(
            servers
                .iter()
                .flat_map(|(server, tools, _)| tools.iter().map(move |t| (server.as_str(), t))),
        );
        let mut instructions: Vec<ServerInstructions> = servers
            .iter()
            .filter_map(|(server, _, text)| {
                text.as_ref().map(|text| ServerInstructions {
                    server: server.clone(),
                    text: text.clone(),
                })
            })
            .collect();
        instructions.sort_by(|a, b| a.server.cmp(&b.server));
        Self {
            bot: bot.to_owned(),
            instructions: Some(combined_instructions(bot, &instructions)),
            tools: listing.tools().to_vec(),
        }
    }

    /// Pretty JSON with a final newline.
    pub fn render(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into());
        text.push('\n');
        text
    }

    /// Read a manifest, checking it is for `bot`.
    pub fn load(path: &Path, bot: &str) -> Result<Self, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| FileError::Read {
            path: path.to_owned(),
            source,
        })?;
        let manifest: Self = serde_json::from_str(&text).map_err(|source| FileError::Parse {
            path: path.to_owned(),
            source,
        })?;
        if manifest.bot != bot {
            return Err(ManifestError::WrongBot {
                path: path.to_owned(),
                expected: bot.to_owned(),
                found: manifest.bot,
            });
        }
        Ok(manifest)
    }

    /// Write the manifest through a temporary file and a rename, so a reader never sees half
    /// of it. Creates the parent folder.
    pub fn save(&self, path: &Path) -> Result<(), ManifestError> {
        let write_error = |source| FileError::Write {
            path: path.to_owned(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(write_error)?;
        }
        let temporary = path.with_extension(format!("json.{}.tmp", std::process::id()));
        std::fs::write(&temporary, self.render()).map_err(write_error)?;
        std::fs::rename(&temporary, path).map_err(write_error)?;
        Ok(())
    }
}

/// Where the bridge caches the manifest of `bot` under `cache_dir`.
pub fn cache_path(cache_dir: &Path, bot: &str) -> PathBuf {
    let safe: String = bot
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    cache_dir.join(format!("{safe}.json"))
}

/// Compare the committed manifest at `path` with `current`; `refresh` is the command that
/// rewrites it, quoted in the error.
pub fn check(path: &Path, current: &BotManifest, refresh: &str) -> Result<(), ManifestError> {
    let served = serde_json::to_value(current).map_err(|source| FileError::Parse {
        path: path.to_owned(),
        source,
    })?;
    server_kit::manifest::check_committed(path, &served, || current.render(), refresh)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::sync::Arc;

    #[test]
    fn a_saved_manifest_loads_back_only_for_its_bot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let manifest = BotManifest::from_servers(
            "forge",
            &[(
                "fs".to_owned(),
                vec![Tool::new("read", "Read", Arc::new(Default::default()))],
                Some("Files.".to_owned()),
            )],
        );
        let path = cache_path(dir.path(), "forge");
        manifest.save(&path).expect("save");
        assert_eq!(BotManifest::load(&path, "forge").expect("load"), manifest);
        assert_eq!(manifest.tools[0].name, "fs__read");
        assert!(matches!(
            BotManifest::load(&path, "other"),
            Err(ManifestError::WrongBot { .. })
        ));
        check(&path, &manifest, "refresh").expect("no drift");
        let mut changed = manifest.clone();
        changed.tools.clear();
        assert!(matches!(
            check(&path, &changed, "refresh"),
            Err(ManifestError::File(FileError::Drift { .. }))
        ));
    }

    #[test]
    fn cache_names_are_file_safe() {
        assert_eq!(
            cache_path(Path::new("/c"), "../evil bot"),
            PathBuf::from("/c/___evil_bot.json")
        );
    }
}
