//! `"McpOAuthToken"`: one sealed OAuth record per server, replaced on write, gone with the
//! server.

use pretty_assertions::assert_eq;
use store::{McpServerSpec, StoreError, Transport};

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

backend_tests!(oauth_record_is_replaced_and_deleted_with_its_server);
