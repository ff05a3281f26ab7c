//! The trash: round trips, naming, refusals, restoring, list_trash.

use pretty_assertions::assert_eq;
use regex::Regex;
use serde_json::json;

use super::{Fixture, put, tree};

/// The trashed path in a trash tool's answer.
fn trashed_path(answer: &str) -> String {
    let pattern =
        Regex::new(r"^Moved .+ to the trash as (.+)\. Restore it with untrash_(file|directory)\.$")
            .expect("regex");
    pattern
        .captures(answer)
        .unwrap_or_else(|| panic!("unexpected answer: {answer}"))[1]
        .to_owned()
}

/// Timestamps replaced, so names can be compared.
fn unstamped(text: &str) -> String {
    let stamp = Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}").expect("regex");
    let time = Regex::new(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC").expect("regex");
    let text = stamp.replace_all(text, "[STAMP]");
    time.replace_all(&text, "[TIME] UTC").into_owned()
}

/// The timestamp in a trashed path.
fn stamp_of(trashed: &str) -> String {
    Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}")
        .expect("regex")
        .find(trashed)
        .unwrap_or_else(|| panic!("no stamp in {trashed}"))
        .as_str()
        .to_owned()
}

#[tokio::test]
async fn round_trip_table() {
    let fx = Fixture::start().await;
    // (tool suffix, path, files to create, expected trashed path)
    let cases: [(&str, &str, &[&str], &str); 6] = [
        (
            "file",
            "notes.md",
            &["notes.md"],
            ".trash/notes__[STAMP].md",
        ),
        (
            "file",
            "Architecture/Old_Doc.md",
            &["Architecture/Old_Doc.md", "Architecture/keep.md"],
            ".trash/Architecture/Old_Doc__[STAMP].md",
        ),
        (
            "directory",
            "drafts",
            &["drafts/a.md", "drafts/inner/b.md"],
            ".trash/drafts__[STAMP]",
        ),
        (
            "file",
            "Makefile",
            &["Makefile"],
            ".trash/Makefile__[STAMP]",
        ),
        ("file", ".env", &[".env"], ".trash/.env__[STAMP]"),
        (
            "file",
            "archive.tar.gz",
            &["archive.tar.gz"],
            ".trash/archive.tar__[STAMP].gz",
        ),
    ];
    for (kind, path, files, expected) in cases {
        for file in files {
            put(&fx.repo, file, &format!("content of {file}"));
        }
        let before = tree(&fx.repo);
        let answer = fx.ok(&format!("trash_{kind}"), json!({"path": path})).await;
        let trashed = trashed_path(&answer);
        assert_eq!(unstamped(&trashed), expected, "{path}");
        assert!(!fx.repo_path(path).exists(), "{path} left its place");
        assert!(fx.repo_path(&trashed).exists(), "{trashed} exists");

        let answer = fx
            .ok(&format!("untrash_{kind}"), json!({"path": trashed}))
            .await;
        assert_eq!(answer, format!("Restored {trashed} to {path}."));
        for file in files {
            assert_eq!(
                std::fs::read_to_string(fx.repo_path(file)).expect("restored"),
                format!("content of {file}")
            );
        }
        let mut expected = before.clone();
        if !expected.contains(&".trash/".to_owned()) {
            expected.push(".trash/".to_owned());
            expected.sort();
        }
        assert_eq!(
            tree(&fx.repo),
            expected,
            "{path}: restored, and .trash holds no leftovers"
        );
    }
}

#[tokio::test]
async fn untrash_accepts_trash_relative_and_absolute_paths() {
    let fx = Fixture::start().await;
    for (index, form) in ["trash-relative", "absolute"].iter().enumerate() {
        let file = format!("docs/n{index}.md");
        put(&fx.repo, &file, "x");
        let trashed = trashed_path(&fx.ok("trash_file", json!({"path": file})).await);
        let given = match *form {
            "trash-relative" => trashed.trim_start_matches(".trash/").to_owned(),
            _ => fx.repo_path(&trashed).display().to_string(),
        };
        fx.ok("untrash_file", json!({"path": given})).await;
        assert!(fx.repo_path(&file).exists(), "{form}");
    }
}

#[tokio::test]
async fn same_second_double_trash_keeps_both() {
    let fx = Fixture::start().await;
    put(&fx.repo, "x.txt", "first");
    let first = trashed_path(&fx.ok("trash_file", json!({"path": "x.txt"})).await);
    put(&fx.repo, "x.txt", "second");
    let second = trashed_path(&fx.ok("trash_file", json!({"path": "x.txt"})).await);
    assert_eq!(first, format!(".trash/x__{}.txt", stamp_of(&first)));
    if stamp_of(&first) == stamp_of(&second) {
        assert_eq!(
            second,
            first.replace(".txt", "-2.txt"),
            "same second: a counter"
        );
    } else {
        assert_eq!(second, format!(".trash/x__{}.txt", stamp_of(&second)));
    }
    assert_eq!(
        std::fs::read_to_string(fx.repo_path(&first)).expect("first"),
        "first"
    );
    assert_eq!(
        std::fs::read_to_string(fx.repo_path(&second)).expect("second"),
        "second"
    );
}

