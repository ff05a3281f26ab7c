//! forge-discovery: an MCP server on stdio that browses the organisation's
//! repository (departments, projects, phases, project files, skills, and a
//! fuzzy `find` across them).
//!
//! This file is wiring only: it reads `REPO_PATH` once into a typed value and
//! hands the toolbox to the kit's runner. The repository layout lives in
//! `layout` (project files in `files`), markdown and frontmatter in `markdown`
//! (cached per file in `facts`), ranking in `fuzzy`, the
//! output formats in `render`, and the tools in `server`.

mod facts;
mod files;
mod fuzzy;
mod layout;
mod markdown;
mod render;
mod server;

use std::process::ExitCode;

use server_kit::RunOptions;

/// Where the repository is when `REPO_PATH` is unset or empty.
const DEFAULT_REPO_PATH: &str = "/workspace/erik/uvilo-os";

fn main() -> ExitCode {
    let repo_path = server_kit::Settings::from_process()
        .path_or("REPO_PATH", DEFAULT_REPO_PATH)
        .path;
    let options = RunOptions {
        about: "Browses the repository at REPO_PATH: departments are top-level folders with a \
                README.md, projects live in {Department}/Projects/{Project}/, skills in \
                {Department}/Skills/{Skill}/SKILL.md. The path is looked at on every call, so a \
                repository that appears later is picked up without a restart.",
        environment: "REPO_PATH  the repository to browse (default: /workspace/erik/uvilo-os)",
    };
    server_kit::run(server::Discovery::new(repo_path), &options)
}
