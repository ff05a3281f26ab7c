//! The tools as `tools/list` declares them, and their parameter structs.
//!
//! The five file tools keep the reference server's names, titles,
//! descriptions, input fields, annotations and output schema
//! (`{content: string}`), so a model or client written against
//! `@modelcontextprotocol/server-filesystem` sees the same tools. The six
//! trash tools carry the names and inputs of seed 000 §5.4.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use server_kit::{JsonObject, Tool, ToolAnnotations, empty_schema, tool_spec};

pub const READ_TEXT_FILE: &str = "read_text_file";
pub const WRITE_FILE: &str = "write_file";
pub const EDIT_FILE: &str = "edit_file";
pub const LIST_DIRECTORY: &str = "list_directory";
pub const SEARCH_FILES: &str = "search_files";
pub const TRASH_FILE: &str = "trash_file";
pub const TRASH_DIRECTORY: &str = "trash_directory";
pub const UNTRASH_FILE: &str = "untrash_file";
pub const UNTRASH_DIRECTORY: &str = "untrash_directory";
pub const LIST_TRASH: &str = "list_trash";
pub const EMPTY_TRASH: &str = "empty_trash";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadTextFileParams {
    pub path: String,
    /// If provided, returns only the last N lines of the file
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "plain_number")]
    pub tail: Option<f64>,
    /// If provided, returns only the first N lines of the file
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "plain_number")]
    pub head: Option<f64>,
}

/// A JSON number, as the reference declares `head` and `tail` (no `format`).
fn plain_number(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "number"})
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileParams {
    pub path: String,
    pub content: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(inline)]
