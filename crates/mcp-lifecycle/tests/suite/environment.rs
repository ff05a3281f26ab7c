//! `${VAR}` in a server's env resolves at spawn from the manager's environment.

use pretty_assertions::assert_eq;
use serde_json::json;

use mcp_lifecycle::LifecycleError;

use super::harness::{Fixture, args, text};

#[tokio::test]
async fn env_references_resolve_from_the_given_environment_only() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("fake", &[("TOKEN", "key-${FAKE_SECRET}")], |s| s)
        .await?;
    let token = fx
        .manager
        .call_tool("fake", "env", args(json!({"name": "TOKEN"})))
        .await?;
    let home = fx
        .manager
        .call_tool("fake", "env", args(json!({"name": "CARGO"})))
        .await?;
    assert_eq!(
        (text(&token), text(&home)),
        ("key-s3cret".to_owned(), "<unset>".to_owned())
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn unresolved_reference_is_not_configured_and_nothing_starts() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    fx.add("fake", &[("API_KEY", "${MISSING_KEY}")], |s| s)
        .await?;
    let error = fx.manager.start_server("fake").await;
    match error {
        Err(LifecycleError::NotConfigured {
            server,
            key,
            variable,
        }) => {
            assert_eq!(
                (server.as_str(), key.as_str(), variable.as_str()),
                ("fake", "API_KEY", "MISSING_KEY")
            );
        }
        other => panic!("expected NotConfigured, got {other:?}"),
    }
    assert_eq!(fx.log("fake"), Vec::<String>::new());
    fx.finish().await;
    Ok(())
}
