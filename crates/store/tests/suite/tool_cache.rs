//! `"McpToolCache"`: one captured tool list per server, with a content hash.

use pretty_assertions::{assert_eq, assert_ne};
use serde_json::json;
use store::{McpServerSpec, StoreError, ToolCache, tools_hash};

use super::harness::{START_MS, TestDb};

async fn tool_cache_is_replaced_per_server(db: &TestDb) -> anyhow::Result<()> {
    let server = db
        .store
        .create_server(&McpServerSpec::new("s", "cmd"))
        .await?;
    assert_eq!(db.store.tool_cache(&server.id).await?, None);
    let first = vec![json!({"name": "read", "inputSchema": {"type": "object"}})];
    let stored = db.store.put_tool_cache(&server.id, &first).await?;
    assert_eq!(
        stored,
        ToolCache {
            mcp_server_id: server.id.clone(),
            tools: first.clone(),
            hash: tools_hash(&first),
            captured_at: START_MS,
        }
    );
    db.clock.advance(10);
    let second = vec![json!({"name": "write"}), json!({"name": "read"})];
    db.store.put_tool_cache(&server.id, &second).await?;
    assert_eq!(
        db.store.tool_cache(&server.id).await?,
        Some(ToolCache {
            mcp_server_id: server.id.clone(),
            tools: second.clone(),
            hash: tools_hash(&second),
            captured_at: START_MS + 10,
        })
    );
    db.store.delete_server(&server.id).await?;
    assert_eq!(db.store.tool_cache(&server.id).await?, None);
    Ok(())
}

async fn tool_cache_of_unknown_server_is_refused(db: &TestDb) -> anyhow::Result<()> {
    let error = db
        .store
        .put_tool_cache("ghost", &[json!({"name": "x"})])
        .await;
    assert!(
        matches!(&error, Err(StoreError::UnknownServer(id)) if id == "ghost"),
        "{error:?}"
    );
    Ok(())
}

#[test]
fn tools_hash_ignores_key_order_but_not_content() {
    let a = [
        json!({"name": "read", "description": "Read", "inputSchema": {"type": "object", "properties": {}}}),
    ];
    let b = [
        json!({"inputSchema": {"properties": {}, "type": "object"}, "description": "Read", "name": "read"}),
    ];
    let c = [
        json!({"name": "read", "description": "Read it", "inputSchema": {"type": "object", "properties": {}}}),
    ];
    assert_eq!(tools_hash(&a), tools_hash(&b));
    assert_ne!(tools_hash(&a), tools_hash(&c));
    assert_eq!(tools_hash(&a).len(), 64);
}

backend_tests!(
    tool_cache_is_replaced_per_server,
    tool_cache_of_unknown_server_is_refused,
);
