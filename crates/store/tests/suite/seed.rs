//! The seed data: five servers, the default bot bound to all, idempotent.

use std::collections::BTreeMap;

use anyhow::Context;
use pretty_assertions::assert_eq;
use store::{BindingSpec, McpServerSpec, SeedConfig, SeedReport};

use super::harness::TestDb;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| (*n).to_owned()).collect()
}

type ServerSummary = (
    String,
    String,
    Vec<String>,
    BTreeMap<String, String>,
    i64,
    bool,
);

const ALL: &[&str] = &[
    "forge-bash",
    "forge-discovery",
    "forge-typesense",
    "forge-filesystem",
    "playwright",
];

async fn seed_writes_the_five_servers_and_the_forge_bot(db: &TestDb) -> anyhow::Result<()> {
    let config = SeedConfig::new("/opt/botcraft/bin");
    let report = db.store.seed(&config).await?;
    assert_eq!(
        report,
        SeedReport {
            servers_created: names(ALL),
            servers_kept: vec![],
            bot_created: true,
            bindings_created: names(ALL),
        }
    );
    let servers = db.store.servers().await?;
    let summary: Vec<ServerSummary> = servers
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.command.clone(),
                s.args.clone(),
                s.env.clone(),
                s.timeout,
                s.always_on,
            )
        })
        .collect();
    let sandboxes: Vec<(String, serde_json::Value)> = servers
        .iter()
        .map(|s| (s.name.clone(), s.sandbox.to_value()))
        .collect();
    let policy = |value: serde_json::Value| -> serde_json::Value {
        let mut full = serde_json::json!(
            {"enabled": true, "readWrite": [], "readOnly": [], "network": "all"});
        for (key, item) in value.as_object().into_iter().flatten() {
            full[key] = item.clone();
        }
        full
    };
    // Each seeded server's sandbox: the file servers and discovery reach no network,
    // forge-typesense only its Typesense; forge-bash writes its log folder too.
    assert_eq!(
        sandboxes,
        vec![
            (
                "forge-bash".to_owned(),
                policy(serde_json::json!({
                    "readWrite": ["${FORGE_BASH_LOG_DIR}"],
                    "readOnly": ["${FORGE_BASH_ENV_FILE}"]
                }))
            ),
            (
                "forge-discovery".to_owned(),
                policy(serde_json::json!({"readOnly": ["${REPO_PATH}"], "network": "none"}))
            ),
            (
                "forge-filesystem".to_owned(),
                policy(serde_json::json!(
                    {"readWrite": ["${WORKSPACE_ROOT}", "${REPO_ROOT}"], "network": "none"}))
            ),
            (
                "forge-typesense".to_owned(),
                policy(serde_json::json!({"network": ["${TYPESENSE_URL}"]}))
            ),
            // Playwright reads the workspace and writes only its output folder; Chromium
            // binds a Unix socket; run through `npx`, every port (its registry).
            (
                "playwright".to_owned(),
                policy(serde_json::json!({
                    "readWrite": ["/workspace/.playwright-mcp"],
                    "readOnly": ["/workspace"],
                    "unixSockets": true
                }))
            ),
        ]
    );
    let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    assert_eq!(
        summary,
        vec![
            (
                "forge-bash".into(),
                "/opt/botcraft/bin/forge-bash".into(),
                vec![],
                env(&[("FORGE_BASH_CWD", "/workspace")]),
                330_000,
                true
            ),
            (
                "forge-discovery".into(),
                "/opt/botcraft/bin/forge-discovery".into(),
                vec![],
                env(&[("REPO_PATH", "/workspace/erik/uvilo-os")]),
                30_000,
                false
            ),
            (
                "forge-filesystem".into(),
                "/opt/botcraft/bin/forge-filesystem".into(),
                vec![],
                env(&[
                    ("REPO_ROOT", "/workspace/erik/uvilo-os"),
                    ("WORKSPACE_ROOT", "/workspace")
                ]),
                30_000,
                true
            ),
            (
                "forge-typesense".into(),
                "/opt/botcraft/bin/forge-typesense".into(),
                vec![],
                env(&[
                    ("TYPESENSE_SEARCH_KEY", "${TYPESENSE_SEARCH_KEY}"),
                    ("TYPESENSE_URL", "${TYPESENSE_URL}")
                ]),
                30_000,
                false
            ),
            (
                "playwright".into(),
                "npx".into(),
                names(&[
                    "--yes",
                    "@playwright/mcp@0.0.83",
                    "--headless",
                    "--isolated",
                    "--no-webmcp",
                    "--no-sandbox",
                    "--executable-path",
                    "/usr/bin/chromium",
                    "--output-dir",
                    "/workspace/.playwright-mcp"
                ]),
                env(&[("PLAYWRIGHT_MCP_PROXY_SERVER", "${BROWSER_EGRESS_PROXY}")]),
                60_000,
                false
            ),
        ]
    );
    let bot = db
        .store
        .bot_by_name("forge")
        .await?
        .ok_or_else(|| anyhow::anyhow!("no forge bot"))?;
    let bound: Vec<(String, BindingSpec)> = db
        .store
        .bound_servers(&bot.id)
        .await?
        .into_iter()
        .map(|b| {
            let spec = BindingSpec {
                enabled: b.binding.enabled,
                tool_filter: b.binding.tool_filter,
                pinned_tools: b.binding.pinned_tools,
                approval: b.binding.approval,
            };
            (b.server.name, spec)
        })
        .collect();
    // The seeded bot asks before forge-bash runs a command, before the trash is emptied and
    // before Playwright runs code the model wrote.
    let mut expected: Vec<(String, BindingSpec)> = ALL
        .iter()
        .map(|n| {
            let approval = match *n {
                "forge-bash" => store::ApprovalPolicy::Writes,
                "forge-filesystem" => store::ApprovalPolicy::Tools(vec!["empty_trash".into()]),
                "playwright" => store::ApprovalPolicy::Tools(names(&[
                    "browser_run_code*",
                    "browser_evaluate*",
                    "browser_file_upload*",
                    "browser_drop*",
                ])),
                _ => store::ApprovalPolicy::Never,
            };
            let spec = BindingSpec {
                approval,
                ..BindingSpec::default()
            };
            ((*n).to_owned(), spec)
        })
        .collect();
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(bound, expected);
    Ok(())
}

