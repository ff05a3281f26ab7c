//! Seed data: the first-party forge servers, Playwright, and the default bot `forge` bound to
//! all of them. Seeding is idempotent: what exists (by name) is kept as it is, what is missing
//! is created, so a second run changes nothing and an operator's edits survive.

use std::path::PathBuf;

use crate::database::Store;
use crate::error::StoreError;
use crate::model::{BindingSpec, BotSpec, McpServerSpec};
use sandbox::{NetworkEntry, NetworkPolicy, SandboxPolicy};

/// The Playwright MCP release BotCraft is tested with (the pin of `e2e/`, the Dockerfile and
/// `scripts/run.sh`).
pub const PLAYWRIGHT_MCP_PACKAGE: &str = "@playwright/mcp@0.0.83";

/// The default extra arguments for Playwright MCP on a headless Linux host: a fresh profile
/// per session, no tools a page registers (WebMCP: a page would add tools, with
/// descriptions of its own, to every bot bound to Playwright, and to the stored tool list)
/// and the system Chromium. Add `--no-sandbox` where Chromium's sandbox cannot work (as
/// root, in most containers): [`playwright_extra_args`].
pub const DEFAULT_PLAYWRIGHT_EXTRA_ARGS: &[&str] = &[
    "--isolated",
    "--no-webmcp",
    "--executable-path",
    "/usr/bin/chromium",
];

/// The default extra arguments, with `--no-sandbox` when asked for.
pub fn playwright_extra_args(no_sandbox: bool) -> Vec<String> {
    let mut args: Vec<String> = DEFAULT_PLAYWRIGHT_EXTRA_ARGS
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
    if no_sandbox {
        args.insert(2, "--no-sandbox".to_owned());
    }
    args
}

/// The variable Playwright MCP reads its proxy from, and the seeded value: the host's egress
/// proxy (`egress-proxy`, started by `botcraft serve` and `mcp-stdio --local`).
pub const PLAYWRIGHT_PROXY_VARIABLE: &str = "PLAYWRIGHT_MCP_PROXY_SERVER";
pub const PLAYWRIGHT_PROXY_VALUE: &str = "${BROWSER_EGRESS_PROXY}";

/// The seeded Playwright's environment when it is an installed program: the browser's proxy,
/// and the same proxy for the programs of its process that read the usual variables (a
/// browser download, a command its code-running tools start; curl reads `http_proxy` in lower
/// case only). Run through `npx`, it gets the first alone ([`SeedConfig::servers`]).
pub const PLAYWRIGHT_ENV: &[(&str, &str)] = &[
    (PLAYWRIGHT_PROXY_VARIABLE, PLAYWRIGHT_PROXY_VALUE),
    ("HTTPS_PROXY", PLAYWRIGHT_PROXY_VALUE),
    ("HTTP_PROXY", PLAYWRIGHT_PROXY_VALUE),
    ("https_proxy", PLAYWRIGHT_PROXY_VALUE),
    ("http_proxy", PLAYWRIGHT_PROXY_VALUE),
];

/// The seeded Playwright's network when it is an installed program: TCP to the egress proxy's
/// port only (Landlock). Chromium reaches nothing else (it talks to Playwright over a pipe),
/// and neither does code the model has its code-running tools run in Node (`fetch`, a socket,
/// a child process): past the proxy, a connection is refused by the kernel, so no tool of the
/// server can reach this host's services or its networks the proxy refuses. Run through
/// `npx`, which fetches it from a registry (often a mirror on a private network, which the
/// proxy refuses), it keeps every port.
pub fn playwright_network() -> NetworkPolicy {
    NetworkPolicy::Connect(vec![NetworkEntry::Named(format!(
        "${{{PLAYWRIGHT_PROXY_VARIABLE}}}"
    ))])
}

/// Where in the workspace the seeded Playwright writes its screenshots and snapshots.
pub const PLAYWRIGHT_OUTPUT_DIR: &str = ".playwright-mcp";

/// Playwright MCP's tools that run code the model wrote in the browser's Node process or page
/// (`browser_run_code_unsafe` reaches Node's `child_process`), or send a local file to a page
/// (`browser_file_upload`, and `browser_drop`, which drops files onto it): the seeded binding
/// asks before them (globs, so renamed or added variants ask too).
pub const PLAYWRIGHT_ASKING_TOOLS: &[&str] = &[
    "browser_run_code*",
    "browser_evaluate*",
    "browser_file_upload*",
    "browser_drop*",
];

/// The model of the default bot when none is configured (`provider:model`).
pub const DEFAULT_BOT_MODEL: &str = "openai:gpt-4.1-mini";

/// The name of the default bot.
pub const DEFAULT_BOT_NAME: &str = "forge";

