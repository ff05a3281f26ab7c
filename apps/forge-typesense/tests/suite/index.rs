//! `forge-typesense index` against the real Typesense: it creates the
//! collection with the schema, writes only changed files on a re-run,
//! deletes documents of removed files, leaves documents it did not write
//! alone, and adds fields an older collection lacks.

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};

use super::real_typesense::{ADMIN_KEY, admin, shared};
use super::{fixture_repo, run_index};

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Run `index` into `collection` over `repo`: (exit code, stdout, stderr).
fn index_into(collection: &str, repo: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let typesense = shared();
    let output = run_index(
        args,
        &[
            ("TYPESENSE_URL", &typesense.url),
            ("TYPESENSE_API_KEY", ADMIN_KEY),
            ("TYPESENSE_COLLECTION", collection),
            ("REPO_PATH", &repo.display().to_string()),
        ],
    );
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn field_names(collection: &Value) -> Vec<String> {
    collection["fields"]
        .as_array()
        .map(|fields| {
            fields
                .iter()
                .filter_map(|f| f["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn reindexing_writes_only_what_changed() {
    test_skip::need!(test_skip::needs::typesense());
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    copy_tree(&fixture_repo(), &repo);
    let collection = "incremental";

    let first = index_into(collection, &repo, &[]);
    assert_eq!(
        first,
        (
            Some(0),
            "Indexed collection \"incremental\": 9 markdown files, 9 upserted, 0 unchanged, 0 deleted, 0 failed. (collection created)\n".to_owned(),
            String::new()
        )
    );
    let (_, described) = admin(Method::GET, "/collections/incremental", None).await;
    assert_eq!(
        field_names(&described),
        [
            "title",
            "path",
            "summary",
            "content",
            "department",
            "project",
            "type",
            "source",
            "status",
            "visibility",
            "owner",
            "content_hash"
        ]
    );
    assert_eq!(described["num_documents"], 9);

    let again = index_into(collection, &repo, &[]);
    assert_eq!(
        again.1,
        "Indexed collection \"incremental\": 9 markdown files, 0 upserted, 9 unchanged, 0 deleted, 0 failed.\n"
    );

    fs::write(
        repo.join("Marketing/README.md"),
        "# Marketing\n\nNow about podcasts.\n",
    )
    .expect("edit");
    fs::remove_file(repo.join("Website/pricing.md")).expect("remove");
    fs::write(repo.join("Forge/new.md"), "# New\n\nA new page.\n").expect("add");
    let changed = index_into(collection, &repo, &[]);
    assert_eq!(
        changed.1,
        "Indexed collection \"incremental\": 9 markdown files, 2 upserted, 7 unchanged, 1 deleted, 0 failed.\n"
    );
    let (_, described) = admin(Method::GET, "/collections/incremental", None).await;
    assert_eq!(described["num_documents"], 9);

    let full = index_into(collection, &repo, &["--full"]);
    assert_eq!(
        full.1,
        "Indexed collection \"incremental\": 9 markdown files, 9 upserted, 0 unchanged, 0 deleted, 0 failed.\n"
    );
}

#[tokio::test]
async fn documents_written_by_others_are_left_alone_and_missing_fields_added() {
    test_skip::need!(test_skip::needs::typesense());
    let collection = "legacy";
    let (status, _) = admin(
        Method::POST,
        "/collections",
        Some(json!({"name": collection, "fields": [
            {"name": "title", "type": "string"},
            {"name": "path", "type": "string"}
        ]})),
    )
    .await;
    assert_eq!(status, 201);
    let (status, _) = admin(
        Method::POST,
        &format!("/collections/{collection}/documents"),
        Some(
            json!({"id": "crawler-1", "title": "From the website", "path": "https://example.org/"}),
        ),
    )
    .await;
    assert_eq!(status, 201);

    let dir = tempfile::tempdir().expect("tempdir");
    fs::write(dir.path().join("only.md"), "# Only\n\nOne file.\n").expect("write");
    let (code, stdout, _) = index_into(collection, dir.path(), &[]);
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout,
        "Indexed collection \"legacy\": 1 markdown files, 1 upserted, 0 unchanged, 0 deleted, 0 failed. (fields added: summary, content, department, project, type, source, status, visibility, owner, content_hash)\n"
    );
    let (status, kept) = admin(
        Method::GET,
        &format!("/collections/{collection}/documents/crawler-1"),
        None,
    )
    .await;
    assert_eq!(
        (status, kept["title"].clone()),
        (200, json!("From the website"))
    );
}

#[tokio::test]
async fn index_failures_exit_non_zero_without_showing_the_key() {
    test_skip::need!(test_skip::needs::typesense());
    let typesense = shared();
    let dir = tempfile::tempdir().expect("tempdir");
    let wrong_key = "wrong-admin-key-91b2";
    let output = run_index(
        &[],
        &[
            ("TYPESENSE_URL", &typesense.url),
            ("TYPESENSE_API_KEY", wrong_key),
            ("REPO_PATH", &dir.path().display().to_string()),
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr,
        format!(
            "forge-typesense index: Typesense HTTP 401: {{\"message\": \"Forbidden - a valid `x-typesense-api-key` header must be sent.\"}} (at {}/collections/uvilo)\n",
            typesense.url
        )
    );
    assert!(!stderr.contains(wrong_key));

    let missing = dir.path().join("nope");
    let (code, _, stderr) = index_into("missing_repo", &missing, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(
        stderr,
        format!(
            "forge-typesense index: The repository {} (REPO_PATH) is not a folder.\n",
            missing.display()
        )
    );
}
