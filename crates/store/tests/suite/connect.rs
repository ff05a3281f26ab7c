//! Connecting: the backend from the URL, migrations applied once, failures typed.

use pretty_assertions::assert_eq;
use store::{Backend, McpServerSpec, Store, StoreError, StoreOptions};

use super::harness::TestDb;

async fn reconnecting_keeps_data_and_does_not_migrate_again(db: &TestDb) -> anyhow::Result<()> {
    let created = db
        .store
        .create_server(&McpServerSpec::new("s", "cmd"))
        .await?;
    let again = Store::connect(&db.url).await?;
    assert_eq!(again.backend(), db.store.backend());
    assert_eq!(again.servers().await?, vec![created]);
    again.close().await;
    Ok(())
}

#[tokio::test]
async fn sqlite_file_is_created_on_first_run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("new.db");
    assert!(!path.exists());
    let store = Store::connect(&store::sqlite_url(&path)).await?;
    assert_eq!(store.backend(), Backend::Sqlite);
    assert!(path.exists());
    store.close().await;
    Ok(())
}

#[tokio::test]
async fn a_sqlite_url_without_a_mode_creates_its_file() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("given.db");
    let store = Store::connect(&format!("sqlite://{}", path.display())).await?;
    assert!(path.exists());
    store.close().await;
    Ok(())
}

#[test]
fn backend_is_read_from_the_url_scheme() {
    assert_eq!(
        Backend::of_url("sqlite:///x.db").ok(),
        Some(Backend::Sqlite)
    );
    assert_eq!(
        Backend::of_url("postgres://h/db").ok(),
        Some(Backend::Postgres)
    );
    assert_eq!(
        Backend::of_url("postgresql://h/db").ok(),
        Some(Backend::Postgres)
    );
    assert!(matches!(
        Backend::of_url("mysql://u:secret@h/db"),
        Err(StoreError::UnsupportedUrl { scheme }) if scheme == "mysql"
    ));
}

#[tokio::test]
async fn unreachable_postgres_is_a_connect_error() {
    // Port 1 on loopback: nothing listens there.
    let options = StoreOptions {
        acquire_timeout: std::time::Duration::from_secs(2),
        ..StoreOptions::default()
    };
    let result = Store::connect_with("postgres://postgres@127.0.0.1:1/none", options).await;
    assert!(matches!(result, Err(StoreError::Connect(_))), "{result:?}");
}

backend_tests!(reconnecting_keeps_data_and_does_not_migrate_again);
