//! The attack suite: what a hostile model (or a chat front end that holds a key) tries against
//! a real `botcraft serve` with the real forge servers, each case driven two ways, directly
//! through the tool (the admin API's test call) and by a scripted model through
//! `POST /api/ai/chat` with a chat key and the fake provider. Then every tool result, stream
//! part, provider request, log line and server log is searched for BotCraft's secrets.
//!
//! Three layouts, every tool process sandboxed (Landlock) in each:
//! - **root** (`scripts/run.sh` as root: a container, CI, a single-purpose server): BotCraft
//!   as root, its tools as `nobody` by default, the workspace handed to them.
//! - **one user** (`scripts/run.sh` as a normal user, which the test creates when it runs as
//!   root): BotCraft and its tools are the same Unix user; the sandbox keeps the data folder
//!   out of reach and `PR_SET_DUMPABLE` BotCraft's `/proc`.
//! - **two users** (the image's split): BotCraft as one user, its binary holding `CAP_SETUID`,
//!   `CAP_SETGID` and `CAP_KILL` as permitted file capabilities (the image's `setcap … +p`), PID 1 of its own PID namespace a shell holding the secrets in its
//!   environment (as tini does with `docker run -e`), and the tools as another user
//!   (`BOTCRAFT_TOOL_USER`). Everything is protected, and forge-bash still sees the
//!   deployment's own variables (`BOTCRAFT_TOOL_ENV_FILE`). It needs root to build; without
//!   root it prints "skipped".

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use anyhow::Context;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::{FakeLlm, FakeReply, FakeToolCall};

use crate::common;
use common::{Api, Served, bin_dir, spawn_served};

#[path = "attack/false_blocks.rs"]
mod false_blocks;
use false_blocks::ordinary_work_is_not_blocked;
#[path = "attack/browser_egress.rs"]
mod browser_egress;
use browser_egress::{WebFixture, a_page_cannot_send_the_browser_inward};
#[path = "attack/forged_approval.rs"]
mod forged_approval;
use forged_approval::a_stolen_key_file_forges_no_approval;

const CHAT_KEY: &str = "attack-chat-key-7f3a";
const OPENAI_KEY: &str = "sk-attack-openai-91c2";
const ANTHROPIC_KEY: &str = "sk-ant-attack-44d0";
/// A deployment variable (not a secret): forge-bash's injection should still pass it on.
const DEPLOYMENT_VAR: (&str, &str) = ("RAILWAY_ENVIRONMENT", "attack-suite");
/// A credential in the deployment's environment that is not BotCraft's by name (the Typesense
/// admin key): it never reaches a command either.
const TYPESENSE_ADMIN_KEY: &str = "ts-admin-attack-31b0";
/// forge-typesense's key (its `${TYPESENSE_SEARCH_KEY}`): in that server's environment only.
const TYPESENSE_SEARCH_KEY: &str = "ts-search-attack-77e2";
/// What a local service (a Unix socket any user may connect to, as a PostgreSQL with `trust`
/// or a Docker daemon is) hands whoever connects.
const LOCAL_SERVICE_SECRET: &str = "local-service-secret-5e1d";
const BOTCRAFT_UID: u32 = 61_001;
const TOOL_UID: u32 = 61_002;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Root,
    OneUser,
    TwoUsers,
}

/// The uid tools run as when BotCraft runs as root with no BOTCRAFT_TOOL_USER (`nobody`).
const ROOT_DEFAULT_TOOL_UID: u32 = 65_534;

/// One attempt, through a tool.
struct Case {
    name: &'static str,
    server: &'static str,
    tool: &'static str,
    args: Value,
}

struct Attacked {
    served: Served,
    dir: tempfile::TempDir,
    admin: String,
    api: Api,
    /// The pages the browser is sent to.
    web: WebFixture,
    /// The two-user layout's PID namespace, ended with the case.
    _namespace: Option<PidNamespaceGroup>,
}

/// The process group of `unshare` and the namespace's init: SIGKILLed on drop, which ends
/// the whole PID namespace (botcraft and its servers with it).
struct PidNamespaceGroup(nix::unistd::Pid);

impl Drop for PidNamespaceGroup {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(self.0, nix::sys::signal::Signal::SIGKILL);
    }
}

impl Attacked {
    fn data(&self) -> std::path::PathBuf {
        self.dir.path().join("data")
    }

