//! Shared helpers: the fixture repository copied into a temp dir with fixed
//! modification times (git does not keep them), and a server over it.

mod errors;
mod find;
mod startup;
mod tools;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use test_support::StdioServer;

pub const BIN: &str = env!("CARGO_BIN_EXE_forge-discovery");

/// Every fixture file's modification time: 2026-01-02T03:04:05Z.
pub const FIXED_MTIME_SECS: u64 = 1_767_323_045;

/// A copy of the fixture repository in a temp dir.
pub struct FixtureRepo {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

pub fn fixture_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/uvilo-os")
}

/// The fixture, plus what the server must skip (hidden folders, `.trash`,
/// `node_modules`, build output), which git would not keep or which a
/// `.gitignore` excludes.
pub fn fixture_repo() -> FixtureRepo {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("uvilo-os");
    copy_tree(&fixture_source(), &root);
    let skipped = [
        ".trash/Forge/README.md",
        ".obsidian/README.md",
        "node_modules/README.md",
        "dist/README.md",
        "Forge/Projects/.trash/Old/README.md",
        "Forge/Projects/Taxonomy/.trash/draft.md",
        "Forge/Projects/Taxonomy/node_modules/left-pad/index.js",
        "Forge/Projects/Taxonomy/target/debug/app",
        "Forge/Projects/Taxonomy/.git/HEAD",
        "Forge/Skills/.trash/old-skill/SKILL.md",
    ];
    for rel in skipped {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, "skipped\n").expect("write");
    }
    set_mtimes(&root);
    FixtureRepo { _dir: dir, root }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read fixture") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn set_mtimes(dir: &Path) {
    let time = SystemTime::UNIX_EPOCH + Duration::from_secs(FIXED_MTIME_SECS);
    for entry in fs::read_dir(dir).expect("read") {
        let entry = entry.expect("entry");
        if entry.file_type().expect("type").is_dir() {
            set_mtimes(&entry.path());
        } else {
            let file = fs::File::options()
                .write(true)
                .open(entry.path())
                .expect("open");
            file.set_modified(time).expect("set mtime");
        }
    }
}

pub fn env_with_repo(repo: &Path) -> BTreeMap<String, String> {
    let mut env = StdioServer::base_env();
    env.insert("REPO_PATH".to_owned(), repo.display().to_string());
    env
}

pub async fn server_over(repo: &Path) -> StdioServer {
    StdioServer::spawn(BIN, &[], &env_with_repo(repo))
        .await
        .expect("spawn forge-discovery")
}

/// Wait (bounded) until the server has written a stderr line containing
/// `needle`, and return that line.
pub async fn stderr_line_with(server: &StdioServer, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(line) = server
            .stderr_lines()
            .into_iter()
            .find(|line| line.contains(needle))
        {
            return line;
        }
        assert!(
            Instant::now() < deadline,
            "no stderr line with {needle:?}; got {:#?}",
            server.stderr_lines()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