async fn seeding_twice_changes_nothing_and_keeps_edits(db: &TestDb) -> anyhow::Result<()> {
    let config = SeedConfig::new("/bin-a");
    db.store.seed(&config).await?;
    let bash = db
        .store
        .server_by_name("forge-bash")
        .await?
        .ok_or_else(|| anyhow::anyhow!("bash"))?;
    let edited = db
        .store
        .update_server(
            &bash.id,
            &McpServerSpec {
                timeout: 5,
                ..bash.spec()
            },
        )
        .await?;
    let before = (db.store.servers().await?, db.store.bots().await?);
    let report = db.store.seed(&SeedConfig::new("/bin-b")).await?;
    assert_eq!(
        report,
        SeedReport {
            servers_created: vec![],
            servers_kept: names(ALL),
            bot_created: false,
            bindings_created: vec![],
        }
    );
    assert_eq!((db.store.servers().await?, db.store.bots().await?), before);
    assert_eq!(db.store.server_by_name("forge-bash").await?, Some(edited));
    Ok(())
}

async fn seed_restores_a_deleted_server_and_its_binding(db: &TestDb) -> anyhow::Result<()> {
    let config = SeedConfig::new("/bin");
    db.store.seed(&config).await?;
    let playwright = db
        .store
        .server_by_name("playwright")
        .await?
        .ok_or_else(|| anyhow::anyhow!("pw"))?;
    db.store.delete_server(&playwright.id).await?;
    let report = db.store.seed(&config).await?;
    assert_eq!(
        (report.servers_created, report.bindings_created),
        (names(&["playwright"]), names(&["playwright"]))
    );
    Ok(())
}