pub struct EditOperation {
    /// Text to search for - must match exactly
    #[serde(rename = "oldText")]
    pub old_text: String,
    /// Text to replace with
    #[serde(rename = "newText")]
    pub new_text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFileParams {
    pub path: String,
    pub edits: Vec<EditOperation>,
    /// Preview changes using git-style diff format
    #[serde(default, rename = "dryRun")]
    pub dry_run: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PathParams {
    pub path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchFilesParams {
    pub path: String,
    pub pattern: String,
    #[serde(default, rename = "excludePatterns")]
    pub exclude_patterns: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TrashPathParams {
    /// Path relative to REPO_ROOT (like `Architecture/Old_Doc.md`), or absolute inside it
    pub path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct UntrashPathParams {
    /// The trashed path as list_trash shows it (like `.trash/Architecture/Old_Doc__2026-03-14T18-30-00.md`); a path relative to the trash folder or absolute also works
    pub path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EmptyTrashParams {
    /// The token from a previous empty_trash call; leave out to see what would be deleted and get a token
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub confirm: Option<String>,
}

/// Every tool, in `tools/list` order.
pub fn all_tools() -> Vec<Tool> {
    vec![
        file_tool(tool_spec::<ReadTextFileParams>(
            READ_TEXT_FILE,
            "Read the complete contents of a file from the file system as text. \
             Handles various text encodings and provides detailed error messages \
             if the file cannot be read. Use this tool when you need to examine \
             the contents of a single file. Use the 'head' parameter to read only \
             the first N lines of a file, or the 'tail' parameter to read only \
             the last N lines of a file. Operates on the file as text regardless of extension. \
             Only works within allowed directories.",
        ))
        .with_title("Read Text File")
        .annotate(reading()),
        file_tool(tool_spec::<WriteFileParams>(
            WRITE_FILE,
            "Create a new file or completely overwrite an existing file with new content. \
             Use with caution as it will overwrite existing files without warning. \
             Handles text content with proper encoding. Only works within allowed directories.",
        ))
        .with_title("Write File")
        .annotate(
            ToolAnnotations::new()
                .read_only(false)
                .idempotent(true)
                .destructive(true)
                .open_world(false),
        ),
        file_tool(tool_spec::<EditFileParams>(
            EDIT_FILE,
            "Make line-based edits to a text file. Each edit replaces exact line sequences \
             with new content. Returns a git-style diff showing the changes made. \
             Only works within allowed directories.",
        ))
        .with_title("Edit File")
        .annotate(
            ToolAnnotations::new()
                .read_only(false)
                .idempotent(false)
                .destructive(true)
                .open_world(false),
        ),
        file_tool(tool_spec::<PathParams>(
            LIST_DIRECTORY,
            "Get a detailed listing of all files and directories in a specified path. \
             Results clearly distinguish between files and directories with [FILE] and [DIR] \
             prefixes. This tool is essential for understanding directory structure and \
             finding specific files within a directory. Only works within allowed directories.",
        ))
        .with_title("List Directory")
        .annotate(reading()),
        file_tool(tool_spec::<SearchFilesParams>(
            SEARCH_FILES,
            "Recursively search for files and directories matching a pattern. \
             The patterns should be glob-style patterns that match paths relative to the working directory. \
             Use pattern like '*.ext' to match files in current directory, and '**/*.ext' to match files in all subdirectories. \
             Returns full paths to all matching items. Great for finding files when you don't know their exact location. \
             Only searches within allowed directories.",
        ))
        .with_title("Search Files")
        .annotate(reading()),
        tool_spec::<TrashPathParams>(
            TRASH_FILE,
            "Move a file of the repository to its .trash/ folder instead of deleting it. \
             The file keeps its folder structure inside .trash/ and gets a UTC timestamp \
             suffix before its extension (Architecture/Old_Doc.md becomes \
             .trash/Architecture/Old_Doc__2026-03-14T18-30-00.md). Nothing is ever overwritten. \
             Restore it with untrash_file. Protected paths (.git, .trash, .internal/node_modules, \
             .internal/dist, .internal/.astro) are refused. Use trash_directory for a directory.",
        )
        .with_title("Trash File")
        .annotate(moving()),
        tool_spec::<TrashPathParams>(
            TRASH_DIRECTORY,
            "Move a directory of the repository, with everything in it, to its .trash/ folder \
             instead of deleting it. It keeps its place in the folder structure inside .trash/ \
             and gets a UTC timestamp suffix (drafts becomes .trash/drafts__2026-03-14T18-30-00). \
             Nothing is ever overwritten. Restore it with untrash_directory. Protected paths \
             (.git, .trash, .internal/node_modules, .internal/dist, .internal/.astro) are refused. \
             Use trash_file for a file.",
        )
        .with_title("Trash Directory")
        .annotate(moving()),
        tool_spec::<UntrashPathParams>(
            UNTRASH_FILE,
            "Restore a trashed file to its original path (the trashed path without its timestamp \
             suffix), creating missing parent folders. Refuses when something already exists at \
             the original path; nothing is moved then. Take the trashed path from list_trash.",
        )
        .with_title("Untrash File")
        .annotate(moving()),
        tool_spec::<UntrashPathParams>(
            UNTRASH_DIRECTORY,
            "Restore a trashed directory, with everything in it, to its original path (the \
             trashed path without its timestamp suffix), creating missing parent folders. \
             Refuses when something already exists at the original path; nothing is moved then. \
             Take the trashed path from list_trash.",
        )
        .with_title("Untrash Directory")
        .annotate(moving()),
        Tool::new(
            LIST_TRASH,
            "List the items in the repository's .trash/ folder: for each, its kind (file or dir), \
             original path, trashed path (what untrash_file and untrash_directory take), when it \
             was trashed (UTC) and its size in bytes (a directory's total).",
            empty_schema(),
        )
        .with_title("List Trash")
        .annotate(reading()),
        tool_spec::<EmptyTrashParams>(
            EMPTY_TRASH,
            "Permanently delete everything in the repository's .trash/ folder. IRREVERSIBLE. \
             Works in two steps: called without confirm, it deletes nothing and answers with \
             what would be deleted (items, bytes) and a one-time confirmation token; called \
             again with confirm set to that token within 5 minutes, and only if the trash has \
             not changed in between, it deletes.",
        )
        .with_title("Empty Trash")
        .annotate(
            ToolAnnotations::new()
                .read_only(false)
                .idempotent(false)
                .destructive(true)
                .open_world(false),
        ),
    ]
}

/// A file tool answers `{content: text}` as structured content too.
fn file_tool(tool: Tool) -> Tool {
    tool.with_raw_output_schema(content_schema())
}

fn content_schema() -> Arc<JsonObject> {
    let schema = json!({
        "type": "object",
        "properties": {"content": {"type": "string"}},
        "required": ["content"],
        "additionalProperties": false
    });
    match schema {
        serde_json::Value::Object(object) => Arc::new(object),
        _ => Arc::new(JsonObject::new()),
    }
}

fn reading() -> ToolAnnotations {
    ToolAnnotations::new().read_only(true).open_world(false)
}

/// Trash moves are reversible: not destructive.
fn moving() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(false)
        .idempotent(false)
        .destructive(false)
        .open_world(false)
}
