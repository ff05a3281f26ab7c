//! The stdio runner: command-line flags, logging to stderr, serving until
//! stdin closes.

use std::io::Write;
use std::process::ExitCode;

use rmcp::ServiceExt;

use crate::handler::KitServer;
use crate::manifest;
use crate::toolbox::Toolbox;

/// What a server adds to the standard `--help`.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// One paragraph on what the server does.
    pub about: &'static str,
    /// The environment variables it reads, one `NAME  meaning (default)` a line.
    pub environment: &'static str,
}

/// Parse the process arguments and run: `--help`, `--version`, `--manifest`,
/// or serve MCP over stdio.
pub fn run<T: Toolbox>(toolbox: T, options: &RunOptions) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    run_with(toolbox, options, &args)
}

/// [`run`] with explicit arguments (everything after the program name).
pub fn run_with<T: Toolbox>(toolbox: T, options: &RunOptions, args: &[String]) -> ExitCode {
    let identity = toolbox.identity();
    match args.first().map(String::as_str) {
        None => {}
        Some("-h" | "--help") => {
            print!("{}", help_text(identity.name, options));
            return ExitCode::SUCCESS;
        }
        Some("-V" | "--version") => {
            println!("{} {}", identity.name, identity.version);
            return ExitCode::SUCCESS;
        }
        Some("--manifest") => {
            let mut stdout = std::io::stdout().lock();
            return match stdout.write_all(manifest::render(&toolbox.tools()).as_bytes()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            };
        }
        Some(other) => {
            eprintln!("{}: unknown argument {other:?}; try --help", identity.name);
            return ExitCode::from(2);
        }
    }
    init_logging();
    // Not dumpable: a process of the same user (a command forge-bash runs, another server's
    // tool) cannot read this server's /proc/PID/environ (its keys), reopen its stdio (its
    // MCP connection) through /proc/PID/fd, nor attach to it. What it runs is dumpable again
    // after its exec.
    if let Err(error) = nix::sys::prctl::set_dumpable(false) {
        tracing::warn!(%error, "cannot mark the process non-dumpable");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("{}: cannot start the async runtime: {error}", identity.name);
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(toolbox)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{}: {error}", identity.name);
            ExitCode::FAILURE
        }
    }
}

/// Serve MCP over this process's stdin/stdout until the client closes stdin; once
/// initialized, `tools/call` requests are served past rmcp's service loop
/// ([`mcp_wire::served`]).
pub async fn serve<T: Toolbox>(toolbox: T) -> Result<(), rmcp::service::ServerInitializeError> {
    let server = KitServer::new(toolbox);
    let name = server.toolbox().identity().name;
    let count = server.tools().len();
    tracing::info!(server = name, tools = count, "ready on stdio");
    let mut transport = mcp_wire::stdio::<rmcp::RoleServer>();
    let direct = transport.direct_serving();
    let running = match server.clone().serve(transport).await {
        Ok(running) => running,
        // A client that connects and leaves without initializing is not an error.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(error) => return Err(error),
    };
    direct.install(server, running.peer().clone());
    if let Err(error) = running.waiting().await {
        tracing::error!(%error, "server task failed");
    }
    Ok(())
}

fn help_text(name: &str, options: &RunOptions) -> String {
    let mut text = format!(
        "{name}: an MCP server on stdio.\n\n{}\n\nUSAGE:\n    {name}              serve MCP on stdin/stdout (logs go to stderr)\n    {name} --manifest   print the tool list as JSON (what tools/list answers)\n    {name} --version    print the version\n    {name} --help       print this help\n",
        options.about
    );
    if !options.environment.is_empty() {
        text.push_str("\nENVIRONMENT:\n");
        for line in options.environment.lines() {
            text.push_str("    ");
            text.push_str(line);
            text.push('\n');
        }
    }
    text.push_str("    RUST_LOG  log filter for stderr (default: info)\n");
    text
}

/// Logs on stderr only (stdout is the protocol), filtered by `RUST_LOG` (default `info`).
/// [`run`] calls it; a server that logs before serving calls it first (a second call is a
/// no-op).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
