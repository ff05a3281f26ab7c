//! Repository markdown as Typesense documents: which files are indexed, the
//! collection schema, and how a file's frontmatter and body map to fields.
//!
//! | field | from |
//! |---|---|
//! | `id` | first 32 hex digits of SHA-256 of the path |
//! | `path` | the path relative to the repository root, `/` separators |
//! | `title` | frontmatter `title`, else the first `#` heading, else the file name without extension |
//! | `summary` | frontmatter `summary`, else `description`, else the first paragraph (300 chars) |
//! | `content` | the body without frontmatter, at most 200 KiB |
//! | `department` | frontmatter `department`, else the top-level folder |
//! | `project` | frontmatter `project`, else `P` in `{Department}/Projects/P/…` |
//! | `type` | frontmatter `type`, else `skill` (SKILL.md), `readme` (README.md) or `document` |
//! | `source` | frontmatter `source`, else `repo` |
//! | `status`, `visibility`, `owner` | the frontmatter field of that name |
//! | `content_hash` | SHA-256 of the index format and all fields above but `id` |

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::markdown::{Markdown, cap_bytes};

/// Changing how files map to fields changes this, so every document's hash
/// changes and the next `index` rewrites them all.
pub const INDEX_FORMAT: &str = "forge-typesense index format 1";
/// `content` holds at most this many bytes of the body.
pub const MAX_CONTENT_BYTES: usize = 200 * 1024;
/// File extensions indexed (compared ignoring case).
pub const MARKDOWN_EXTENSIONS: [&str; 3] = ["md", "markdown", "mdx"];

/// The optional string facets the search filters use.
pub const FILTER_FIELDS: [&str; 7] = [
    "department",
    "project",
    "type",
    "source",
    "status",
    "visibility",
    "owner",
];

/// Every field of the schema, as Typesense field definitions.
pub fn schema_fields() -> Vec<Value> {
    let mut fields = vec![
        json!({"name": "title", "type": "string"}),
        json!({"name": "path", "type": "string", "facet": true}),
        json!({"name": "summary", "type": "string", "optional": true}),
        json!({"name": "content", "type": "string", "optional": true}),
    ];
    fields.extend(
        FILTER_FIELDS
            .iter()
            .map(|name| json!({"name": name, "type": "string", "facet": true, "optional": true})),
    );
    fields
        .push(json!({"name": "content_hash", "type": "string", "optional": true, "index": false}));
    fields
}

/// The schema `index` creates a missing collection with.
pub fn collection_schema(name: &str) -> Value {
    json!({ "name": name, "fields": schema_fields() })
}

/// A markdown file of the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoFile {
    /// Relative to the repository root, `/` separators.
    pub path: String,
    pub absolute: PathBuf,
}

/// A folder the walk could not read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {source}", path.display())]
pub struct WalkError {
    pub path: PathBuf,
    pub source: io::Error,
}

/// Whether the walk skips an entry with this name.
pub fn is_skipped(name: &str) -> bool {
    server_kit::markdown::is_skipped(name)
}

fn is_markdown(name: &str) -> bool {
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && MARKDOWN_EXTENSIONS
                .iter()
                .any(|m| ext.eq_ignore_ascii_case(m))
    })
}

/// Every markdown file under `root`, sorted by path. Hidden entries,
/// `node_modules` and build output are skipped; symlinked folders are not
/// followed.
pub fn markdown_files(root: &Path) -> Result<Vec<RepoFile>, WalkError> {
    let mut files = Vec::new();
    walk(root, "", &mut files)?;
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

fn walk(dir: &Path, prefix: &str, files: &mut Vec<RepoFile>) -> Result<(), WalkError> {
    let entries = fs::read_dir(dir).map_err(|source| WalkError {
        path: dir.to_owned(),
        source,
    })?;
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if is_skipped(&name) {
            continue;
        }
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let path = format!("{prefix}{name}");
        if file_type.is_dir() {
            walk(&entry.path(), &format!("{path}/"), files)?;
        // The entry's own type: a symlink is neither, and is not followed (a link to a file
        // outside the repository would put what it holds in the index).
        } else if is_markdown(&name) && file_type.is_file() {
            files.push(RepoFile {
                path,
                absolute: entry.path(),
            });
        }
    }
    Ok(())
}

fn sha256_hex(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    hex::encode(hasher.finalize())
}

/// The document id of a path.
pub fn document_id(path: &str) -> String {
    sha256_hex(&[path])[..32].to_owned()
}

