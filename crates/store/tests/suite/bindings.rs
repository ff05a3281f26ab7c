//! `"BotMcpServer"`: bindings, unique per pair, refused for unknown ends, gone with either end.

use pretty_assertions::assert_eq;
use store::{
    ApprovalPolicy, BindingSpec, BotMcpServer, BotSpec, McpServerSpec, StoreError, ValidationError,
};

use super::harness::TestDb;

async fn binding_is_unique_per_pair_and_updates_in_place(db: &TestDb) -> anyhow::Result<()> {
    let bot = db.store.create_bot(&BotSpec::new("b", "m")).await?;
    let server = db
        .store
        .create_server(&McpServerSpec::new("s", "cmd"))
        .await?;
    let first = db
        .store
        .bind(&bot.id, &server.id, &BindingSpec::default())
        .await?;
    assert_eq!(
        first,
        BotMcpServer {
            id: first.id.clone(),
            bot_id: bot.id.clone(),
            mcp_server_id: server.id.clone(),
            enabled: true,
            tool_filter: vec![],
            pinned_tools: vec![],
            approval: ApprovalPolicy::Never,
        }
    );
    let spec = BindingSpec {
        enabled: false,
        tool_filter: vec!["read".into(), "list".into()],
        pinned_tools: vec!["read".into()],
        approval: ApprovalPolicy::Tools(vec!["write_*".into(), "empty_trash".into()]),
    };
    let second = db.store.bind(&bot.id, &server.id, &spec).await?;
    let expected = BotMcpServer {
        id: first.id.clone(),
        bot_id: bot.id.clone(),
        mcp_server_id: server.id.clone(),
        enabled: false,
        tool_filter: vec!["read".into(), "list".into()],
        pinned_tools: vec!["read".into()],
        approval: ApprovalPolicy::Tools(vec!["write_*".into(), "empty_trash".into()]),
    };
    assert_eq!(second, expected);
    assert_eq!(db.store.binding(&bot.id, &server.id).await?, Some(expected));
    Ok(())
}

async fn binding_to_unknown_server_or_bot_is_refused(db: &TestDb) -> anyhow::Result<()> {
    let bot = db.store.create_bot(&BotSpec::new("b", "m")).await?;
    let server = db
        .store
        .create_server(&McpServerSpec::new("s", "cmd"))
        .await?;
    let error = db
        .store
        .bind(&bot.id, "no-such-server", &BindingSpec::default())
        .await;
    assert!(
        matches!(&error, Err(StoreError::UnknownServer(id)) if id == "no-such-server"),
        "{error:?}"
    );
    let error = db
        .store
        .bind("no-such-bot", &server.id, &BindingSpec::default())
        .await;
    assert!(
        matches!(&error, Err(StoreError::UnknownBot(id)) if id == "no-such-bot"),
        "{error:?}"
    );
    let empty_tool = BindingSpec {
        tool_filter: vec![String::new()],
        ..BindingSpec::default()
    };
    let error = db.store.bind(&bot.id, &server.id, &empty_tool).await;
    assert!(
        matches!(
            &error,
            Err(StoreError::Invalid(ValidationError::EmptyToolName {
                list: "toolFilter"
            }))
        ),
        "{error:?}"
    );
    assert_eq!(db.store.bound_servers(&bot.id).await?, vec![]);
    Ok(())
}