#[tokio::test]
async fn refusals_table() {
    let fx = Fixture::start().await;
    for file in [
        "doc.md",
        "drafts/a.md",
        ".git/config",
        ".internal/node_modules/pkg/index.js",
        ".internal/dist/index.html",
        ".internal/.astro/types.d.ts",
        ".internal/src/page.astro",
        "vendor/lib/.git/HEAD",
        "vendor/lib/src/a.rs",
        "modules/sub/.git",
    ] {
        put(&fx.repo, file, "x");
    }
    let repo = fx.repo.display().to_string();
    let parent = fx.repo.parent().expect("parent").display().to_string();
    let cases = [
        ("trash_file", "drafts", "drafts is a directory; use trash_directory for it".to_owned()),
        ("trash_directory", "doc.md", "doc.md is a file; use trash_file for it".to_owned()),
        ("trash_file", "nope.md", "No such file or directory: nope.md".to_owned()),
        ("trash_file", ".git/config", "Refusing to trash .git/config: .git is protected and never trashed".to_owned()),
        ("trash_directory", ".git", "Refusing to trash .git: .git is protected and never trashed".to_owned()),
        ("trash_directory", ".trash", "Refusing to trash .trash: .trash is protected and never trashed".to_owned()),
        (
            "trash_file",
            ".internal/node_modules/pkg/index.js",
            "Refusing to trash .internal/node_modules/pkg/index.js: .internal/node_modules is protected and never trashed".to_owned(),
        ),
        (
            "trash_directory",
            ".internal/dist",
            "Refusing to trash .internal/dist: .internal/dist is protected and never trashed".to_owned(),
        ),
        (
            "trash_file",
            ".internal/.astro/types.d.ts",
            "Refusing to trash .internal/.astro/types.d.ts: .internal/.astro is protected and never trashed".to_owned(),
        ),
        (
            "trash_directory",
            ".internal",
            "Refusing to trash .internal: it contains the protected path .internal/node_modules".to_owned(),
        ),
        ("trash_directory", ".", "Refusing to trash the repository root itself".to_owned()),
        // A nested repository (its .git a folder), a submodule or worktree (a .git file).
        (
            "trash_directory",
            "vendor",
            "Refusing to trash vendor: it contains the protected path vendor/lib/.git".to_owned(),
        ),
        (
            "trash_directory",
            "modules",
            "Refusing to trash modules: it contains the protected path modules/sub/.git".to_owned(),
        ),
        (
            "trash_file",
            "../outside.md",
            format!("Access denied - path outside allowed directories: {parent}/outside.md not in {repo}"),
        ),
        (
            "trash_file",
            "/etc/passwd",
            format!("Access denied - path outside allowed directories: /etc/passwd not in {repo}"),
        ),
        (
            "untrash_file",
            "../doc.md",
            "../doc.md is not inside the trash; give the trashed path list_trash shows, like .trash/Architecture/Old_Doc__2026-03-14T18-30-00.md".to_owned(),
        ),
        (
            "untrash_file",
            "doc.md",
            "Nothing in the trash at .trash/doc.md".to_owned(),
        ),
    ];
    let before = tree(&fx.repo);
    for (tool, path, expected) in cases {
        assert_eq!(
            fx.err(tool, json!({"path": path})).await,
            expected,
            "{tool} {path}"
        );
    }
    assert_eq!(tree(&fx.repo), before, "nothing moved");
    fx.ok("trash_file", json!({"path": ".internal/src/page.astro"}))
        .await;
}

#[tokio::test]
async fn untrash_never_overwrites() {
    let fx = Fixture::start().await;
    put(&fx.repo, "plan.md", "old plan");
    let trashed = trashed_path(&fx.ok("trash_file", json!({"path": "plan.md"})).await);
    put(&fx.repo, "plan.md", "new plan");
    let text = fx.err("untrash_file", json!({"path": trashed})).await;
    let inside = trashed.trim_start_matches(".trash/");
    assert_eq!(
        text,
        format!(
            "Cannot restore .trash/{inside}: plan.md already exists. Nothing was moved; move the existing one away first."
        )
    );
    assert_eq!(
        std::fs::read_to_string(fx.repo_path("plan.md")).expect("read"),
        "new plan"
    );
    assert_eq!(
        std::fs::read_to_string(fx.repo_path(&trashed)).expect("read"),
        "old plan"
    );
}