/// What the seed data depends on at this site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedConfig {
    /// Where the forge server binaries are (`forge-bash`, …).
    pub bin_dir: PathBuf,
    /// The command that runs Playwright MCP: `npx` (the default) or an installed
    /// `playwright-mcp`.
    pub playwright_command: String,
    /// The command's first arguments: `--yes @playwright/mcp@VERSION` for `npx`, none for an
    /// installed program.
    pub playwright_args: Vec<String>,
    /// Arguments after `--headless`.
    pub playwright_extra_args: Vec<String>,
    /// `WORKSPACE_ROOT` of forge-filesystem.
    pub workspace_root: String,
    /// `REPO_ROOT` of forge-filesystem and `REPO_PATH` of forge-discovery.
    pub repo_root: String,
    /// The model of the default bot.
    pub bot_model: String,
    /// forge-bash's `FORGE_BASH_ENV_FILE`: where BotCraft writes the deployment's variables
    /// (minus its secrets) for tools, when PID 1 is not readable by the tool user.
    pub bash_env_file: Option<String>,
}

impl SeedConfig {
    /// The defaults, with the forge binaries in `bin_dir`.
    pub fn new(bin_dir: impl Into<PathBuf>) -> Self {
        Self {
            bin_dir: bin_dir.into(),
            playwright_command: "npx".to_owned(),
            playwright_args: vec!["--yes".to_owned(), PLAYWRIGHT_MCP_PACKAGE.to_owned()],
            playwright_extra_args: playwright_extra_args(true),
            workspace_root: "/workspace".to_owned(),
            repo_root: "/workspace/erik/uvilo-os".to_owned(),
            bot_model: DEFAULT_BOT_MODEL.to_owned(),
            bash_env_file: None,
        }
    }

    /// Whether Playwright MCP runs through `npx` (fetched from a registry at start), not as an
    /// installed program.
    pub fn playwright_through_npx(&self) -> bool {
        std::path::Path::new(&self.playwright_command)
            .file_name()
            .is_some_and(|name| name == "npx")
    }

    /// Playwright MCP run as an installed program (`playwright-mcp`, a path or a name on
    /// `PATH`) instead of through `npx`.
    pub fn with_playwright_program(mut self, program: impl Into<String>) -> Self {
        self.playwright_command = program.into();
        self.playwright_args.clear();
        self
    }

    /// `--output-dir` in the workspace (screenshots, snapshots), unless the extra arguments
    /// name one: never BotCraft's working folder.
    fn playwright_output_args(&self) -> Vec<String> {
        if self.named_output_dir().is_some() {
            return Vec::new();
        }
        vec!["--output-dir".to_owned(), self.playwright_output_dir()]
    }

    /// The output folder the extra arguments name (`--output-dir DIR` or `--output-dir=DIR`).
    fn named_output_dir(&self) -> Option<String> {
        let args = &self.playwright_extra_args;
        args.iter()
            .enumerate()
            .find_map(|(at, arg)| match arg.strip_prefix("--output-dir") {
                Some("") => args.get(at + 1).cloned(),
                Some(rest) => rest.strip_prefix('=').map(str::to_owned),
                None => None,
            })
    }

    /// Where Playwright writes: the folder the extra arguments name (a relative one is taken
    /// in the workspace, where a sandboxed server starts), else [`PLAYWRIGHT_OUTPUT_DIR`] in
    /// the workspace.
    fn playwright_output_dir(&self) -> String {
        let dir = self
            .named_output_dir()
            .unwrap_or_else(|| PLAYWRIGHT_OUTPUT_DIR.to_owned());
        std::path::Path::new(&self.workspace_root)
            .join(dir)
            .display()
            .to_string()
    }

    fn forge_binary(&self, name: &str) -> String {
        self.bin_dir.join(name).display().to_string()
    }

