//! forge-filesystem: a stdio MCP server with file tools confined to
//! `WORKSPACE_ROOT` (the reference `@modelcontextprotocol/server-filesystem`'s
//! `read_text_file`, `write_file`, `edit_file`, `list_directory`,
//! `search_files`) and a recoverable trash in `REPO_ROOT/.trash/`
//! (`trash_file`, `trash_directory`, `untrash_file`, `untrash_directory`,
//! `list_trash`, `empty_trash`).
//!
//! This file only wires: it reads the environment into a [`config::Config`]
//! and hands the toolbox to the kit's runner. The server starts with nothing:
//! neither root has to exist for `initialize` and `tools/list`; a call that
//! needs a missing root fails with `not_configured`.

mod config;
mod diff;
mod edit;
mod listing;
mod oserror;
mod paths;
mod read;
mod search;
mod tools;
mod trash;
mod write;

use std::process::ExitCode;

use server_kit::RunOptions;

const ABOUT: &str = "File tools confined to WORKSPACE_ROOT (read_text_file, write_file, edit_file, \
list_directory, search_files) and a recoverable trash in REPO_ROOT/.trash/ (trash_file, \
trash_directory, untrash_file, untrash_directory, list_trash, empty_trash).";

const ENVIRONMENT: &str =
    "WORKSPACE_ROOT  folder the file tools are confined to (default: /workspace)
REPO_ROOT       repository whose .trash/ the trash tools use (default: /workspace/erik/uvilo-os)";

fn main() -> ExitCode {
    let config = config::Config::from_lookup(|name| std::env::var_os(name));
    server_kit::run(
        tools::FilesystemTools::new(config),
        &RunOptions {
            about: ABOUT,
            environment: ENVIRONMENT,
        },
    )
}
