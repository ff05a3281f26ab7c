//! The toolbox: routes each `tools/call` to its domain module, on a blocking
//! thread, and turns domain errors into the failures the model sees.
//!
//! A root that cannot be used (missing, not a directory, not absolute) fails
//! the call with `not_configured`, naming the variable; everything else that
//! goes wrong is a `tool_error` whose text is the domain error's message.

pub mod specs;

use std::fmt::Display;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use jiff::tz::TimeZone;
use server_kit::{
    CancellationToken, Identity, ReasonCode, Tool, ToolCall, ToolFailure, ToolOutput, Toolbox,
};

use crate::config::{Config, RootSetting};
use crate::edit::{Edit, EditError, edit_file};
use crate::listing::{ListError, list_directory};
use crate::paths::{AllowedRoot, RootError};
use crate::read::{ReadError, ReadSpan, read_text};
use crate::search::{SearchError, SearchQuery, search_files};
use crate::trash::confirm::{Confirmations, fresh_token};
use crate::trash::naming::Kind;
use crate::trash::report::{NOTHING_TO_EMPTY, render_emptied, render_inventory, render_preview};
use crate::trash::{Moved, Trash, TrashError};
use crate::walk::Walk;
use crate::write::write_atomic;
use specs::*;

/// The forge-filesystem server's tools over one configuration.
#[derive(Debug)]
pub struct FilesystemTools {
    config: Arc<Config>,
    confirmations: Arc<Confirmations>,
}

impl FilesystemTools {
    pub fn new(config: Config) -> Self {
        Self {
            config: Arc::new(config),
            confirmations: Arc::new(Confirmations::default()),
        }
    }
}

impl Toolbox for FilesystemTools {
    fn identity(&self) -> Identity {
        Identity {
            name: "forge-filesystem",
            version: env!("CARGO_PKG_VERSION"),
            instructions: Some(format!(
                "File tools (read_text_file, write_file, edit_file, list_directory, search_files) \
                 take paths relative to {} (WORKSPACE_ROOT) or absolute inside it. Trash tools \
                 take paths relative to {} (REPO_ROOT) and move things to its .trash/ folder \
                 instead of deleting them.",
                self.config.workspace_root.path.display(),
                self.config.repo_root.path.display()
            )),
        }
    }

