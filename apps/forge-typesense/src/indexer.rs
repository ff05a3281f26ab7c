//! `forge-typesense index`: fill the collection from the repository's
//! markdown, writing only what changed.
//!
//! 1. Create the collection if it is missing; add any schema field it lacks.
//! 2. Read every markdown file into a document (see `document`).
//! 3. Fetch the `content_hash` of every stored document that has one (the
//!    documents this command wrote; others, e.g. from a website crawler, are
//!    never touched).
//! 4. Upsert, through the JSONL import endpoint in batches, the documents
//!    whose hash differs or that are new (all of them with `--full`).
//! 5. Delete the stored documents (with a hash) whose file is gone.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Map, Value};

use crate::client::{TypesenseClient, UpstreamError};
use crate::document::{self, WalkError, collection_schema, markdown_files, schema_fields};

/// Documents per import request.
pub const BATCH_DOCUMENTS: usize = 100;
/// An import request stops growing past this many bytes of JSONL.
pub const BATCH_BYTES: usize = 4 * 1024 * 1024;

/// What `index` was asked to do.
#[derive(Debug, Clone)]
pub struct IndexRequest {
    pub repo: PathBuf,
    /// Upsert every file, not only the changed ones.
    pub full: bool,
}

/// What `index` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexReport {
    pub collection: String,
    pub created_collection: bool,
    pub added_fields: Vec<String>,
    pub files: usize,
    pub upserted: usize,
    pub unchanged: usize,
    pub deleted: usize,
    /// `(path, reason)` of each file that could not be read or stored.
    pub failed: Vec<(String, String)>,
}

impl IndexReport {
    /// The closing summary line.
    pub fn summary(&self) -> String {
        let mut text = format!(
            "Indexed collection \"{}\": {} markdown files, {} upserted, {} unchanged, {} deleted, {} failed.",
            self.collection,
            self.files,
            self.upserted,
            self.unchanged,
            self.deleted,
            self.failed.len()
        );
        if self.created_collection {
            text.push_str(" (collection created)");
        }
        if !self.added_fields.is_empty() {
            text.push_str(&format!(
                " (fields added: {})",
                self.added_fields.join(", ")
            ));
        }
        text
    }
}

