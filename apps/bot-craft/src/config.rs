//! The settings every subcommand shares, read once from flags and the environment (clap
//! `env`): where the data lives, which database, where a running BotCraft is and its key.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// Where BotCraft keeps its data and which database it uses.
#[derive(Debug, Clone, clap::Args)]
pub struct DataArgs {
    /// The data folder: the default SQLite database, the pid registry, the generated admin key.
    #[arg(
        long,
        env = "BOTCRAFT_DATA_DIR",
        default_value = ".botcraft",
        value_name = "DIR"
    )]
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://…`; default: `botcraft.db` (SQLite) in the data folder.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true, value_name = "URL")]
    pub database_url: Option<String>,
}

impl DataArgs {
    /// The database URL, creating the data folder when the default SQLite file is used.
    pub fn database_url(&self) -> anyhow::Result<String> {
        if let Some(url) = secret_or_file(self.database_url.clone(), "DATABASE_URL")? {
            return Ok(url);
        }
        create_private_dir(&self.data_dir)?;
        Ok(store::sqlite_url(&self.data_dir.join("botcraft.db")))
    }

    /// Narrow the default SQLite database's files to 0600 (after the store created them).
    pub fn protect_database_files(&self) {
        use std::os::unix::fs::PermissionsExt;
        if self.database_url.is_some() {
            return;
        }
        for name in ["botcraft.db", "botcraft.db-wal", "botcraft.db-shm"] {
            let path = self.data_dir.join(name);
            if path.exists()
                && let Err(error) =
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            {
                eprintln!("botcraft: cannot make {} private: {error}", path.display());
            }
        }
    }
}

/// `value`, else the content of the file `{var}_FILE` names (the Docker / Kubernetes secrets
/// convention), a trailing newline dropped. An error names the variable and the file, never
/// the content.
pub fn secret_or_file(value: Option<String>, var: &str) -> anyhow::Result<Option<String>> {
    if value
        .as_deref()
        .is_some_and(|value| !value.trim().is_empty())
    {
        return Ok(value);
    }
    let file_var = format!("{var}_FILE");
    let Some(path) = std::env::var_os(&file_var).filter(|path| !path.is_empty()) else {
        return Ok(value);
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("{file_var}: cannot read {}", Path::new(&path).display()))?;
    let secret = text.trim_end_matches(['\n', '\r']).to_owned();
    anyhow::ensure!(
        !secret.trim().is_empty(),
        "{file_var}: {} is empty",
        Path::new(&path).display()
    );
    Ok(Some(secret))
}

/// The data folder, created 0700 (narrowed to it when it exists with wider rights).
pub fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("create the data folder {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("make the data folder {} private", dir.display()))
}

/// A running BotCraft, for the commands that talk to it.
#[derive(Debug, Clone, clap::Args)]
pub struct RemoteArgs {
    /// The BotCraft to talk to.
    #[arg(
        long,
        env = "BOTCRAFT_URL",
        default_value = "http://127.0.0.1:3000",
        global = true
    )]
    pub url: String,
    /// Its admin key; default: the key `botcraft serve` generated in the data folder.
    #[arg(long, env = "BOTCRAFT_API_KEY", hide_env_values = true, global = true)]
    pub api_key: Option<String>,
    /// The data folder holding a generated key.
    #[arg(
        long,
        env = "BOTCRAFT_DATA_DIR",
        default_value = ".botcraft",
        global = true,
        value_name = "DIR"
    )]
    pub data_dir: PathBuf,
}

impl RemoteArgs {
    pub fn key(&self) -> Option<String> {
        secret_or_file(self.api_key.clone(), "BOTCRAFT_API_KEY")
            .ok()
            .flatten()
            .and_then(|keys| keys.split(',').next().map(str::trim).map(str::to_owned))
            .filter(|key| !key.is_empty())
            .or_else(|| read_key_file(&self.data_dir).ok())
    }
}

/// The file holding the key `botcraft serve` generates when `BOTCRAFT_API_KEY` is unset.
pub fn key_file(data_dir: &Path) -> PathBuf {
    data_dir.join("api-key")
}

fn read_key_file(data_dir: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(key_file(data_dir))?;
    Ok(text.trim().to_owned())
}

/// The key in the data folder, created (random, mode 0600) when missing.
pub fn generated_key(data_dir: &Path) -> anyhow::Result<String> {
    if let Ok(key) = read_key_file(data_dir)
        && !key.is_empty()
    {
        return Ok(key);
    }
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    create_private_dir(data_dir)?;
    let key: String = (0..32)
        .map(|_| char::from(b"0123456789abcdef"[rand::random_range(0..16usize)]))
        .collect();
    let path = key_file(data_dir);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("write {}", path.display()))?;
    writeln!(file, "bc_{key}")?;
    Ok(format!("bc_{key}"))
}

/// The directory of the running executable (where the forge binaries are by default).
pub fn exe_dir() -> anyhow::Result<PathBuf> {
    std::env::current_exe()
        .context("locate the running executable")?
        .parent()
        .map(PathBuf::from)
        .context("the executable has no parent directory")
}

/// The sentence-embedding model of `tool_search`'s dense signal.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelArgs {
    /// A sentence-transformers model folder (config.json, tokenizer.json, model.safetensors,
    /// 1_Pooling/config.json): `tool_search` fuses BM25F with its similarity. Without it,
    /// BM25F only (also when empty). `scripts/embedding-model-setup.sh` installs all-MiniLM-L6-v2.
    #[arg(long, env = "BOTCRAFT_EMBEDDING_MODEL", value_name = "DIR")]
    pub embedding_model: Option<std::ffi::OsString>,
}

impl ModelArgs {
    /// The model, loaded on a blocking thread; `None` without a folder. A folder that is
    /// there but broken is an error naming the file, never a silent fallback.
    pub async fn load(&self) -> anyhow::Result<Option<std::sync::Arc<embedding::Embedder>>> {
        let Some(dir) = self
            .embedding_model
            .clone()
            .map(PathBuf::from)
            .filter(|d| !d.as_os_str().is_empty())
        else {
            return Ok(None);
        };
        let embedder = tokio::task::spawn_blocking(move || embedding::Embedder::load(&dir))
            .await
            .context("load the embedding model")?
            .context("BOTCRAFT_EMBEDDING_MODEL")?;
        Ok(Some(std::sync::Arc::new(embedder)))
    }
}