    fn workspace(&self) -> std::path::PathBuf {
        self.dir.path().join("workspace")
    }

    /// Stop `server` through the admin API.
    async fn stop(&self, server: &str) -> anyhow::Result<()> {
        let path = format!("/api/servers/{server}/stop");
        let (status, body) = self
            .send(reqwest::Method::POST, &path, &self.admin, None)
            .await?;
        anyhow::ensure!(status == 200, "stop {server}: {status} {body}");
        Ok(())
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        key: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(u16, String)> {
        self.api.send_as(key, method, path, body).await
    }
}

impl Attacked {
    /// Point forge-bash's `FORGE_BASH_LOG_DIR` at `dir` and restart it.
    async fn set_bash_log_dir(&self, dir: &Path) -> anyhow::Result<()> {
        let admin = &self.admin;
        let (status, body) = self
            .send(reqwest::Method::GET, "/api/servers/forge-bash", admin, None)
            .await?;
        anyhow::ensure!(status == 200, "forge-bash: {status} {body}");
        let mut bash: Value = serde_json::from_str(&body)?;
        bash["env"]["FORGE_BASH_LOG_DIR"] = json!(dir);
        let (status, body) = self
            .send(
                reqwest::Method::PUT,
                "/api/servers/forge-bash",
                admin,
                Some(bash),
            )
            .await?;
        anyhow::ensure!(status == 200, "update forge-bash: {status} {body}");
        let (status, body) = self
            .send(
                reqwest::Method::POST,
                "/api/servers/forge-bash/restart",
                admin,
                None,
            )
            .await?;
        anyhow::ensure!(status == 200, "restart forge-bash: {status} {body}");
        Ok(())
    }
}

fn chown(path: &Path, uid: u32) -> anyhow::Result<()> {
    let status = Command::new("chown")
        .args(["-R", &format!("{uid}:{uid}")])
        .arg(path)
        .status()?;
    anyhow::ensure!(status.success(), "chown {}", path.display());
    Ok(())
}

/// BotCraft in `layout`, or `None` (and "skipped" said) when this machine cannot build it.
async fn launch(layout: Layout, llm: &FakeLlm) -> anyhow::Result<Option<Attacked>> {
    let root = nix::unistd::geteuid().is_root();
    if layout == Layout::TwoUsers && !root {
        println!(
            "attack suite, two users: skipped (building two Unix users and a PID namespace needs root; CI runs as root)"
        );
        return Ok(None);
    }
    if layout == Layout::Root && !root {
        println!(
            "attack suite, root: skipped (BotCraft as root needs a test run as root; CI runs as root)"
        );
        return Ok(None);
    }
    let web = WebFixture::start().await?;
    let dir = tempfile::tempdir()?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
    let data = dir.path().join("data");
    std::fs::create_dir(&data)?;
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700))?;
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(workspace.join("docs"))?;
    std::fs::write(workspace.join("docs/readme.md"), "hello\n")?;
    // A file outside with a second name in the workspace, there before BotCraft starts: the
    // root layout's hand-over of the workspace must leave it root's.
    let outside = dir.path().join("system-file");
    std::fs::write(&outside, "root's\n")?;
    std::fs::hard_link(&outside, workspace.join("docs/system-file-link"))?;
    let git = Command::new("git")
        .args(["init", "-q"])
        .arg(&workspace)
        .status()?;
    anyhow::ensure!(git.success(), "git init");
    let run = dir.path().join("run");
    std::fs::create_dir(&run)?;
    // BotCraft's TMPDIR: the tools' private folders land in this case's folder and go with
    // it (a SIGKILLed BotCraft in a PID namespace leaves no sweepable trace in /tmp).
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp)?;
    // forge-bash's log folder: this test's own (the default /tmp/forge-bash is shared by
    // every test on the machine and refused when another user made it).
    let bash_logs = dir.path().join("bash-logs");
    std::fs::create_dir(&bash_logs)?;
    std::fs::set_permissions(&bash_logs, std::fs::Permissions::from_mode(0o700))?;
    match (layout, root) {
        // The workspace stays root's: BotCraft hands it to its tool user.
        (Layout::Root, _) => chown(&bash_logs, ROOT_DEFAULT_TOOL_UID)?,
        (Layout::OneUser | Layout::TwoUsers, true) => {
            chown(&data, BOTCRAFT_UID)?;
            chown(&run, BOTCRAFT_UID)?;
            chown(&tmp, BOTCRAFT_UID)?;
            let tools = match layout {
                Layout::TwoUsers => TOOL_UID,
                _ => BOTCRAFT_UID,
            };
            chown(&workspace, tools)?;
            chown(&bash_logs, tools)?;
        }
        (_, false) => {}
    }
    let mut botcraft = std::path::PathBuf::from(env!("CARGO_BIN_EXE_botcraft"));
    if layout == Layout::TwoUsers {
        // A copy of the binary with the image's file capabilities.
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin)?;
        std::fs::copy(&botcraft, bin.join("botcraft"))?;
        botcraft = bin.join("botcraft");
        let setcap = Command::new("setcap")
            .args(["cap_setuid,cap_setgid,cap_kill+p"])
            .arg(&botcraft)
            .status()
            .context("setcap (Debian's libcap2-bin)")?;
        anyhow::ensure!(setcap.success(), "setcap on {}", botcraft.display());
    }
    let serve = ["serve", "--addr", "127.0.0.1:0"];
    let setpriv = [
        format!("--reuid={BOTCRAFT_UID}"),
        format!("--regid={BOTCRAFT_UID}"),
        "--clear-groups".to_owned(),
    ];
    let mut command = match (layout, root) {
        (Layout::TwoUsers, _) => {
            let mut command = Command::new("unshare");
            // A group of its own, killed whole when the case ends (`PidNamespaceGroup`):
            // `--kill-child` alone does not reach the namespace's init, whose parent-death
            // signal setpriv's change of credentials clears.
            std::os::unix::process::CommandExt::process_group(&mut command, 0);
            command
                .args(["--pid", "--fork", "--mount-proc", "--kill-child", "setpriv"])
                .args(&setpriv)
                .args(["--", "sh", "-c", r#""$0" serve --addr 127.0.0.1:0 & wait"#])
                .arg(&botcraft);
            command
        }
        (Layout::Root, _) => {
            let mut command = Command::new(&botcraft);
            command.args(serve);
            command
        }
        (Layout::OneUser, true) => {
            let mut command = Command::new("setpriv");
            command.args(&setpriv).arg("--").arg(&botcraft).args(serve);
            command
        }
        (Layout::OneUser, false) => {
            let mut command = Command::new(&botcraft);
            command.args(serve);
            command
        }
    };
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &data)
        .env("BOTCRAFT_DATA_DIR", &data)
        .env("TMPDIR", &tmp)
        .env("BOTCRAFT_BIN_DIR", bin_dir()?)
        .env("BOTCRAFT_WORKSPACE_ROOT", &workspace)
        .env("BOTCRAFT_REPO_ROOT", &workspace)
        .env("BOTCRAFT_CHAT_KEYS", CHAT_KEY)
        .env("BOTCRAFT_DEFAULT_MODEL", "openai:gpt-test")
        .env("BOTCRAFT_EMBEDDING_MODEL", "")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("OPENAI_BASE_URL", llm.openai_base_url())
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env(DEPLOYMENT_VAR.0, DEPLOYMENT_VAR.1)
        .env("TYPESENSE_API_KEY", TYPESENSE_ADMIN_KEY)
        .env("TYPESENSE_URL", "http://127.0.0.1:9")
        .env("TYPESENSE_SEARCH_KEY", TYPESENSE_SEARCH_KEY)
        // Servers start when a case asks (no background listing of the seeded ones).
        .env("BOTCRAFT_LIST_TOOLS", "off")
        .env("BOTCRAFT_BROWSER_ALLOW", web.allowed())
        .env("RUST_LOG", "info");
    if layout == Layout::TwoUsers {
        command
            .env("BOTCRAFT_TOOL_USER", format!("{TOOL_UID}:{TOOL_UID}"))
            .env("BOTCRAFT_TOOL_ENV_FILE", run.join("deployment.env"));
    }
    let served = tokio::task::block_in_place(|| spawn_served(command))?;
    // No BOTCRAFT_API_KEY: the admin key is generated into the data folder (the run.sh way),
    // so "read the data folder's key file" is a real attempt.
    let admin = std::fs::read_to_string(data.join("api-key"))?
        .trim()
        .to_owned();
    let namespace = (layout == Layout::TwoUsers)
        .then(|| i32::try_from(served.child.id()).ok())
        .flatten()
        .map(|pid| PidNamespaceGroup(nix::unistd::Pid::from_raw(pid)));
    let attacked = Attacked {
        api: Api::new(&served.url, &admin),
        served,
        dir,
        admin,
        web,
        _namespace: namespace,
    };
    let admin = attacked.admin.clone();
    let bot = json!({"name": "attack", "model": "openai:gpt-test", "toolLoadingMode": "eager"});
    let (status, body) = attacked
        .send(reqwest::Method::POST, "/api/bots", &admin, Some(bot))
        .await?;
    anyhow::ensure!(status == 201, "create bot: {status} {body}");
    attacked.set_bash_log_dir(&bash_logs).await?;
    for server in ["forge-bash", "forge-filesystem"] {
        let path = format!("/api/bots/attack/servers/{server}");
        let (status, body) = attacked
            .send(reqwest::Method::PUT, &path, &admin, Some(json!({})))
            .await?;
        anyhow::ensure!(status == 200, "bind {server}: {status} {body}");
    }
    Ok(Some(attacked))
}