    fn tools(&self) -> Vec<Tool> {
        all_tools()
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolFailure> {
        let config = Arc::clone(&self.config);
        let confirmations = Arc::clone(&self.confirmations);
        let cancel = call.cancel.clone();
        match call.name.as_str() {
            READ_TEXT_FILE => {
                let params: ReadTextFileParams = call.parse()?;
                blocking(move || read_text_file(&config, params, &cancel)).await
            }
            WRITE_FILE => {
                let params: WriteFileParams = call.parse()?;
                blocking(move || write_file(&config, params)).await
            }
            EDIT_FILE => {
                let params: EditFileParams = call.parse()?;
                blocking(move || edit(&config, params, &cancel)).await
            }
            LIST_DIRECTORY => {
                let params: PathParams = call.parse()?;
                blocking(move || list(&config, params, &cancel)).await
            }
            SEARCH_FILES => {
                let params: SearchFilesParams = call.parse()?;
                blocking(move || search(&config, params, &cancel)).await
            }
            TRASH_FILE | TRASH_DIRECTORY => {
                let params: TrashPathParams = call.parse()?;
                let kind = if call.name == TRASH_FILE {
                    Kind::File
                } else {
                    Kind::Dir
                };
                blocking(move || trash(&config, &params.path, kind, &cancel)).await
            }
            UNTRASH_FILE | UNTRASH_DIRECTORY => {
                let params: UntrashPathParams = call.parse()?;
                let kind = if call.name == UNTRASH_FILE {
                    Kind::File
                } else {
                    Kind::Dir
                };
                blocking(move || untrash(&config, &params.path, kind)).await
            }
            LIST_TRASH => blocking(move || list_trash(&config)).await,
            EMPTY_TRASH => {
                let params: EmptyTrashParams = call.parse()?;
                blocking(move || empty_trash(&config, &confirmations, params)).await
            }
            other => Err(ToolFailure::tool(format!("Unknown tool: {other}"))),
        }
    }
}

async fn blocking<F>(work: F) -> Result<ToolOutput, ToolFailure>
where
    F: FnOnce() -> Result<ToolOutput, ToolFailure> + Send + 'static,
{
    tokio::task::spawn_blocking(work).await.map_err(|error| {
        ToolFailure::tool(format!("internal error: the tool task failed: {error}"))
    })?
}

/// A domain error the model can read.
fn failed(error: impl Display) -> ToolFailure {
    ToolFailure::tool(error.to_string())
}

fn open_root(setting: &RootSetting) -> Result<AllowedRoot, ToolFailure> {
    AllowedRoot::open(setting)
        .map_err(|error: RootError| ToolFailure::new(ReasonCode::NotConfigured, error.to_string()))
}

fn read_text_file(
    config: &Config,
    params: ReadTextFileParams,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolFailure> {
    let root = open_root(&config.workspace_root)?;
    let path = root.resolve(&params.path).map_err(failed)?;
    let span = match (params.head, params.tail) {
        (Some(_), Some(_)) => {
            return Err(ToolFailure::tool(
                "Cannot specify both head and tail parameters simultaneously",
            ));
        }
        (Some(head), None) => ReadSpan::Head {
            lines: line_count("head", head)?,
            max_bytes: config.max_read_bytes,
        },
        (None, Some(tail)) => ReadSpan::Tail {
            lines: line_count("tail", tail)?,
            max_bytes: config.max_read_bytes,
        },
        (None, None) => ReadSpan::Whole {
            max_bytes: config.max_read_bytes,
        },
    };
    let text = match read_text(&path, span, cancel) {
        Ok(text) => text,
        Err(ReadError::Cancelled) => return Err(cancelled()),
        Err(error) => return Err(failed(error)),
    };
    Ok(ToolOutput::text_with_content(text))
}

/// `head`/`tail` arrive as JSON numbers; they must be whole and not negative.
fn line_count(name: &str, value: f64) -> Result<u64, ToolFailure> {
    if value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value < u64::MAX as f64 {
        Ok(value as u64)
    } else {
        Err(ToolFailure::tool(format!(
            "{name} must be a whole number of lines, 0 or more; got {value}"
        )))
    }
}

/// Refuse a write the protection rules forbid, by the path as written (a protected name that
/// is a symlink, or under a symlinked folder, is still protected) and by the real path the
/// write reaches (a symlink into `.git` is `.git`).
fn protect_write(
    config: &Config,
    root: &AllowedRoot,
    requested: &str,
    real: &Path,
) -> Result<(), ToolFailure> {
    let written = root.lexical_relative(requested).map_err(failed)?;
    config.protection.check_relative(&written).map_err(failed)?;
    config.protection.check(root.real(), real).map_err(failed)
}

fn write_file(config: &Config, params: WriteFileParams) -> Result<ToolOutput, ToolFailure> {
    let root = open_root(&config.workspace_root)?;
    let path = root.resolve(&params.path).map_err(failed)?;
    protect_write(config, &root, &params.path, &path)?;
    write_atomic(&path, params.content.as_bytes()).map_err(failed)?;
    Ok(ToolOutput::text_with_content(format!(
        "Successfully wrote to {}",
        params.path
    )))
}

fn edit(
    config: &Config,
    params: EditFileParams,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolFailure> {
    let root = open_root(&config.workspace_root)?;
    let path = root.resolve(&params.path).map_err(failed)?;
    protect_write(config, &root, &params.path, &path)?;
    let edits: Vec<Edit> = params
        .edits
        .into_iter()
        .map(|edit| Edit {
            old_text: edit.old_text,
            new_text: edit.new_text,
        })
        .collect();
    let mut walk = Walk::new(config.walk, cancel);
    let diff = edit_file(
        &path,
        &edits,
        params.dry_run,
        config.max_read_bytes,
        &mut walk,
    )
    .map_err(|error| match error {
        EditError::Cancelled => cancelled(),
        error => failed(error),
    })?;
    Ok(ToolOutput::text_with_content(diff))
}

fn list(
    config: &Config,
    params: PathParams,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolFailure> {
    let root = open_root(&config.workspace_root)?;
    let path = root.resolve(&params.path).map_err(failed)?;
    let listing = match list_directory(&path, &mut Walk::new(config.walk, cancel)) {
        Ok(listing) => listing,
        Err(ListError::Cancelled) => return Err(cancelled()),
        Err(error) => return Err(failed(error)),
    };
    Ok(ToolOutput::text_with_content(listing))
}

/// The failure of a call its client cancelled (nobody reads it; said for the log).
fn cancelled() -> ToolFailure {
    ToolFailure::tool("the call was cancelled by its client")
}

fn search(
    config: &Config,
    params: SearchFilesParams,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolFailure> {
    let root = open_root(&config.workspace_root)?;
    let folder = root.resolve(&params.path).map_err(failed)?;
    let query = SearchQuery::compile(&params.pattern, &params.exclude_patterns).map_err(failed)?;
    let results = match search_files(&folder, &root, &query, &mut Walk::new(config.walk, cancel)) {
        Ok(results) => results,
        Err(SearchError::Cancelled) => return Err(cancelled()),
        Err(error) => return Err(failed(error)),
    };
    Ok(ToolOutput::text_with_content(results.render()))
}

fn open_trash(config: &Config) -> Result<Trash, ToolFailure> {
    let trash = Trash::new(open_root(&config.repo_root)?);
    // The operator's protected paths are relative to the workspace root; a repository
    // outside it has none of them.
    Ok(match open_root(&config.workspace_root) {
        Ok(workspace) => trash.protecting(workspace, config.protection.clone()),
        Err(_) => trash,
    })
}

fn trash(
    config: &Config,
    requested: &str,
    kind: Kind,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolFailure> {
    let now = jiff::Timestamp::now()
        .to_zoned_datetime(TimeZone::UTC)
        .datetime();
    let Moved { from, to } = open_trash(config)?
        .trash(requested, kind, now, &mut Walk::new(config.walk, cancel))
        .map_err(|error| match error {
            TrashError::Cancelled => cancelled(),
            error => failed(error),
        })?;
    let restore = match kind {
        Kind::File => UNTRASH_FILE,
        Kind::Dir => UNTRASH_DIRECTORY,
    };
    Ok(ToolOutput::text(format!(
        "Moved {} to the trash as {}. Restore it with {restore}.",
        from.display(),
        to.display()
    )))
}

fn untrash(config: &Config, requested: &str, kind: Kind) -> Result<ToolOutput, ToolFailure> {
    let Moved { from, to } = open_trash(config)?
        .untrash(requested, kind)
        .map_err(failed)?;
    Ok(ToolOutput::text(format!(
        "Restored {} to {}.",
        from.display(),
        to.display()
    )))
}

fn list_trash(config: &Config) -> Result<ToolOutput, ToolFailure> {
    let inventory = open_trash(config)?.inventory().map_err(failed)?;
    Ok(ToolOutput::text(render_inventory(&inventory)))
}

fn empty_trash(
    config: &Config,
    confirmations: &Confirmations,
    params: EmptyTrashParams,
) -> Result<ToolOutput, ToolFailure> {
    let trash = open_trash(config)?;
    let inventory = trash.inventory().map_err(failed)?;
    match params.confirm {
        None => {
            if inventory.entries == 0 {
                return Ok(ToolOutput::text(NOTHING_TO_EMPTY));
            }
            let token = fresh_token().map_err(|error| {
                ToolFailure::tool(format!("Cannot make a confirmation token: {error}"))
            })?;
            confirmations.issue(token.clone(), inventory.fingerprint, Instant::now());
            Ok(ToolOutput::text(render_preview(&inventory, &token)))
        }
        Some(token) => {
            confirmations
                .redeem(token.trim(), inventory.fingerprint, Instant::now())
                .map_err(failed)?;
            trash.delete_everything().map_err(failed)?;
            Ok(ToolOutput::text(render_emptied(&inventory)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn line_counts_must_be_whole() {
        let cases = [
            (0.0, Ok(0)),
            (10.0, Ok(10)),
            (
                1.5,
                Err("head must be a whole number of lines, 0 or more; got 1.5"),
            ),
            (
                -1.0,
                Err("head must be a whole number of lines, 0 or more; got -1"),
            ),
            (
                f64::NAN,
                Err("head must be a whole number of lines, 0 or more; got NaN"),
            ),
        ];
        for (value, expected) in cases {
            let got = line_count("head", value).map_err(|failure| failure.message);
            assert_eq!(got, expected.map_err(str::to_owned), "{value}");
        }
    }

    #[test]
    fn tool_names_are_unique_and_complete() {
        let names: Vec<String> = all_tools()
            .iter()
            .map(|tool| tool.name.to_string())
            .collect();
        assert_eq!(
            names,
            [
                "read_text_file",
                "write_file",
                "edit_file",
                "list_directory",
                "search_files",
                "trash_file",
                "trash_directory",
                "untrash_file",
                "untrash_directory",
                "list_trash",
                "empty_trash"
            ]
        );
    }
}