/// Why `index` stopped.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("The repository {} (REPO_PATH) is not a folder.", path.display())]
    RepoMissing { path: PathBuf },
    #[error("Cannot walk the repository: {0}")]
    Walk(#[from] WalkError),
    #[error("{0}")]
    Upstream(#[from] UpstreamError),
    #[error("Typesense described the collection without a `fields` list.")]
    BadCollection,
}

/// Run the whole indexing; progress goes to `progress` (stderr).
pub async fn index(
    client: &TypesenseClient,
    request: &IndexRequest,
    progress: &ProgressBar,
) -> Result<IndexReport, IndexError> {
    if !request.repo.is_dir() {
        return Err(IndexError::RepoMissing {
            path: request.repo.clone(),
        });
    }
    let mut report = IndexReport {
        collection: client.collection().to_owned(),
        ..IndexReport::default()
    };
    ensure_collection(client, &mut report).await?;

    progress.set_message("reading files");
    let files = markdown_files(&request.repo)?;
    report.files = files.len();
    let mut documents = Vec::with_capacity(files.len());
    for file in files {
        match read_capped(&file.absolute) {
            Ok(bytes) => documents.push(document::document(
                &file.path,
                &String::from_utf8_lossy(&bytes),
            )),
            Err(error) => report.failed.push((file.path, error.to_string())),
        }
    }

    progress.set_message("comparing with the index");
    let stored = client.stored_hashes().await?;
    let current: HashSet<String> = documents.iter().map(|d| text(d, "id")).collect();
    let (changed, unchanged): (Vec<_>, Vec<_>) = documents.into_iter().partition(|doc| {
        request.full || stored.get(&text(doc, "id")) != Some(&text(doc, "content_hash"))
    });
    report.unchanged = unchanged.len();

    progress.set_length(changed.len() as u64);
    progress.set_message("uploading");
    for batch in batches(changed) {
        let count = batch.len();
        let paths: Vec<String> = batch.iter().map(|d| text(d, "path")).collect();
        let jsonl: String = batch
            .iter()
            .map(|doc| Value::Object(doc.clone()).to_string() + "\n")
            .collect();
        let lines = client.import(jsonl).await?;
        for (index, path) in paths.into_iter().enumerate() {
            match lines.get(index) {
                Some(line) if line.success => report.upserted += 1,
                Some(line) => report.failed.push((
                    path,
                    line.error.clone().unwrap_or_else(|| "rejected".to_owned()),
                )),
                None => report
                    .failed
                    .push((path, "no answer line from the import".to_owned())),
            }
        }
        progress.inc(count as u64);
    }

    progress.set_message("deleting removed files");
    for id in stale(&stored, &current) {
        client.delete_document(id).await?;
        report.deleted += 1;
    }
    progress.finish_and_clear();
    Ok(report)
}

async fn ensure_collection(
    client: &TypesenseClient,
    report: &mut IndexReport,
) -> Result<(), IndexError> {
    let Some(existing) = client.get_collection().await? else {
        client
            .create_collection(collection_schema(client.collection()))
            .await?;
        report.created_collection = true;
        return Ok(());
    };
    let names: HashSet<&str> = existing
        .get("fields")
        .and_then(Value::as_array)
        .ok_or(IndexError::BadCollection)?
        .iter()
        .filter_map(|field| field.get("name").and_then(Value::as_str))
        .collect();
    let missing: Vec<Value> = schema_fields()
        .into_iter()
        .filter(|field| {
            field
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|name| !names.contains(name))
        })
        .collect();
    if !missing.is_empty() {
        report.added_fields = missing
            .iter()
            .filter_map(|field| field.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect();
        client.add_fields(missing).await?;
    }
    Ok(())
}

fn text(document: &Map<String, Value>, field: &str) -> String {
    document
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Split documents into import batches of at most [`BATCH_DOCUMENTS`]
/// documents and about [`BATCH_BYTES`] bytes.
fn batches(documents: Vec<Map<String, Value>>) -> Vec<Vec<Map<String, Value>>> {
    let mut batches = Vec::new();
    let mut batch = Vec::new();
    let mut bytes = 0usize;
    for document in documents {
        let size = text(&document, "content").len() + 1024;
        if !batch.is_empty() && (batch.len() >= BATCH_DOCUMENTS || bytes + size > BATCH_BYTES) {
            batches.push(std::mem::take(&mut batch));
            bytes = 0;
        }
        bytes += size;
        batch.push(document);
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    batches
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{msg:>24} [{bar:40}] {pos}/{len} documents ({elapsed})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// `index`'s repository path: `--repo`, else REPO_PATH, else the default.
pub fn repo_path(flag: Option<&Path>, from_env: String) -> PathBuf {
    flag.map(Path::to_owned)
        .unwrap_or_else(|| PathBuf::from(from_env))
}

/// Ids of stored documents whose file is gone, sorted.
fn stale<'a>(stored: &'a HashMap<String, String>, current: &HashSet<String>) -> Vec<&'a String> {
    let mut gone: Vec<&String> = stored.keys().filter(|id| !current.contains(*id)).collect();
    gone.sort();
    gone
}

/// Most bytes of a file the indexer reads: a document keeps at most
/// [`document::MAX_CONTENT_BYTES`] of its body, so a larger file (a sparse one of 100 GB)
/// is read only so far.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The first [`MAX_FILE_BYTES`] of the file at `path`, which must not be a symlink (one put
/// there after the walk is refused by the open itself).
fn read_capped(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn doc(path: &str, content_len: usize) -> Map<String, Value> {
        match json!({"path": path, "content": "x".repeat(content_len)}) {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn a_file_is_read_up_to_the_cap_and_never_through_a_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big = dir.path().join("big.md");
        let file = fs::File::create(&big).expect("create");
        file.set_len(MAX_FILE_BYTES * 4).expect("sparse");
        assert_eq!(
            read_capped(&big).expect("read").len() as u64,
            MAX_FILE_BYTES
        );
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&big, &link).expect("link");
        assert!(read_capped(&link).is_err());
        assert!(read_capped(dir.path()).is_err(), "a folder");
    }

    #[test]
    fn batches_stop_at_a_count_or_a_size() {
        let many: Vec<_> = (0..250).map(|i| doc(&format!("{i}.md"), 10)).collect();
        let sizes: Vec<usize> = batches(many).iter().map(Vec::len).collect();
        assert_eq!(sizes, [100, 100, 50]);
        let big: Vec<_> = (0..5)
            .map(|i| doc(&format!("{i}.md"), 1024 * 1024 + 1))
            .collect();
        let sizes: Vec<usize> = batches(big).iter().map(Vec::len).collect();
        assert_eq!(sizes, [3, 2]);
    }

    #[test]
    fn stale_ids_are_the_stored_ones_without_a_file() {
        let stored: HashMap<String, String> = [("a", "1"), ("b", "2"), ("c", "3")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into_iter()
            .collect();
        let current: HashSet<String> = ["b".to_owned()].into_iter().collect();
        assert_eq!(stale(&stored, &current), ["a", "c"]);
    }

    #[test]
    fn the_summary_line_says_what_happened() {
        let report = IndexReport {
            collection: "uvilo".into(),
            created_collection: true,
            added_fields: vec![],
            files: 3,
            upserted: 2,
            unchanged: 1,
            deleted: 0,
            failed: vec![],
        };
        assert_eq!(
            report.summary(),
            "Indexed collection \"uvilo\": 3 markdown files, 2 upserted, 1 unchanged, 0 deleted, 0 failed. (collection created)"
        );
    }
}