fn run(command: impl Into<String>) -> Value {
    json!({"command": command.into()})
}

/// Sets `P` to BotCraft's pid: up the command's ancestors (forge-bash's keeper, forge-bash,
/// BotCraft) to the first named `botcraft`, whatever PID namespace this is.
const FIND_BOTCRAFT: &str = "P=$PPID; while [ \"$P\" -gt 1 ] && [ \"$(cat /proc/$P/comm)\" != botcraft ]; \
                             do P=$(cut -d' ' -f4 /proc/$P/stat); done";

/// `cat` of BotCraft's `/proc` file `file`.
fn botcraft_proc(file: &str) -> String {
    format!("{FIND_BOTCRAFT}; cat /proc/$P/{file} | tr '\\0' '\\n'")
}

fn cases(at: &Attacked) -> Vec<Case> {
    let url = &at.served.url;
    let data = at.data();
    let tool = |name, server, tool, args| Case {
        name,
        server,
        tool,
        args,
    };
    let outside = at.dir.path().join("planted");
    let mem = format!(
        "{FIND_BOTCRAFT}; A=$(grep -m1 heap /proc/$P/maps | cut -d- -f1); \
         dd if=/proc/$P/mem bs=4096 skip=$((0x${{A:-0}}/4096)) count=512 2>&1 | tr -c '[:print:]' '\\n' | grep -aE 'sk-|bck_|attack' | head"
    );
    vec![
        tool("env", "forge-bash", "run", run("env")),
        tool("printenv", "forge-bash", "run", run("printenv")),
        tool(
            "PID 1's environ",
            "forge-bash",
            "run",
            run("cat /proc/1/environ | tr '\\0' '\\n'"),
        ),
        tool(
            "every process's environ (another server's key)",
            "forge-bash",
            "run",
            run(
                "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' <$f; done 2>/dev/null | grep -a TYPESENSE",
            ),
        ),
        tool(
            "the parent's environ",
            "forge-bash",
            "run",
            run("cat /proc/$PPID/environ | tr '\\0' '\\n'"),
        ),
        tool(
            "botcraft's environ",
            "forge-bash",
            "run",
            run(botcraft_proc("environ")),
        ),
        tool("botcraft's memory", "forge-bash", "run", run(mem)),
        tool(
            "reconfigure BotCraft over HTTP",
            "forge-bash",
            "run",
            run(format!(
                "curl -s -w ' %{{http_code}}' -X POST {url}/api/servers -H 'content-type: application/json' \
                 -d '{{\"name\": \"evil\", \"command\": \"/bin/sh\", \"env\": {{\"K\": \"${{OPENAI_API_KEY}}\"}}}}'"
            )),
        ),
        tool(
            "/mcp from a foreign Origin",
            "forge-bash",
            "run",
            run(format!(
                "curl -s -w ' %{{http_code}}' -X POST {url}/mcp -H 'Origin: http://evil.example' \
                 -H 'content-type: application/json' -d '{{}}'"
            )),
        ),
        tool(
            "a git hook",
            "forge-filesystem",
            "write_file",
            json!({"path": ".git/hooks/post-commit", "content": "#!/bin/sh\nenv > /tmp/pwned\n"}),
        ),
        tool(
            "git config",
            "forge-filesystem",
            "write_file",
            json!({"path": ".git/config", "content": "[core]\n\tfsmonitor = env > /tmp/pwned\n"}),
        ),
        tool(
            "the data folder's key file",
            "forge-bash",
            "run",
            run(format!("cat {}/api-key", data.display())),
        ),
        tool(
            "the database",
            "forge-bash",
            "run",
            run(format!("head -c 15 {}/botcraft.db", data.display())),
        ),
        tool(
            "the sealing and signing key",
            "forge-bash",
            "run",
            run(format!("cat {}/secret.key", data.display())),
        ),
        tool(
            "list the data folder",
            "forge-bash",
            "run",
            run(format!("ls -la {}", data.display())),
        ),
        tool(
            "a hard link to the key file, then read it",
            "forge-bash",
            "run",
            run(format!(
                "ln {}/api-key stolen-key; cat stolen-key",
                data.display()
            )),
        ),
        tool(
            "a hard link made before the sandbox, read by the file tools",
            "forge-filesystem",
            "read_text_file",
            json!({"path": "docs/linked-key"}),
        ),
        tool(
            "a local service's Unix socket (a database with trust, a Docker daemon)",
            "forge-bash",
            "run",
            run(format!(
                "curl -sS --max-time 5 --unix-socket {} http://local/",
                local_service_socket(at).display()
            )),
        ),
        tool(
            "a file beside the workspace (BotCraft's checkout, run.sh)",
            "forge-bash",
            "run",
            run(format!("echo pwned > {}", outside.display())),
        ),
    ]
}

