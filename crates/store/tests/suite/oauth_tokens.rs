//! `"McpOAuthToken"`: one sealed OAuth record per server, replaced on write, gone with the
//! server. `"McpOAuthBotToken"`: a bot's own record per server, gone with either.

use pretty_assertions::assert_eq;
use store::{BotSpec, McpServerSpec, StoreError, Transport};

use super::harness::TestDb;

async fn oauth_record_is_replaced_and_deleted_with_its_server(db: &TestDb) -> anyhow::Result<()> {
    let server = db
        .store
        .create_server(&McpServerSpec::remote(
            "hosted",
            Transport::StreamableHttp,
            "https://mcp.example.com/mcp",
        ))
        .await?;
    assert_eq!(db.store.oauth_record(&server.id).await?, None);
    db.store.put_oauth_record(&server.id, "v1.first").await?;
    db.store.put_oauth_record(&server.id, "v1.second").await?;
    assert_eq!(
        db.store.oauth_record(&server.id).await?,
        Some("v1.second".to_owned())
    );
    db.store.delete_oauth_record(&server.id).await?;
    assert_eq!(db.store.oauth_record(&server.id).await?, None);
    db.store.put_oauth_record(&server.id, "v1.third").await?;
    db.store.delete_server(&server.id).await?;
    assert_eq!(db.store.oauth_record(&server.id).await?, None);
    let error = db.store.put_oauth_record("ghost", "v1.x").await;
    assert!(
        matches!(&error, Err(StoreError::UnknownServer(id)) if id == "ghost"),
        "{error:?}"
    );
    Ok(())
}

async fn a_bots_own_record_is_kept_apart_and_deleted_with_the_bot_or_the_server(
    db: &TestDb,
) -> anyhow::Result<()> {
    let remote = |name: &str| {
        McpServerSpec::remote(
            name,
            Transport::StreamableHttp,
            "https://mcp.example.com/mcp",
        )
    };
    let hosted = db.store.create_server(&remote("hosted")).await?;
    let other = db.store.create_server(&remote("other")).await?;
    let alice = db.store.create_bot(&BotSpec::new("alice", "m")).await?;
    let bob = db.store.create_bot(&BotSpec::new("bob", "m")).await?;

    db.store.put_oauth_record(&hosted.id, "v1.server").await?;
    db.store
        .put_bot_oauth_record(&hosted.id, &alice.id, "v1.alice-1")
        .await?;
    db.store
        .put_bot_oauth_record(&hosted.id, &alice.id, "v1.alice-2")
        .await?;
    db.store
        .put_bot_oauth_record(&hosted.id, &bob.id, "v1.bob")
        .await?;
    db.store
        .put_bot_oauth_record(&other.id, &bob.id, "v1.bob-other")
        .await?;
    assert_eq!(
        (
            db.store.oauth_record(&hosted.id).await?,
            db.store.bot_oauth_record(&hosted.id, &alice.id).await?,
            db.store.bot_oauth_record(&other.id, &alice.id).await?,
        ),
        (
            Some("v1.server".to_owned()),
            Some("v1.alice-2".to_owned()),
            None
        )
    );
    let mut both = vec![alice.id.clone(), bob.id.clone()];
    both.sort();
    assert_eq!(db.store.bot_oauth_overrides(&hosted.id).await?, both);

    db.store
        .delete_bot_oauth_record(&hosted.id, &alice.id)
        .await?;
    assert_eq!(
        db.store.bot_oauth_overrides(&hosted.id).await?,
        vec![bob.id.clone()]
    );
    assert_eq!(
        db.store.oauth_record(&hosted.id).await?,
        Some("v1.server".to_owned()),
        "the server's record is not the bot's"
    );
    db.store.delete_bot(&bob.id).await?;
    assert_eq!(
        db.store.bot_oauth_overrides(&hosted.id).await?,
        Vec::<String>::new()
    );
    assert_eq!(
        db.store.bot_oauth_overrides(&other.id).await?,
        Vec::<String>::new()
    );

    db.store
        .put_bot_oauth_record(&hosted.id, &alice.id, "v1.alice-3")
        .await?;
    db.store.delete_server(&hosted.id).await?;
    assert_eq!(
        db.store.bot_oauth_record(&hosted.id, &alice.id).await?,
        None
    );

    let no_server = db
        .store
        .put_bot_oauth_record("ghost", &alice.id, "v1.x")
        .await;
    assert!(
        matches!(&no_server, Err(StoreError::UnknownServer(id)) if id == "ghost"),
        "{no_server:?}"
    );
    let no_bot = db
        .store
        .put_bot_oauth_record(&other.id, "ghost-bot", "v1.x")
        .await;
    assert!(
        matches!(&no_bot, Err(StoreError::UnknownBot(id)) if id == "ghost-bot"),
        "{no_bot:?}"
    );
    Ok(())
}

backend_tests!(
    oauth_record_is_replaced_and_deleted_with_its_server,
    a_bots_own_record_is_kept_apart_and_deleted_with_the_bot_or_the_server
);