async fn bound_servers_come_with_their_server_by_name(db: &TestDb) -> anyhow::Result<()> {
    let bot = db.store.create_bot(&BotSpec::new("b", "m")).await?;
    let other = db.store.create_bot(&BotSpec::new("other", "m")).await?;
    let zeta = db
        .store
        .create_server(&McpServerSpec::new("zeta", "z"))
        .await?;
    let alpha = db
        .store
        .create_server(&McpServerSpec::new("alpha", "a"))
        .await?;
    db.store
        .bind(&bot.id, &zeta.id, &BindingSpec::default())
        .await?;
    db.store
        .bind(
            &bot.id,
            &alpha.id,
            &BindingSpec {
                enabled: false,
                ..BindingSpec::default()
            },
        )
        .await?;
    db.store
        .bind(&other.id, &zeta.id, &BindingSpec::default())
        .await?;
    let bound = db.store.bound_servers(&bot.id).await?;
    let summary: Vec<(String, bool)> = bound
        .iter()
        .map(|b| (b.server.name.clone(), b.binding.enabled))
        .collect();
    assert_eq!(
        summary,
        vec![("alpha".to_owned(), false), ("zeta".to_owned(), true)]
    );
    assert_eq!(bound[1].server, zeta);
    assert!(db.store.unbind(&bot.id, &zeta.id).await?);
    assert!(!db.store.unbind(&bot.id, &zeta.id).await?);
    assert_eq!(db.store.bound_servers(&bot.id).await?.len(), 1);
    Ok(())
}

async fn deleting_a_server_or_bot_deletes_its_bindings(db: &TestDb) -> anyhow::Result<()> {
    let bot = db.store.create_bot(&BotSpec::new("b", "m")).await?;
    let keep = db
        .store
        .create_server(&McpServerSpec::new("keep", "k"))
        .await?;
    let gone = db
        .store
        .create_server(&McpServerSpec::new("gone", "g"))
        .await?;
    db.store
        .bind(&bot.id, &keep.id, &BindingSpec::default())
        .await?;
    db.store
        .bind(&bot.id, &gone.id, &BindingSpec::default())
        .await?;
    db.store.delete_server(&gone.id).await?;
    assert_eq!(db.store.binding(&bot.id, &gone.id).await?, None);
    assert_eq!(db.store.bound_servers(&bot.id).await?.len(), 1);
    db.store.delete_bot(&bot.id).await?;
    assert_eq!(db.store.binding(&bot.id, &keep.id).await?, None);
    Ok(())
}

#[test]
fn binding_allows_only_filtered_tools_when_enabled() {
    let binding = |enabled: bool, filter: &[&str]| BotMcpServer {
        id: "i".into(),
        bot_id: "b".into(),
        mcp_server_id: "s".into(),
        enabled,
        tool_filter: filter.iter().map(|t| (*t).to_owned()).collect(),
        pinned_tools: vec![],
        approval: ApprovalPolicy::Never,
    };
    let cases = [
        (binding(true, &[]), "any", true),
        (binding(true, &["read"]), "read", true),
        (binding(true, &["read"]), "write", false),
        (binding(false, &[]), "any", false),
    ];
    for (binding, tool, expected) in cases {
        assert_eq!(binding.allows(tool), expected, "{binding:?} {tool}");
    }
}

async fn a_binding_with_bad_approval_globs_is_refused(db: &TestDb) -> anyhow::Result<()> {
    let bot = db.store.create_bot(&BotSpec::new("b", "m")).await?;
    let server = db
        .store
        .create_server(&McpServerSpec::new("s", "cmd"))
        .await?;
    for globs in [
        vec![String::new()],
        vec!["a\nb".to_owned()],
        vec!["x".repeat(201)],
    ] {
        let spec = BindingSpec {
            approval: ApprovalPolicy::Tools(globs.clone()),
            ..BindingSpec::default()
        };
        let error = db.store.bind(&bot.id, &server.id, &spec).await;
        assert!(
            matches!(
                &error,
                Err(StoreError::Invalid(ValidationError::BadApproval {
                    field: "approval",
                    ..
                }))
            ),
            "{globs:?}: {error:?}"
        );
    }
    assert_eq!(db.store.binding(&bot.id, &server.id).await?, None);
    Ok(())
}

backend_tests!(
    a_binding_with_bad_approval_globs_is_refused,
    binding_is_unique_per_pair_and_updates_in_place,
    binding_to_unknown_server_or_bot_is_refused,
    bound_servers_come_with_their_server_by_name,
    deleting_a_server_or_bot_deletes_its_bindings,
);