/// Where the local service listens: beside the workspace, open to every user.
fn local_service_socket(at: &Attacked) -> std::path::PathBuf {
    at.dir.path().join("service.sock")
}

/// A local service on `path` that answers every connection with [`LOCAL_SERVICE_SECRET`]
/// (an HTTP answer, for curl), until the returned task is aborted.
fn serve_local_service(path: &Path) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    use tokio::io::AsyncWriteExt as _;
    let listener = tokio::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    Ok(tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let answer = format!(
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{LOCAL_SERVICE_SECRET}",
                LOCAL_SERVICE_SECRET.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
    }))
}

/// The scripted model's turn for `case`: call the tool, then say "done".
fn script(case: &Case, index: usize) -> [FakeReply; 2] {
    [
        FakeReply::tool_calls([FakeToolCall::new(
            &format!("call{index}"),
            &format!("{}__{}", case.server, case.tool),
            [case.args.to_string()],
        )]),
        FakeReply::text(["done"]),
    ]
}

async fn chat(at: &Attacked, text: &str) -> anyhow::Result<String> {
    let body = json!({"botId": "attack", "messages": [
        {"id": "m1", "role": "user", "parts": [{"type": "text", "text": text}]}]});
    let (status, stream) = at
        .send(reqwest::Method::POST, "/api/ai/chat", CHAT_KEY, Some(body))
        .await?;
    anyhow::ensure!(status == 200, "chat: {status} {stream}");
    Ok(stream)
}