#[test]
fn playwright_command_and_args_come_from_configuration() {
    let playwright = |config: SeedConfig| {
        config
            .servers()
            .into_iter()
            .find(|s| s.name == "playwright")
            .map(|s| (s.command, s.args))
    };
    let mut npx = SeedConfig::new("/bin");
    npx.playwright_extra_args = names(&["--browser", "firefox"]);
    let mut installed = SeedConfig::new("/bin").with_playwright_program("/opt/pw/playwright-mcp");
    installed.playwright_extra_args = store::playwright_extra_args(false);
    let cases = [
        (
            npx,
            (
                "npx",
                vec![
                    "--yes",
                    "@playwright/mcp@0.0.83",
                    "--headless",
                    "--browser",
                    "firefox",
                    "--output-dir",
                    "/workspace/.playwright-mcp",
                ],
            ),
        ),
        (
            installed,
            (
                "/opt/pw/playwright-mcp",
                vec![
                    "--headless",
                    "--isolated",
                    "--no-webmcp",
                    "--executable-path",
                    "/usr/bin/chromium",
                    "--output-dir",
                    "/workspace/.playwright-mcp",
                ],
            ),
        ),
    ];
    for (config, (command, args)) in cases {
        assert_eq!(playwright(config), Some((command.to_owned(), names(&args))));
    }
}

#[test]
fn the_default_model_is_a_provider_and_a_model() {
    let model = SeedConfig::new("/bin").bot_model;
    let (provider, name) = model.split_once(':').unwrap_or_default();
    assert!(
        ["openai", "anthropic"].contains(&provider) && !name.is_empty(),
        "{model}"
    );
}

/// Installed (not run through `npx`, which must reach its registry), the seeded Playwright
/// connects over TCP to its egress proxy alone, and names the proxy to the programs of its
/// process; however `npx` is named, it keeps every port.
#[test]
fn an_installed_playwright_connects_to_its_proxy_alone() {
    let playwright = |config: SeedConfig| {
        let server = config
            .servers()
            .into_iter()
            .find(|server| server.name == "playwright")
            .expect("playwright");
        (server.sandbox.network, server.env.len())
    };
    let installed = SeedConfig::new("/bin").with_playwright_program("/opt/pw/playwright-mcp");
    assert_eq!(
        playwright(installed),
        (store::playwright_network(), store::PLAYWRIGHT_ENV.len())
    );
    assert_eq!(
        playwright(SeedConfig::new("/bin").with_playwright_program("/usr/bin/npx")).0,
        sandbox::NetworkPolicy::All
    );
    assert_eq!(
        playwright(SeedConfig::new("/bin")),
        (sandbox::NetworkPolicy::All, 1)
    );
}

#[test]
fn seed_names_no_outdated_server() {
    let config = SeedConfig::new("/bin");
    let text = format!("{:?}", config.servers());
    assert!(
        !text.contains("uvilo-shell") && !text.contains("forge-spawn"),
        "{text}"
    );
}

/// A seeded store with a second bot: (the forge bot, the other bot, the Playwright server).
async fn seeded_with_another_bot(
    db: &TestDb,
) -> anyhow::Result<(store::Bot, store::Bot, store::McpServer)> {
    db.store.seed(&SeedConfig::new("/bin")).await?;
    let forge = db.store.bot_by_name("forge").await?.context("forge")?;
    let other = db
        .store
        .create_bot(&store::BotSpec::new("other", "openai:gpt-test"))
        .await?;
    let playwright = db
        .store
        .server_by_name("playwright")
        .await?
        .context("playwright")?;
    Ok((forge, other, playwright))
}

/// The approval policy of `bot`'s binding to `server`.
async fn approval_of(
    db: &TestDb,
    bot: &str,
    server: &str,
) -> anyhow::Result<store::ApprovalPolicy> {
    Ok(db
        .store
        .binding(bot, server)
        .await?
        .context("a binding")?
        .approval)
}

/// Run a data migration's SQL as the migrator runs it; its text is one for both backends
/// (kept so).
async fn run_migration(db: &TestDb, sqlite: &str, postgres: &str) -> anyhow::Result<()> {
    assert_eq!(sqlite, postgres);
    run_sql(db, sqlite).await
}

