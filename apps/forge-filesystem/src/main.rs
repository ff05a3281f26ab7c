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

mod answer;
mod config;
mod diff;
mod edit;
mod listing;
mod oserror;
mod paths;
mod protect;
mod read;
mod search;
mod tools;
mod trash;
mod walk;
mod write;

use std::process::ExitCode;

use server_kit::RunOptions;

const ABOUT: &str = "File tools confined to WORKSPACE_ROOT (read_text_file, write_file, edit_file, \
list_directory, search_files) and a recoverable trash in REPO_ROOT/.trash/ (trash_file, \
trash_directory, untrash_file, untrash_directory, list_trash, empty_trash).";

const ENVIRONMENT: &str =
    "WORKSPACE_ROOT  folder the file tools are confined to (default: /workspace)
REPO_ROOT       repository whose .trash/ the trash tools use (default: /workspace/erik/uvilo-os)
FORGE_FS_PROTECTED  more paths (comma-separated, relative to WORKSPACE_ROOT) that write_file and
                edit_file refuse, besides .git and .trash at any depth
FORGE_FS_MAX_READ_BYTES  bytes one read returns, and one answer holds (default: 4194304)
FORGE_FS_MAX_ENTRIES  lines of a listing, matches of a search (default: 10000)
FORGE_FS_MAX_WALK_ENTRIES  folder entries one listing or search reads (default: 250000)
FORGE_FS_MAX_SECONDS  how long one listing or search walks (default: 20)";

/// Buffers of 1 MiB and more (a file being edited, read or written) are mapped on their own
/// and unmapped when freed, instead of staying in glibc's per-thread arenas: without this
/// the peak memory over many large edits grows with the number of worker threads that ran
/// one (docs/benchmarks.md, forge-filesystem).
const OWN_MAPPING_BYTES: usize = 1 << 20;

fn main() -> ExitCode {
    allocator::large_buffers_return_to_the_system(OWN_MAPPING_BYTES);
    let config = config::Config::from_settings(&server_kit::Settings::from_process());
    server_kit::run(
        tools::FilesystemTools::new(config),
        &RunOptions {
            about: ABOUT,
            environment: ENVIRONMENT,
        },
    )
}
