//! Fresh databases per test, a clock the tests move, and the macro that runs a test on both
//! backends.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use anyhow::Context;
use sqlx::migrate::MigrateDatabase;
use store::{Clock, Store, StoreOptions};

pub const POSTGRES_URL_VAR: &str = "BOTCRAFT_TEST_DATABASE_URL";
pub const START_MS: i64 = 1_700_000_000_000;

/// A clock that only moves when told to.
#[derive(Debug)]
pub struct TestClock(AtomicI64);

impl TestClock {
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A store on a database nobody else uses.
pub struct TestDb {
    pub store: Store,
    pub clock: Arc<TestClock>,
    pub url: String,
    _dir: Option<tempfile::TempDir>,
    drop_url: Option<String>,
}

impl TestDb {
    async fn open(
        url: String,
        dir: Option<tempfile::TempDir>,
        drop_url: Option<String>,
    ) -> anyhow::Result<Self> {
        let clock = Arc::new(TestClock(AtomicI64::new(START_MS)));
        let options = StoreOptions {
            clock: clock.clone(),
            ..StoreOptions::default()
        };
        let store = Store::connect_with(&url, options)
            .await
            .with_context(|| format!("connect to the test database ({})", redact(&url)))?;
        Ok(Self {
            store,
            clock,
            url,
            _dir: dir,
            drop_url,
        })
    }

    /// Close the pool and drop a PostgreSQL test database.
    pub async fn finish(self) -> anyhow::Result<()> {
        self.store.close().await;
        if let Some(url) = self.drop_url {
            sqlx::Any::force_drop_database(&url)
                .await
                .context("drop the test database")?;
        }
        Ok(())
    }
}

fn redact(url: &str) -> String {
    url.split('@').next_back().unwrap_or(url).to_owned()
}

pub async fn sqlite() -> anyhow::Result<TestDb> {
    let dir = tempfile::tempdir()?;
    let url = store::sqlite_url(&dir.path().join("store.db"));
    TestDb::open(url, Some(dir), None).await
}

/// A fresh database on the test server, or `None` when no server is configured.
pub async fn postgres() -> anyhow::Result<Option<TestDb>> {
    let Ok(base) = std::env::var(POSTGRES_URL_VAR) else {
        test_skip::skipped(
            "store: a PostgreSQL variant",
            &format!("{POSTGRES_URL_VAR} is not set"),
        );
        return Ok(None);
    };
    sqlx::any::install_default_drivers();
    let name = format!(
        "botcraft_test_{}_{:08x}",
        std::process::id(),
        rand::random::<u32>()
    );
    let url = with_database(&base, &name);
    sqlx::Any::create_database(&url)
        .await
        .with_context(|| format!("create test database {name} ({POSTGRES_URL_VAR} is set)"))?;
    TestDb::open(url.clone(), None, Some(url)).await.map(Some)
}

/// `base` with its database path replaced by `name`, query string kept.
fn with_database(base: &str, name: &str) -> String {
    let (head, query) = match base.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (base, None),
    };
    let scheme_end = head.find("://").map_or(0, |i| i + 3);
    let authority_end = head[scheme_end..]
        .find('/')
        .map_or(head.len(), |i| scheme_end + i);
    let mut url = format!("{}/{name}", &head[..authority_end]);
    if let Some(query) = query {
        url.push('?');
        url.push_str(query);
    }
    url
}

#[test]
fn with_database_replaces_only_the_path() {
    let cases = [
        (
            "postgres://postgres@127.0.0.1:5432/test",
            "postgres://postgres@127.0.0.1:5432/x",
        ),
        (
            "postgres://u:p@h/test?sslmode=disable",
            "postgres://u:p@h/x?sslmode=disable",
        ),
        ("postgres://h:5432", "postgres://h:5432/x"),
    ];
    for (base, expected) in cases {
        pretty_assertions::assert_eq!(with_database(base, "x"), expected);
    }
}

/// Run each listed `async fn NAME(db: &TestDb) -> anyhow::Result<()>` on both backends.
macro_rules! backend_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() -> anyhow::Result<()> {
                    let db = crate::suite::harness::sqlite().await?;
                    super::$name(&db).await?;
                    db.finish().await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() -> anyhow::Result<()> {
                    let Some(db) = crate::suite::harness::postgres().await? else {
                        return Ok(());
                    };
                    super::$name(&db).await?;
                    db.finish().await
                }
            )*
        }
    };
}