/// A migration written for each dialect: the one of `db`'s backend.
async fn run_dialect_migration(db: &TestDb, sqlite: &str, postgres: &str) -> anyhow::Result<()> {
    let postgres_backend = db.url.starts_with("postgres");
    run_sql(db, if postgres_backend { postgres } else { sqlite }).await
}

async fn run_sql(db: &TestDb, sql: &str) -> anyhow::Result<()> {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&db.url).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&pool)
        .await?;
    pool.close().await;
    Ok(())
}

/// The Playwright migration on a store seeded before it: the `playwright` server's
/// environment gains the egress proxy's variable, and its stored policy (as written then,
/// with no `unixSockets`, or none at all) gains `unixSockets: true` and keeps the rest; a policy that says either way already, a server of that name that
/// runs something else, and every other server, are kept (they read as the new default, no
/// sockets); a policy that is not JSON does not stop the migration.
async fn the_playwright_migration_gives_sockets_and_the_egress_proxy(
    db: &TestDb,
) -> anyhow::Result<()> {
    let (_, _, playwright) = seeded_with_another_bot(db).await?;
    let before = r#"{"enabled":true,"readWrite":["/workspace/.playwright-mcp"],"readOnly":["/workspace"],"network":"all"}"#;
    let bash_before =
        r#"{"enabled":true,"readWrite":["${FORGE_BASH_LOG_DIR}"],"readOnly":[],"network":"all"}"#;
    let migrate = || {
        run_dialect_migration(
            db,
            include_str!("../../migrations/sqlite/0016_playwright_sockets_and_egress.sql"),
            include_str!("../../migrations/postgres/0019_playwright_sockets_and_egress.sql"),
        )
    };
    // `column` of `server` set to `value` (SQL: `NULL`, or a quoted text).
    let set_column = |server: &'static str, column: &'static str, value: String| async move {
        run_sql(
            db,
            &format!(r#"UPDATE "McpServer" SET "{column}" = {value} WHERE "name" = '{server}'"#),
        )
        .await
    };
    let set = |server: &'static str, sandbox: Option<&'static str>| {
        let value = sandbox.map_or_else(|| "NULL".to_owned(), |json| format!("'{json}'"));
        set_column(server, "sandbox", value)
    };
    let set_env = |env: &'static str| set_column("playwright", "env", env.to_owned());
    let server_of =
        |name: &'static str| async move { db.store.server_by_name(name).await?.context(name) };
    let policy_of = |name: &'static str| async move { anyhow::Ok(server_of(name).await?.sandbox) };
    let env_of = |name: &'static str| async move { anyhow::Ok(server_of(name).await?.env) };
    set("playwright", Some(before)).await?;
    set("forge-bash", Some(bash_before)).await?;
    // As seeded before the egress proxy: no environment.
    set_env("NULL").await?;
    migrate().await?;
    assert_eq!(
        env_of("playwright").await?,
        BTreeMap::from([(
            "PLAYWRIGHT_MCP_PROXY_SERVER".to_owned(),
            "${BROWSER_EGRESS_PROXY}".to_owned()
        )]),
        "the seed's proxy variable"
    );
    assert_eq!(
        (
            policy_of("playwright").await?,
            policy_of("forge-bash").await?
        ),
        (
            sandbox::SandboxPolicy {
                unix_sockets: true,
                network: sandbox::NetworkPolicy::All,
                ..playwright.sandbox.clone()
            },
            serde_json::from_str::<sandbox::SandboxPolicy>(bash_before)?,
        )
    );
    // No policy stored (a store older than sandboxes): the default, with sockets.
    set("playwright", None).await?;
    migrate().await?;
    assert_eq!(
        policy_of("playwright").await?,
        sandbox::SandboxPolicy {
            unix_sockets: true,
            ..sandbox::SandboxPolicy::default()
        }
    );
    // An operator's `false` stays, and so does a proxy of their own.
    set("playwright", Some(r#"{"unixSockets":false}"#)).await?;
    set_env(r#"'{"PLAYWRIGHT_MCP_PROXY_SERVER":"http://proxy.corp:3128","K":"v"}'"#).await?;
    migrate().await?;
    assert!(!policy_of("playwright").await?.unix_sockets);
    assert_eq!(
        env_of("playwright").await?,
        BTreeMap::from([
            (
                "PLAYWRIGHT_MCP_PROXY_SERVER".to_owned(),
                "http://proxy.corp:3128".to_owned()
            ),
            ("K".to_owned(), "v".to_owned()),
        ])
    );
    // Text that is not JSON stops nothing (and is left to the store's own error).
    set("playwright", Some("{not json")).await?;
    migrate().await?;
    // A server named `playwright` that runs something else is not given sockets.
    set("playwright", Some(before)).await?;
    run_sql(
        db,
        r#"UPDATE "McpServer" SET "command" = '/opt/other/browser', "args" = '[]' WHERE "name" = 'playwright'"#,
    )
    .await?;
    migrate().await?;
    assert!(!policy_of("playwright").await?.unix_sockets);
    Ok(())
}

/// The next Playwright migration on a store seeded before it (as the one before left it):
/// the `playwright` server that browses through the egress proxy may connect to that
/// proxy's port alone, and its environment names the proxy for `npx` and kin, which makes it
/// the seeded server exactly; a network the operator chose, a proxy of their own, a variable
/// they set, a policy that is not JSON, and every other server, are kept.
async fn the_playwright_migration_confines_its_network_to_the_proxy(
    db: &TestDb,
) -> anyhow::Result<()> {
    seeded_with_another_bot(db).await?;
    // As the seed wrote it for an installed Playwright MCP (scripts/run.sh, the image).
    run_sql(
        db,
        r#"UPDATE "McpServer" SET "command" = '/opt/pw/playwright-mcp', "args" = '["--headless"]' WHERE "name" = 'playwright'"#,
    )
    .await?;
    let installed = SeedConfig::new("/bin")
        .with_playwright_program("/opt/pw/playwright-mcp")
        .servers()
        .into_iter()
        .find(|server| server.name == "playwright")
        .context("playwright")?;
    let seeded_proxy = r#"{"PLAYWRIGHT_MCP_PROXY_SERVER":"${BROWSER_EGRESS_PROXY}"}"#;
    let before = r#"{"enabled":true,"readWrite":["/workspace/.playwright-mcp"],"readOnly":["/workspace"],"network":"all","unixSockets":true}"#;
    let bash_before =
        r#"{"enabled":true,"readWrite":["${FORGE_BASH_LOG_DIR}"],"readOnly":[],"network":"all"}"#;
    let migrate = || {
        run_dialect_migration(
            db,
            include_str!("../../migrations/sqlite/0017_playwright_network_to_proxy.sql"),
            include_str!("../../migrations/postgres/0020_playwright_network_to_proxy.sql"),
        )
    };
    let set_column = |server: &'static str, column: &'static str, value: &'static str| async move {
        run_sql(
            db,
            &format!(r#"UPDATE "McpServer" SET "{column}" = '{value}' WHERE "name" = '{server}'"#),
        )
        .await
    };
    let server_of =
        |name: &'static str| async move { db.store.server_by_name(name).await?.context(name) };
    let stored = |name: &'static str| async move {
        let server = server_of(name).await?;
        anyhow::Ok((server.sandbox, server.env))
    };
    let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    // As the seed and the migration before left it: every port, the proxy for the browser.
    set_column("playwright", "sandbox", before).await?;
    set_column("playwright", "env", seeded_proxy).await?;
    set_column("forge-bash", "sandbox", bash_before).await?;
    migrate().await?;
    assert_eq!(
        (
            stored("playwright").await?,
            server_of("forge-bash").await?.sandbox
        ),
        (
            (installed.sandbox.clone(), installed.env.clone()),
            serde_json::from_str::<sandbox::SandboxPolicy>(bash_before)?,
        ),
        "the seeded Playwright's policy and environment, forge-bash's as it was"
    );
    // No network said (the default: every port); a variable the operator set stays.
    set_column("playwright", "sandbox", r#"{"unixSockets":true}"#).await?;
    set_column(
        "playwright",
        "env",
        r#"{"PLAYWRIGHT_MCP_PROXY_SERVER":"${BROWSER_EGRESS_PROXY}","HTTPS_PROXY":"http://mine:8080"}"#,
    )
    .await?;
    migrate().await?;
    assert_eq!(
        stored("playwright").await?,
        (
            sandbox::SandboxPolicy {
                unix_sockets: true,
                ..sandbox::SandboxPolicy::with_network(store::playwright_network())
            },
            env(&[
                ("HTTPS_PROXY", "http://mine:8080"),
                ("HTTP_PROXY", "${BROWSER_EGRESS_PROXY}"),
                ("PLAYWRIGHT_MCP_PROXY_SERVER", "${BROWSER_EGRESS_PROXY}"),
                ("http_proxy", "${BROWSER_EGRESS_PROXY}"),
                ("https_proxy", "${BROWSER_EGRESS_PROXY}"),
            ])
        )
    );
    // A network the operator chose, or a proxy of their own, is kept with the environment.
    for (policy, variables) in [
        (r#"{"network":[443],"unixSockets":true}"#, seeded_proxy),
        (r#"{"network":"none"}"#, seeded_proxy),
        (
            before,
            r#"{"PLAYWRIGHT_MCP_PROXY_SERVER":"http://proxy.corp:3128"}"#,
        ),
    ] {
        set_column("playwright", "sandbox", policy).await?;
        set_column("playwright", "env", variables).await?;
        migrate().await?;
        assert_eq!(
            stored("playwright").await?,
            (
                serde_json::from_str::<sandbox::SandboxPolicy>(policy)?,
                serde_json::from_str::<BTreeMap<String, String>>(variables)?
            ),
            "{policy} {variables}"
        );
    }
    // Text that is not JSON stops nothing.
    set_column("playwright", "sandbox", "{not json").await?;
    set_column("playwright", "env", seeded_proxy).await?;
    migrate().await?;
    // Run through `npx`, which must reach its registry: kept.
    set_column("playwright", "sandbox", before).await?;
    for npx in ["npx", "/usr/bin/npx"] {
        run_sql(
            db,
            &format!(r#"UPDATE "McpServer" SET "command" = '{npx}', "args" = '["--yes","@playwright/mcp@0.0.83"]' WHERE "name" = 'playwright'"#),
        )
        .await?;
        migrate().await?;
        assert_eq!(
            stored("playwright").await?,
            (
                serde_json::from_str::<sandbox::SandboxPolicy>(before)?,
                serde_json::from_str::<BTreeMap<String, String>>(seeded_proxy)?
            ),
            "{npx}"
        );
    }
    // A server named `playwright` that runs something else is kept.
    set_column("playwright", "sandbox", before).await?;
    run_sql(
        db,
        r#"UPDATE "McpServer" SET "command" = '/opt/other/browser', "args" = '[]' WHERE "name" = 'playwright'"#,
    )
    .await?;
    migrate().await?;
    assert_eq!(
        stored("playwright").await?,
        (
            serde_json::from_str::<sandbox::SandboxPolicy>(before)?,
            serde_json::from_str::<BTreeMap<String, String>>(seeded_proxy)?
        )
    );
    Ok(())
}

/// Migration 12 on a store seeded before it: the forge bot's Playwright binding, still
/// `never`, asks before the code-running tools; any other choice stays as it was.
async fn migration_12_makes_the_seeded_playwright_binding_ask(db: &TestDb) -> anyhow::Result<()> {
    let (forge, other, playwright) = seeded_with_another_bot(db).await?;
    let bash = db
        .store
        .server_by_name("forge-bash")
        .await?
        .context("forge-bash")?;
    let never = BindingSpec::default();
    // As a store seeded before issue 32 has them.
    db.store.bind(&forge.id, &playwright.id, &never).await?;
    db.store.bind(&other.id, &playwright.id, &never).await?;
    let always = BindingSpec {
        approval: store::ApprovalPolicy::Always,
        ..BindingSpec::default()
    };
    db.store.bind(&forge.id, &bash.id, &always).await?;
    run_migration(
        db,
        include_str!("../../migrations/sqlite/0012_seeded_playwright_asks.sql"),
        include_str!("../../migrations/postgres/0012_seeded_playwright_asks.sql"),
    )
    .await?;
    assert_eq!(
        (
            approval_of(db, &forge.id, &playwright.id).await?,
            approval_of(db, &other.id, &playwright.id).await?,
            approval_of(db, &forge.id, &bash.id).await?,
        ),
        (
            store::ApprovalPolicy::Tools(names(&store::PLAYWRIGHT_ASKING_TOOLS[..3])),
            store::ApprovalPolicy::Never,
            store::ApprovalPolicy::Always,
        )
    );
    Ok(())
}

/// The migration after 12 on a store seeded before it (Playwright's arguments without
/// `--no-webmcp`, the forge binding asking for migration 12's globs): the arguments gain
/// `--no-webmcp` after `--isolated` and the binding asks before `browser_drop*` too; a
/// server whose arguments an operator changed, and another bot's binding, are kept.
async fn the_webmcp_migration_moves_a_seeded_playwright_along(db: &TestDb) -> anyhow::Result<()> {
    let (forge, other, playwright) = seeded_with_another_bot(db).await?;
    // As a store seeded before it has them.
    let old_args: Vec<String> = playwright
        .args
        .iter()
        .filter(|arg| *arg != "--no-webmcp")
        .cloned()
        .collect();
    let mut spec = store::McpServerSpec::new("playwright", &playwright.command).args(old_args);
    spec.sandbox = playwright.sandbox.clone();
    spec.timeout = playwright.timeout;
    db.store.update_server(&playwright.id, &spec).await?;
    let edited = db
        .store
        .create_server(
            &store::McpServerSpec::new("browser", "playwright-mcp")
                .args(["--isolated", "--headless"]),
        )
        .await?;
    let old_globs = BindingSpec {
        approval: store::ApprovalPolicy::Tools(names(&store::PLAYWRIGHT_ASKING_TOOLS[..3])),
        ..BindingSpec::default()
    };
    db.store.bind(&forge.id, &playwright.id, &old_globs).await?;
    db.store.bind(&other.id, &playwright.id, &old_globs).await?;
    run_migration(
        db,
        include_str!("../../migrations/sqlite/0015_playwright_webmcp_and_drop.sql"),
        include_str!("../../migrations/postgres/0018_playwright_webmcp_and_drop.sql"),
    )
    .await?;
    let moved = db
        .store
        .server_by_name("playwright")
        .await?
        .context("playwright")?;
    assert_eq!(moved.args, playwright.args, "the seed's arguments again");
    let kept = db.store.server(&edited.id).await?.context("browser")?;
    assert_eq!(kept.args, names(&["--isolated", "--headless"]));
    assert_eq!(
        (
            approval_of(db, &forge.id, &playwright.id).await?,
            approval_of(db, &other.id, &playwright.id).await?,
        ),
        (
            store::ApprovalPolicy::Tools(names(store::PLAYWRIGHT_ASKING_TOOLS)),
            store::ApprovalPolicy::Tools(names(&store::PLAYWRIGHT_ASKING_TOOLS[..3])),
        )
    );
    Ok(())
}

backend_tests!(
    migration_12_makes_the_seeded_playwright_binding_ask,
    the_webmcp_migration_moves_a_seeded_playwright_along,
    the_playwright_migration_gives_sockets_and_the_egress_proxy,
    the_playwright_migration_confines_its_network_to_the_proxy,
    seed_writes_the_five_servers_and_the_forge_bot,
    seeding_twice_changes_nothing_and_keeps_edits,
    seed_restores_a_deleted_server_and_its_binding,
);