/// The Typesense document for the file at `path` (relative) with `text`.
pub fn document(path: &str, text: &str) -> Map<String, Value> {
    let markdown = Markdown::parse(text);
    let segments: Vec<&str> = path.split('/').collect();
    let file_name = segments.last().copied().unwrap_or(path);
    let stem = file_name
        .rsplit_once('.')
        .map(|(stem, _)| stem)
        .unwrap_or(file_name);

    let mut fields = Map::new();
    let mut put = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            fields.insert(name.to_owned(), Value::String(value));
        }
    };
    put("path", Some(path.to_owned()));
    put(
        "title",
        Some(
            markdown
                .field("title")
                .or_else(|| markdown.first_heading())
                .unwrap_or_else(|| stem.to_owned()),
        ),
    );
    put(
        "summary",
        markdown
            .field("summary")
            .or_else(|| markdown.field("description"))
            .or_else(|| markdown.first_paragraph()),
    );
    let content = cap_bytes(markdown.body, MAX_CONTENT_BYTES).trim();
    put("content", (!content.is_empty()).then(|| content.to_owned()));
    put(
        "department",
        markdown
            .field("department")
            .or_else(|| (segments.len() > 1).then(|| segments[0].to_owned())),
    );
    put(
        "project",
        markdown
            .field("project")
            .or_else(|| match segments.as_slice() {
                [_, "Projects", project, _, ..] => Some((*project).to_owned()),
                _ => None,
            }),
    );
    let default_type = if file_name == "SKILL.md" {
        "skill"
    } else if file_name.eq_ignore_ascii_case("readme.md") {
        "readme"
    } else {
        "document"
    };
    put(
        "type",
        Some(
            markdown
                .field("type")
                .unwrap_or_else(|| default_type.to_owned()),
        ),
    );
    put(
        "source",
        Some(
            markdown
                .field("source")
                .unwrap_or_else(|| "repo".to_owned()),
        ),
    );
    for name in ["status", "visibility", "owner"] {
        put(name, markdown.field(name));
    }

    // serde_json's map is sorted, so this text is canonical.
    let canonical = Value::Object(fields.clone()).to_string();
    fields.insert(
        "content_hash".to_owned(),
        Value::String(sha256_hex(&[INDEX_FORMAT, &canonical])),
    );
    fields.insert("id".to_owned(), Value::String(document_id(path)));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn frontmatter_and_path_map_to_fields() {
        let doc = document(
            "Forge/Projects/Taxonomy/notes/plan.md",
            "---\nstatus: draft\nvisibility: private\nowner: [ana, bo]\n---\n# Taxonomy plan\n\nWe tag  every\ndocument.\n",
        );
        let mut without_hash = doc.clone();
        let hash = without_hash.remove("content_hash");
        assert_eq!(
            Value::Object(without_hash),
            json!({
                "id": document_id("Forge/Projects/Taxonomy/notes/plan.md"),
                "path": "Forge/Projects/Taxonomy/notes/plan.md",
                "title": "Taxonomy plan",
                "summary": "We tag every document.",
                "content": "# Taxonomy plan\n\nWe tag  every\ndocument.",
                "department": "Forge",
                "project": "Taxonomy",
                "type": "document",
                "source": "repo",
                "status": "draft",
                "visibility": "private",
                "owner": "ana, bo"
            })
        );
        assert_eq!(hash.and_then(|h| h.as_str().map(str::len)), Some(64));
    }

    #[test]
    fn defaults_come_from_the_file_name_and_place() {
        let cases = [
            (
                "README.md",
                "Hello.\n",
                json!([null, null, "readme", "README"]),
            ),
            (
                "Forge/Skills/pdf/SKILL.md",
                "---\nname: pdf\n---\n",
                json!(["Forge", null, "skill", "SKILL"]),
            ),
            (
                "Forge/Projects/Taxonomy/README.md",
                "---\ntype: brief\nproject: Tax\ndepartment: Ops\n---\n",
                json!(["Ops", "Tax", "brief", "README"]),
            ),
            (
                "Forge/Projects/README.md",
                "",
                json!(["Forge", null, "readme", "README"]),
            ),
        ];
        for (path, text, expected) in cases {
            let doc = document(path, text);
            let actual = json!([
                doc.get("department"),
                doc.get("project"),
                doc["type"],
                doc["title"]
            ]);
            assert_eq!(actual, expected, "for {path}");
        }
    }

    #[test]
    fn the_hash_changes_with_the_content_only() {
        let a = document("a.md", "# A\n\nOne.\n");
        let same = document("a.md", "# A\n\nOne.\n");
        let changed = document("a.md", "# A\n\nTwo.\n");
        assert_eq!(a["content_hash"], same["content_hash"]);
        assert_ne!(a["content_hash"], changed["content_hash"]);
    }

    #[test]
    fn the_walk_finds_markdown_and_skips_hidden_and_build_folders() {
        let dir = tempfile::tempdir().expect("tempdir");
        for rel in [
            "README.md",
            "Forge/notes.MD",
            "Forge/data.json",
            "Forge/.trash/old.md",
            ".git/x.md",
            "node_modules/pkg/README.md",
            "Forge/dist/out.md",
            "Forge/Projects/P/plan.markdown",
        ] {
            let path = dir.path().join(rel);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(path, "x").expect("write");
        }
        // Links to a file outside, and to a folder outside, are not followed.
        let outside = tempfile::tempdir().expect("outside");
        fs::write(outside.path().join("secret.md"), "key").expect("write");
        std::os::unix::fs::symlink(outside.path().join("secret.md"), dir.path().join("k.md"))
            .expect("link");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("Forge/out")).expect("link");
        let paths: Vec<String> = markdown_files(dir.path())
            .expect("walk")
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(
            paths,
            [
                "Forge/Projects/P/plan.markdown",
                "Forge/notes.MD",
                "README.md"
            ]
        );
    }
}
