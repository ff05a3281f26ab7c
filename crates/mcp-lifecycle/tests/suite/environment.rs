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

/// A config asking for one of BotCraft's secrets, or for a name not allowed, never starts:
/// the error names the variable (never a value) and no process runs.
#[tokio::test]
async fn a_reference_to_a_secret_or_an_unlisted_name_fails_to_start() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let cases = [
        ("wants-openai", "${OPENAI_API_KEY}", "OPENAI_API_KEY", true),
        ("wants-db", "${DATABASE_URL}", "DATABASE_URL", true),
        (
            "wants-admin",
            "${BOTCRAFT_API_KEY}",
            "BOTCRAFT_API_KEY",
            true,
        ),
        ("wants-home", "${HOME}", "HOME", false),
    ];
    for (name, template, variable, is_secret) in cases {
        fx.add(name, &[("K", template)], |s| s).await?;
        match fx.manager.start_server(name).await {
            Err(LifecycleError::EnvNotAllowed {
                variable: named,
                secret,
                ..
            }) => assert_eq!((named.as_str(), secret), (variable, is_secret), "{name}"),
            other => panic!("{name}: expected EnvNotAllowed, got {other:?}"),
        }
        let status = fx
            .manager
            .get_all_statuses()
            .into_iter()
            .find(|status| status.name == name)
            .expect("a status");
        assert_eq!(status.pid, None, "{name} never ran");
    }
    fx.finish().await;
    Ok(())
}
