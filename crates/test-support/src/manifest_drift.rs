//! The manifest-drift checks every forge server runs, in one place: its committed
//! `tools.manifest.json` is what `tools/list` answers with an empty environment (rewritten
//! instead with `BOTCRAFT_UPDATE_MANIFESTS=1`), and `--manifest` prints the committed file.

use std::path::Path;

use anyhow::Context as _;

use crate::StdioServer;

/// `program`'s `tools/list` (started with [`StdioServer::base_env`]) against
/// `crate_dir/tools.manifest.json`; `package` names the crate in the refresh hint.
pub async fn check_committed_manifest(
    program: &str,
    crate_dir: &Path,
    package: &str,
) -> anyhow::Result<()> {
    let server = StdioServer::spawn(program, &[], &StdioServer::base_env()).await?;
    let tools = server.tools().await?;
    server.close().await?;
    let path = crate_dir.join("tools.manifest.json");
    if std::env::var("BOTCRAFT_UPDATE_MANIFESTS").as_deref() == Ok("1") {
        server_kit::manifest::write(&path, &tools)?;
    }
    server_kit::manifest::check(
        &path,
        &tools,
        &format!("BOTCRAFT_UPDATE_MANIFESTS=1 cargo test -p {package}"),
    )?;
    Ok(())
}

/// `program --manifest` (empty environment) prints `crate_dir/tools.manifest.json`, as JSON.
pub fn check_manifest_flag(program: &str, crate_dir: &Path) -> anyhow::Result<()> {
    let output = std::process::Command::new(program)
        .arg("--manifest")
        .env_clear()
        .output()
        .with_context(|| format!("run {program} --manifest"))?;
    anyhow::ensure!(
        output.status.success(),
        "{program} --manifest: {}",
        output.status
    );
    let printed: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("--manifest prints JSON")?;
    let path = crate_dir.join("tools.manifest.json");
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?,
    )
    .context("the committed manifest is JSON")?;
    anyhow::ensure!(
        printed == committed,
        "{program} --manifest prints {printed}\nbut {} holds {committed}",
        path.display()
    );
    Ok(())
}