#[tokio::test]
async fn untrash_creates_missing_parents_and_checks_kinds() {
    let fx = Fixture::start().await;
    put(&fx.repo, "a/b/c.md", "deep");
    put(&fx.repo, "folder/x.md", "x");
    let file = trashed_path(&fx.ok("trash_file", json!({"path": "a/b/c.md"})).await);
    let folder = trashed_path(&fx.ok("trash_directory", json!({"path": "folder"})).await);
    std::fs::remove_dir_all(fx.repo_path("a")).expect("rm a");

    assert_eq!(
        fx.err("untrash_directory", json!({"path": file})).await,
        format!("{file} is a file; use untrash_file for it")
    );
    assert_eq!(
        fx.err("untrash_file", json!({"path": folder})).await,
        format!("{folder} is a directory; use untrash_directory for it")
    );
    fx.ok("untrash_file", json!({"path": file})).await;
    assert_eq!(
        std::fs::read_to_string(fx.repo_path("a/b/c.md")).expect("read"),
        "deep"
    );
    let folder_name = folder.trim_start_matches(".trash/");
    assert_eq!(
        tree(&fx.repo_path(".trash")),
        [format!("{folder_name}/"), format!("{folder_name}/x.md")],
        "the emptied .trash/a/b folders were removed"
    );
}

#[tokio::test]
async fn list_trash_shows_every_item() {
    let fx = Fixture::start().await;
    assert_eq!(fx.ok("list_trash", json!({})).await, "The trash is empty.");
    put(&fx.repo, "Architecture/Old_Doc.md", "0123456789AB");
    put(&fx.repo, "drafts/a.md", "abc");
    put(&fx.repo, "drafts/inner/b.md", "de");
    put(&fx.repo, ".env", "X=1");
    for (tool, path) in [
        ("trash_file", "Architecture/Old_Doc.md"),
        ("trash_directory", "drafts"),
        ("trash_file", ".env"),
    ] {
        fx.ok(tool, json!({"path": path})).await;
    }
    let text = fx.ok("list_trash", json!({})).await;
    insta::assert_snapshot!("list_trash", unstamped(&text));
}

/// The operator's protected paths (`FORGE_FS_PROTECTED`) are never moved into the trash,
/// where `empty_trash` would delete them: not the path itself, not through a symlinked
/// folder, not a folder holding one. Nothing moves.
#[tokio::test]
async fn the_operators_protected_paths_are_never_trashed() {
    let fx = Fixture::start_protected("secrets, deploy/prod.env, release").await;
    put(&fx.ws, "secrets/key.pem", "key\n");
    put(&fx.ws, "deploy/prod.env", "TOKEN=1\n");
    put(&fx.ws, "deploy/dev.env", "TOKEN=0\n");
    put(&fx.ws, "config/prod.env", "TOKEN=2\n");
    std::os::unix::fs::symlink(fx.ws_path("deploy"), fx.ws_path("linked")).expect("ln");
    // A protected name that is a symlink to a folder: protected as written, and its target.
    std::os::unix::fs::symlink(fx.ws_path("config"), fx.ws_path("release")).expect("ln");
    let cases = [
        (
            "trash_directory",
            "secrets",
            "Refusing to trash secrets: secrets is protected and never trashed",
        ),
        (
            "trash_file",
            "secrets/key.pem",
            "Refusing to trash secrets/key.pem: secrets is protected and never trashed",
        ),
        (
            "trash_file",
            "linked/prod.env",
            "Refusing to trash deploy/prod.env: deploy/prod.env is protected and never trashed",
        ),
        (
            "trash_directory",
            "deploy",
            "Refusing to trash deploy: it contains the protected path deploy/prod.env",
        ),
        (
            "trash_file",
            "release/prod.env",
            "Refusing to trash config/prod.env: release is protected and never trashed",
        ),
        (
            "trash_directory",
            "config",
            "Refusing to trash config: release is protected and never trashed",
        ),
        (
            "trash_file",
            "config/prod.env",
            "Refusing to trash config/prod.env: release is protected and never trashed",
        ),
    ];
    for (tool, path, expected) in cases {
        assert_eq!(
            fx.err(tool, json!({"path": path})).await,
            expected,
            "{tool} {path}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(fx.ws_path("deploy/prod.env")).expect("read"),
        "TOKEN=1\n"
    );
    assert!(fx.ws_path("secrets/key.pem").exists());
    assert!(fx.ws_path("config/prod.env").exists());
    // What is not protected still goes.
    let moved = fx.ok("trash_file", json!({"path": "deploy/dev.env"})).await;
    assert!(
        moved.starts_with("Moved deploy/dev.env to the trash"),
        "{moved}"
    );
}
