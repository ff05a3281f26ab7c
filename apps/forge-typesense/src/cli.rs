//! The `forge-typesense index` command line: its flags and help, its
//! settings from the environment, running the indexer, and exit codes
//! (0 done, 1 failed, 2 usage or configuration error).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::client::{TypesenseClient, UpstreamError};
use crate::config::RawEnv;
use crate::indexer::{IndexError, IndexRequest, index, progress_bar, repo_path};

/// Create the Typesense collection if it is missing and upsert the markdown
/// files of the repository into it, only the changed ones (compared by
/// content hash). Files that are gone are deleted from the index.
#[derive(Debug, Parser)]
#[command(
    name = "forge-typesense index",
    after_help = concat!(
        "ENVIRONMENT:\n",
        "    TYPESENSE_URL         the Typesense server, e.g. http://localhost:8108 (required)\n",
        "    TYPESENSE_API_KEY     an admin key: creates collections, imports, deletes (required)\n",
        "    TYPESENSE_COLLECTION  the collection (default: uvilo)\n",
        "    REPO_PATH             the repository (default: /workspace/erik/uvilo-os)\n",
        "    TYPESENSE_TIMEOUT_MS  deadline of a read request (default: 15000; writes: 300 s)\n",
        "\n",
        "Prints one summary line on stdout; progress and errors go to stderr.\n",
        "Exit status: 0 done, 1 some file or request failed, 2 usage or configuration error."
    )
)]
struct IndexArgs {
    /// The repository to index (default: REPO_PATH, else /workspace/erik/uvilo-os).
    #[arg(long, value_name = "PATH")]
    repo: Option<PathBuf>,
    /// Upsert every file, not only the changed ones.
    #[arg(long)]
    full: bool,
}

/// Run `forge-typesense index ARGS` (ARGS after `index`).
pub fn run_index(args: &[String], env: &RawEnv) -> ExitCode {
    let parsed = match IndexArgs::try_parse_from(
        std::iter::once("forge-typesense index".to_owned()).chain(args.iter().cloned()),
    ) {
        Ok(parsed) => parsed,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let connection = match env.admin_connection() {
        Ok(connection) => connection,
        Err(error) => {
            eprintln!("forge-typesense index: {error}");
            return ExitCode::from(2);
        }
    };
    let client = match TypesenseClient::new(connection) {
        Ok(client) => client,
        Err(error) => {
            eprintln!("forge-typesense index: {error}");
            return ExitCode::from(2);
        }
    };
    let request = IndexRequest {
        repo: repo_path(parsed.repo.as_deref(), env.repo_path()),
        full: parsed.full,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("forge-typesense index: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let progress = progress_bar();
    match runtime.block_on(index(&client, &request, &progress)) {
        Ok(report) => {
            progress.finish_and_clear();
            for (path, reason) in &report.failed {
                eprintln!("forge-typesense index: {path}: {reason}");
            }
            println!("{}", report.summary());
            if report.failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            progress.abandon();
            // The tool's text is the seed's (no URL); the operator is also told where.
            match &error {
                IndexError::Upstream(UpstreamError::Http { url, .. }) => {
                    eprintln!("forge-typesense index: {error} (at {url})");
                }
                _ => eprintln!("forge-typesense index: {error}"),
            }
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{
        ADMIN_KEY_VAR, COLLECTION_VAR, DEFAULT_COLLECTION, DEFAULT_REPO_PATH, REPO_VAR,
        TIMEOUT_VAR, URL_VAR,
    };

    const INDEX_VARIABLES: [&str; 5] = [
        URL_VAR,
        ADMIN_KEY_VAR,
        COLLECTION_VAR,
        REPO_VAR,
        TIMEOUT_VAR,
    ];
    const HELP_DEFAULTS: [&str; 2] = [DEFAULT_COLLECTION, DEFAULT_REPO_PATH];

    #[test]
    fn help_names_every_variable_and_default() {
        let help = IndexArgs::try_parse_from(["forge-typesense index", "--help"])
            .expect_err("help is an early exit")
            .to_string();
        for needle in INDEX_VARIABLES.iter().chain(HELP_DEFAULTS.iter()) {
            assert!(help.contains(needle), "{needle} missing from:\n{help}");
        }
    }
}