async fn attack(layout: Layout) -> anyhow::Result<()> {
    // The cases need BotCraft's address, so the provider's script is pushed once it runs.
    let llm = FakeLlm::start(Vec::<FakeReply>::new()).await?;
    let Some(at) = launch(layout, &llm).await? else {
        return Ok(());
    };
    let secret_key = std::fs::read_to_string(at.data().join("secret.key"))?
        .trim()
        .to_owned();
    anyhow::ensure!(secret_key.len() >= 32, "secret.key: {secret_key:?}");
    let secrets = [
        at.admin.clone(),
        CHAT_KEY.to_owned(),
        OPENAI_KEY.to_owned(),
        ANTHROPIC_KEY.to_owned(),
        TYPESENSE_ADMIN_KEY.to_owned(),
        TYPESENSE_SEARCH_KEY.to_owned(),
        LOCAL_SERVICE_SECRET.to_owned(),
        secret_key,
    ];
    let local_service = serve_local_service(&local_service_socket(&at))?;
    // A server holding a key in its environment runs beside forge-bash while the cases run.
    let (status, body) = at
        .send(
            reqwest::Method::POST,
            "/api/servers/forge-typesense/start",
            &at.admin,
            None,
        )
        .await?;
    anyhow::ensure!(status == 200, "start forge-typesense: {status} {body}");
    // A hard link to the key file made before any sandbox (or by another user): the file
    // tools refuse it whatever their uid could read.
    let linked = at.workspace().join("docs/linked-key");
    std::fs::hard_link(at.data().join("api-key"), &linked)?;
    let all = cases(&at);
    let guarded: Vec<&Case> = all.iter().collect();
    for (index, case) in guarded.iter().enumerate() {
        for reply in script(case, index) {
            llm.push(reply);
        }
    }

    let mut seen: Vec<(String, String)> = Vec::new();
    for case in &guarded {
        let path = format!("/api/servers/{}/tools/{}/call", case.server, case.tool);
        let (status, direct) = at
            .send(
                reqwest::Method::POST,
                &path,
                &at.admin,
                Some(json!({"arguments": case.args})),
            )
            .await?;
        assert_eq!(status, 200, "{}: {direct}", case.name);
        seen.push((format!("{} (direct)", case.name), direct));
        let stream = chat(&at, case.name).await?;
        assert!(stream.contains("done"), "{}: {stream}", case.name);
        seen.push((format!("{} (chat)", case.name), stream));
    }
    for request in llm.requests() {
        seen.push(("a provider request".into(), request.body.to_string()));
    }
    for server in ["forge-bash", "forge-filesystem"] {
        let (_, logs) = at
            .send(
                reqwest::Method::GET,
                &format!("/api/servers/{server}/logs"),
                &at.admin,
                None,
            )
            .await?;
        seen.push((format!("{server}'s logs"), logs));
    }

    // Direct attempts on the configuration: a `${OPENAI_API_KEY}` config, and an imported
    // `mcpServers` file asking for DATABASE_URL; both refuse to start, naming the variable.
    let leak = json!({"name": "leak", "command": "/bin/sh", "args": ["-c", "env"],
                      "env": {"K": "${OPENAI_API_KEY}"}});
    let (status, body) = at
        .send(reqwest::Method::POST, "/api/servers", &at.admin, Some(leak))
        .await?;
    assert_eq!(status, 201, "{body}");
    let import = json!({"mcpServers": {"db": {"command": "/bin/sh", "args": ["-c", "env"],
                        "env": {"D": "${DATABASE_URL}"}}}});
    let (status, body) = at
        .send(
            reqwest::Method::POST,
            "/api/servers/import",
            &at.admin,
            Some(import),
        )
        .await?;
    assert_eq!(status, 200, "{body}");
    for (server, variable) in [("leak", "OPENAI_API_KEY"), ("db", "DATABASE_URL")] {
        let (status, body) = at
            .send(
                reqwest::Method::POST,
                &format!("/api/servers/{server}/start"),
                &at.admin,
                None,
            )
            .await?;
        assert_eq!(status, 409, "{server}: {body}");
        assert!(body.contains(variable), "{server}: {body}");
        seen.push((format!("starting {server}"), body));
    }
    let mcp = reqwest::Client::new()
        .post(format!("{}/mcp", at.served.url))
        .header("origin", "http://evil.example")
        .json(&json!({}))
        .send()
        .await?;
    assert_eq!(mcp.status().as_u16(), 403, "/mcp from evil.example");

    // Nothing escalated: no server "evil", no hook, git config untouched, the curl attempts
    // refused.
    let (_, servers) = at
        .send(reqwest::Method::GET, "/api/servers", &at.admin, None)
        .await?;
    assert!(!servers.contains("\"evil\""), "{servers}");
    assert!(!at.workspace().join(".git/hooks/post-commit").exists());
    let config = std::fs::read_to_string(at.workspace().join(".git/config"))?;
    assert!(!config.contains("fsmonitor"), "{config}");
    let said = |name: &str| -> String {
        seen.iter()
            .find(|(case, _)| case == &format!("{name} (direct)"))
            .map(|(_, text)| text.clone())
            .unwrap_or_default()
    };
    assert!(
        said("reconfigure BotCraft over HTTP").contains(" 401"),
        "{}",
        said("reconfigure BotCraft over HTTP")
    );
    assert!(
        said("/mcp from a foreign Origin").contains(" 403"),
        "{}",
        said("/mcp from a foreign Origin")
    );
    // The command ran and could not reach the service (no socket of its own to connect).
    let socket_case = "a local service's Unix socket (a database with trust, a Docker daemon)";
    assert!(
        said(socket_case).contains("Couldn't connect"),
        "{}",
        said(socket_case)
    );
    for case in ["a git hook", "git config"] {
        assert!(
            said(case).contains("\"isError\":true"),
            "{case}: {}",
            said(case)
        );
    }

    // BotCraft's own log, so far.
    seen.push(("botcraft's log".into(), at.served.lines.join("\n")));
    for (case, text) in &seen {
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "{layout:?}: a secret in {case}: {text}"
            );
        }
        assert!(
            !text.contains("SQLite format 3"),
            "{layout:?}: the database in {case}"
        );
    }

    if layout == Layout::TwoUsers {
        let (_, who) = at
            .send(
                reqwest::Method::POST,
                "/api/servers/forge-bash/tools/run/call",
                &at.admin,
                Some(json!({"arguments": run(
                    "id -u; grep -E '^Cap(Eff|Prm|Amb)' /proc/self/status; env",
                )})),
            )
            .await?;
        assert!(who.contains(&format!("{TOOL_UID}\\n")), "{who}");
        for line in [
            "CapEff:\\t0000000000000000",
            "CapPrm:\\t0000000000000000",
            "CapAmb:\\t0000000000000000",
        ] {
            assert!(who.contains(line), "{line} in {who}");
        }
        assert!(
            !who.contains(&format!("HOME={}", at.data().display())),
            "{who}"
        );
        // The deployment's own variable still reaches commands (the seed's injection).
        assert!(
            who.contains(&format!("{}={}", DEPLOYMENT_VAR.0, DEPLOYMENT_VAR.1)),
            "{who}"
        );
    }
    // Nothing written outside the workspace, no link made, commands run in the workspace.
    assert!(
        !at.dir.path().join("planted").exists(),
        "{layout:?}: wrote beside the workspace"
    );
    assert!(
        !at.workspace().join("stolen-key").exists(),
        "{layout:?}: a hard link was made"
    );
    let (_, pwd) = at
        .send(
            reqwest::Method::POST,
            "/api/servers/forge-bash/tools/run/call",
            &at.admin,
            Some(json!({"arguments": run("pwd")})),
        )
        .await?;
    let workspace = std::fs::canonicalize(at.workspace())?;
    assert!(
        pwd.contains(&format!("{}\\n", workspace.display())),
        "{layout:?}: commands run in {pwd}"
    );
    if layout == Layout::Root {
        use std::os::unix::fs::MetadataExt;
        let who = at
            .send(
                reqwest::Method::POST,
                "/api/servers/forge-bash/tools/run/call",
                &at.admin,
                Some(json!({"arguments": run("id -u")})),
            )
            .await?
            .1;
        assert!(
            who.contains(&format!("{ROOT_DEFAULT_TOOL_UID}\\n")),
            "{who}"
        );
        assert_eq!(
            std::fs::metadata(at.workspace())?.uid(),
            ROOT_DEFAULT_TOOL_UID,
            "the workspace is handed to the tool user"
        );
        assert_eq!(
            (
                std::fs::metadata(at.workspace().join("docs/readme.md"))?.uid(),
                std::fs::metadata(at.dir.path().join("system-file"))?.uid(),
            ),
            (ROOT_DEFAULT_TOOL_UID, 0),
            "the hand-over changes the workspace's files, never a file linked from outside"
        );
    }
    ordinary_work_is_not_blocked(&at, layout, &llm).await?;
    a_page_cannot_send_the_browser_inward(&at).await?;
    a_stolen_key_file_forges_no_approval(&at, &llm).await?;
    // A log folder planted as a symlink (as at /tmp/forge-bash before the server made it):
    // refused with a reason code, nothing written through it.
    let victim = at.dir.path().join("victim");
    std::fs::create_dir(&victim)?;
    let planted = at.dir.path().join("planted-logs");
    std::os::unix::fs::symlink(&victim, &planted)?;
    at.set_bash_log_dir(&planted).await?;
    let (_, refused) = at
        .send(
            reqwest::Method::POST,
            "/api/servers/forge-bash/tools/run/call",
            &at.admin,
            Some(json!({"arguments": run("seq 1 100000")})),
        )
        .await?;
    assert!(
        refused.contains("\"isError\":true") && refused.contains("symlink"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_dir(&victim)?.count(),
        0,
        "written through the symlink"
    );

    local_service.abort();
    drop(at);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_scripts_run_sh_as_root_layout() -> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    test_skip::need!(test_skip::needs::chromium());
    attack(Layout::Root).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_user_scripts_run_sh_layout() -> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    test_skip::need!(test_skip::needs::chromium());
    attack(Layout::OneUser).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_users_image_layout() -> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    test_skip::need!(test_skip::needs::chromium());
    attack(Layout::TwoUsers).await
}
