//! `"ApprovalUse"`: an approval id is consumed once, on every replica; expired rows are
//! forgotten a day after their expiry (the clock skew tolerated), and a consumed id stays
//! consumed until then.

use pretty_assertions::assert_eq;
use store::{Store, StoreOptions};

use super::harness::{START_MS, TestDb};

/// Another replica on the same database, on the test's clock (a replica on the system clock
/// would rightly forget the test's rows, whose expiry is in 2023).
async fn replica(db: &TestDb) -> anyhow::Result<Store> {
    let options = StoreOptions {
        clock: db.clock.clone(),
        ..StoreOptions::default()
    };
    Ok(Store::connect_with(&db.url, options).await?)
}

async fn an_approval_is_consumed_once_on_every_replica(db: &TestDb) -> anyhow::Result<()> {
    let other = replica(db).await?;
    let expires = START_MS + 600_000;
    let consumed = [
        db.store
            .consume_approval("ap1.1.a", "forge", expires)
            .await?,
        db.store
            .consume_approval("ap1.1.a", "forge", expires)
            .await?,
        other.consume_approval("ap1.1.a", "forge", expires).await?,
        other.consume_approval("ap1.1.b", "forge", expires).await?,
        db.store
            .consume_approval("ap1.1.b", "forge", expires)
            .await?,
    ];
    assert_eq!(consumed, [true, false, false, true, false]);
    Ok(())
}

async fn concurrent_consumers_of_one_id_get_one_yes(db: &TestDb) -> anyhow::Result<()> {
    let other = replica(db).await?;
    let expires = START_MS + 600_000;
    let attempts = (0..8).map(|index| {
        let store = if index % 2 == 0 { &db.store } else { &other };
        store.consume_approval("ap1.2.race", "forge", expires)
    });
    let answers = futures::future::try_join_all(attempts).await?;
    assert_eq!(answers.iter().filter(|yes| **yes).count(), 1, "{answers:?}");
    Ok(())
}

async fn expired_rows_are_forgotten_a_day_later_and_live_ones_kept(
    db: &TestDb,
) -> anyhow::Result<()> {
    assert!(
        db.store
            .consume_approval("ap1.3.old", "forge", START_MS + 1_000)
            .await?
    );
    assert!(
        db.store
            .consume_approval("ap1.3.live", "forge", START_MS + 60_000)
            .await?
    );
    // Past its expiry, a row is still kept: a replica whose clock is behind still takes
    // the id as live, and must find it used.
    db.clock.advance(2_000);
    let other = replica(db).await?;
    assert_eq!(
        other
            .consume_approval("ap1.3.old", "forge", START_MS + 1_000)
            .await?,
        false
    );
    // A day past their expiry, rows are forgotten, on the way of the next consume.
    db.clock.advance(store::USED_APPROVAL_MARGIN_MS);
    assert!(
        db.store
            .consume_approval("ap1.3.other", "forge", START_MS + 1_000 + USED_DAY)
            .await?
    );
    assert!(
        db.store
            .consume_approval("ap1.3.old", "forge", START_MS + 1_000)
            .await?
    );
    assert_eq!(
        db.store
            .consume_approval("ap1.3.other", "forge", START_MS + 1_000 + USED_DAY)
            .await?,
        false
    );
    Ok(())
}

/// Far enough ahead that the row lives through the test.
const USED_DAY: i64 = 2 * store::USED_APPROVAL_MARGIN_MS;

/// The key share is made once and the same for every replica, however many ask at once.
async fn the_key_share_is_one_for_all_replicas(db: &TestDb) -> anyhow::Result<()> {
    let other = replica(db).await?;
    let shares = futures::future::join_all((0..6).map(|i| {
        if i % 2 == 0 {
            db.store.key_share()
        } else {
            other.key_share()
        }
    }))
    .await
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    assert_eq!(shares[0].len(), 64, "{shares:?}");
    assert!(shares.iter().all(|share| share == &shares[0]), "{shares:?}");
    assert_eq!(other.key_share().await?, shares[0]);
    Ok(())
}

backend_tests!(
    the_key_share_is_one_for_all_replicas,
    an_approval_is_consumed_once_on_every_replica,
    concurrent_consumers_of_one_id_get_one_yes,
    expired_rows_are_forgotten_a_day_later_and_live_ones_kept
);
