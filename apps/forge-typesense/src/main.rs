//! forge-typesense: an MCP server on stdio that searches the organisation's
//! knowledge base in Typesense (`search_knowledge`, `get_file_summary`), and
//! the `forge-typesense index` command that fills it from the repository.
//!
//! This file is wiring only: it reads the environment once into typed
//! settings, sends `index` to the indexer's command line and everything else
//! to the kit's runner. Settings live in `config`, HTTP in `client`, filters
//! in `filters`, the tools in `search` and `server`, indexing in `document`,
//! `markdown`, `indexer` and `cli`.

mod cli;
mod client;
mod config;
mod document;
mod filters;
mod indexer;
mod markdown;
mod search;
mod server;

use std::process::ExitCode;

use server_kit::RunOptions;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let env = config::RawEnv::from_settings(&server_kit::Settings::from_process());
    if args.first().map(String::as_str) == Some("index") {
        return cli::run_index(&args[1..], &env);
    }
    let client = env
        .search_connection()
        .map_err(|error| server::not_configured(error.to_string()))
        .and_then(|connection| {
            client::TypesenseClient::new(connection)
                .map_err(|error| server::not_configured(error.to_string()))
        });
    if let Err(failure) = &client {
        eprintln!(
            "forge-typesense: tools/call is unconfigured ({}); initialize and tools/list work regardless",
            failure.message
        );
    }
    let options = RunOptions {
        about: "Searches the knowledge base in Typesense (POST {TYPESENSE_URL}/multi_search). \
                Subcommand: `forge-typesense index [--repo PATH] [--full]` creates the collection \
                if missing and upserts the repository's changed markdown files (needs \
                TYPESENSE_API_KEY, an admin key); see `forge-typesense index --help`.",
        environment: "TYPESENSE_URL         the Typesense server, e.g. http://localhost:8108 (required for calls)\n\
                      TYPESENSE_SEARCH_KEY  a search key (required for calls; never logged)\n\
                      TYPESENSE_COLLECTION  the collection (default: uvilo)\n\
                      TYPESENSE_TIMEOUT_MS  request deadline in ms (default: 15000)",
    };
    server_kit::run_with(server::KnowledgeSearch::new(client), &options, &args)
}