    /// The seeded servers, in the seed's order.
    pub fn servers(&self) -> Vec<McpServerSpec> {
        let mut bash = McpServerSpec::new("forge-bash", self.forge_binary("forge-bash"))
            .env("FORGE_BASH_CWD", &self.workspace_root)
            .sandbox(SandboxPolicy {
                // The deployment's variables, when BotCraft writes them for tools.
                read_only: vec!["${FORGE_BASH_ENV_FILE}".to_owned()],
                ..SandboxPolicy::default().read_write("${FORGE_BASH_LOG_DIR}")
            });
        if let Some(file) = &self.bash_env_file {
            bash = bash.env("FORGE_BASH_ENV_FILE", file);
        }
        vec![
            bash.timeout(330_000).always_on(true).instructions(
                "Bash execution in the workspace. Commands run in a login-less shell with a \
                     per-call timeout; prefer short, non-interactive commands.",
            ),
            McpServerSpec::new("forge-discovery", self.forge_binary("forge-discovery"))
                .env("REPO_PATH", &self.repo_root)
                .sandbox(SandboxPolicy {
                    read_only: vec!["${REPO_PATH}".to_owned()],
                    ..SandboxPolicy::with_network(NetworkPolicy::None)
                })
                .instructions(
                    "Read-only discovery of the Uvilo OS project and skill data: departments, \
                     projects, skills, and a find across them.",
                ),
            McpServerSpec::new("forge-typesense", self.forge_binary("forge-typesense"))
                .env("TYPESENSE_URL", "${TYPESENSE_URL}")
                .env("TYPESENSE_SEARCH_KEY", "${TYPESENSE_SEARCH_KEY}")
                .sandbox(SandboxPolicy::with_network(NetworkPolicy::Connect(vec![
                    NetworkEntry::Named("${TYPESENSE_URL}".to_owned()),
                ])))
                .instructions(
                    "Semantic search across Uvilo OS repository content, and file summaries.",
                ),
            McpServerSpec::new("forge-filesystem", self.forge_binary("forge-filesystem"))
                .env("WORKSPACE_ROOT", &self.workspace_root)
                .env("REPO_ROOT", &self.repo_root)
                .sandbox(
                    SandboxPolicy::with_network(NetworkPolicy::None)
                        .read_write("${WORKSPACE_ROOT}")
                        .read_write("${REPO_ROOT}"),
                )
                .always_on(true)
                .instructions(
                    "Files in the workspace: read, write, edit with a diff, list, search; deletes \
                     go to a trash that can be listed, restored and emptied.",
                ),
            McpServerSpec::new("playwright", &self.playwright_command)
                // The browser's traffic goes through the host's egress proxy, which lets it
                // reach the public internet only: a page cannot send it to cloud metadata,
                // this host's services or the networks it sits in.
                .envs(if self.playwright_through_npx() {
                    &PLAYWRIGHT_ENV[..1]
                } else {
                    PLAYWRIGHT_ENV
                })
                .args(
                    self.playwright_args
                        .iter()
                        .cloned()
                        .chain(["--headless".to_owned()])
                        .chain(self.playwright_extra_args.iter().cloned())
                        .chain(self.playwright_output_args()),
                )
                // The workspace is read-only to it, bar its output folder: a file name the model
                // gives a screenshot or a saved response body is a path in the workspace, and a
                // page's bytes written to a repository's `.git/config` or a script would run
                // the next time someone uses them.
                // Chromium binds a Unix socket (its profile's `SingletonSocket`) and fails
                // without one; only the tools that run the model's code (which ask) could use
                // the permission for anything else. TCP goes to the egress proxy alone, unless
                // `npx` must reach its registry.
                .sandbox(SandboxPolicy {
                    read_only: vec![self.workspace_root.clone()],
                    unix_sockets: true,
                    ..SandboxPolicy::with_network(if self.playwright_through_npx() {
                        NetworkPolicy::All
                    } else {
                        playwright_network()
                    })
                    .read_write(self.playwright_output_dir())
                })
                .timeout(60_000)
                .instructions(
                    "Headless Chromium browser. Use browser_navigate for URLs, browser_snapshot to \
                     read the page, then click and type by element reference.",
                ),
        ]
    }

    /// The default bot.
    pub fn bot(&self) -> BotSpec {
        let mut bot = BotSpec::new(DEFAULT_BOT_NAME, &self.bot_model);
        bot.system_prompt = "You are Forge, an assistant that works in the Uvilo workspace \
                             through its tools."
            .to_owned();
        bot
    }
}

/// What a seeding run did, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeedReport {
    pub servers_created: Vec<String>,
    pub servers_kept: Vec<String>,
    pub bot_created: bool,
    /// Servers newly bound to the default bot.
    pub bindings_created: Vec<String>,
}

impl Store {
    /// Create whatever of the seed data is missing; keep what exists.
    pub async fn seed(&self, config: &SeedConfig) -> Result<SeedReport, StoreError> {
        let mut report = SeedReport::default();
        let mut server_ids = Vec::new();
        for spec in config.servers() {
            let server = match self.server_by_name(&spec.name).await? {
                Some(existing) => {
                    report.servers_kept.push(spec.name.clone());
                    existing
                }
                None => {
                    let created = self.create_server(&spec).await?;
                    report.servers_created.push(spec.name.clone());
                    created
                }
            };
            server_ids.push((server.id, server.name));
        }
        let bot_spec = config.bot();
        let bot = match self.bot_by_name(&bot_spec.name).await? {
            Some(existing) => existing,
            None => {
                report.bot_created = true;
                self.create_bot(&bot_spec).await?
            }
        };
        for (server_id, server_name) in server_ids {
            if self.binding(&bot.id, &server_id).await?.is_none() {
                let spec = BindingSpec {
                    approval: seeded_approval(&server_name),
                    ..BindingSpec::default()
                };
                self.bind(&bot.id, &server_id, &spec).await?;
                report.bindings_created.push(server_name);
            }
        }
        Ok(report)
    }
}

/// What the seeded bot asks before: every command of forge-bash that is not read-only (all
/// of them), emptying the trash, and Playwright's code-running tools; nothing else.
fn seeded_approval(server: &str) -> crate::ApprovalPolicy {
    match server {
        "forge-bash" => crate::ApprovalPolicy::Writes,
        "forge-filesystem" => crate::ApprovalPolicy::Tools(vec!["empty_trash".to_owned()]),
        "playwright" => crate::ApprovalPolicy::Tools(
            PLAYWRIGHT_ASKING_TOOLS
                .iter()
                .map(|glob| (*glob).to_owned())
                .collect(),
        ),
        _ => crate::ApprovalPolicy::Never,
    }
}
