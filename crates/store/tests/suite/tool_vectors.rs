//! `"ToolVector"`: vectors by (model, text hash), written once, read back exactly; rows
//! unused for the retention pruned.

use std::collections::HashMap;

use pretty_assertions::assert_eq;

use super::harness::TestDb;

fn key(i: usize) -> String {
    format!("{i:064x}")
}

async fn vectors_round_trip_per_model(db: &TestDb) -> anyhow::Result<()> {
    let vectors: Vec<(String, Vec<f32>)> = (0..1_000)
        .map(|i| (key(i), vec![i as f32, -0.5, f32::MIN_POSITIVE, 1e30]))
        .collect();
    db.store.put_tool_vectors("model-a", &vectors).await?;
    let wanted: Vec<String> = (990..1_010).map(key).collect();
    let found = db.store.tool_vectors("model-a", &wanted).await?;
    let expected: HashMap<String, Vec<f32>> = vectors[990..].iter().cloned().collect();
    assert_eq!(found, expected);
    assert!(db.store.tool_vectors("model-b", &wanted).await?.is_empty());
    // A key already stored keeps its first vector.
    db.store
        .put_tool_vectors("model-a", &[(key(0), vec![9.0])])
        .await?;
    let again = db.store.tool_vectors("model-a", &[key(0)]).await?;
    assert_eq!(again[&key(0)], vectors[0].1);
    assert!(db.store.tool_vectors("model-a", &[]).await?.is_empty());
    Ok(())
}

/// A server's vectors as one set: read back whole and in order, per model; a set kept
/// first stays; an empty set is a set; vectors of two lengths are refused.
async fn vector_sets_round_trip_whole_and_in_order(db: &TestDb) -> anyhow::Result<()> {
    let sets: Vec<(String, Vec<Vec<f32>>)> = (0..40)
        .map(|s| {
            let vectors = (0..s % 7)
                .map(|i| vec![s as f32, i as f32, -0.25, f32::MAX])
                .collect();
            (key(s), vectors)
        })
        .collect();
    db.store.put_tool_vector_sets("model-a", &sets).await?;
    let wanted: Vec<String> = (35..45).map(key).collect();
    let found = db.store.tool_vector_sets("model-a", &wanted).await?;
    let expected: HashMap<String, Vec<Vec<f32>>> = sets[35..].iter().cloned().collect();
    assert_eq!(found, expected);
    assert!(
        db.store
            .tool_vector_sets("model-b", &wanted)
            .await?
            .is_empty()
    );
    db.store
        .put_tool_vector_sets("model-a", &[(key(1), vec![vec![9.0; 4]])])
        .await?;
    let again = db.store.tool_vector_sets("model-a", &[key(1)]).await?;
    assert_eq!(again[&key(1)], sets[1].1);
    let uneven = db
        .store
        .put_tool_vector_sets("model-a", &[(key(99), vec![vec![1.0; 4], vec![1.0; 3]])])
        .await;
    assert!(
        matches!(
            uneven,
            Err(store::StoreError::Invalid(
                store::ValidationError::UnevenVectorSet {
                    expected: 4,
                    got: 3,
                    ..
                }
            ))
        ),
        "{uneven:?}"
    );
    assert!(
        db.store
            .tool_vector_sets("model-a", &[key(99)])
            .await?
            .is_empty()
    );
    // Vectors with no dimensions are refused too: their count would bound nothing on read.
    let empty = db
        .store
        .put_tool_vector_sets("model-a", &[(key(98), vec![Vec::new(), Vec::new()])])
        .await;
    assert!(
        matches!(
            empty,
            Err(store::StoreError::Invalid(
                store::ValidationError::EmptyVectors { .. }
            ))
        ),
        "{empty:?}"
    );
    Ok(())
}

const DAY_MS: i64 = 24 * 60 * 60 * 1000;
const DAY: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Rows say when they were last used: written or touched. A touch writes only rows not
/// marked within its interval; a prune deletes, for every model, the rows unused for the
/// retention, and nothing else.
async fn vectors_unused_for_the_retention_are_pruned(db: &TestDb) -> anyhow::Result<()> {
    let first: Vec<(String, Vec<f32>)> = (0..3).map(|i| (key(i), vec![i as f32])).collect();
    db.store.put_tool_vectors("model-a", &first).await?;
    db.store
        .put_tool_vectors("model-b", &[(key(0), vec![7.0])])
        .await?;
    // Another model's, more than one prune statement deletes.
    let other: Vec<(String, Vec<f32>)> = (0..1_203).map(|i| (key(i), vec![1.0])).collect();
    db.store.put_tool_vectors("model-c", &other).await?;
    let sets = [(key(10), vec![vec![1.0]]), (key(11), vec![vec![2.0]])];
    db.store.put_tool_vector_sets("model-a", &sets).await?;

    db.clock.advance(10 * DAY_MS);
    let touch = |texts: Vec<String>, sets: Vec<String>| {
        let store = db.store.clone();
        async move {
            store
                .touch_tool_vectors("model-a", &texts, &sets, DAY)
                .await
        }
    };
    // key(9) was never stored: nothing to mark.
    assert_eq!(touch(vec![key(0), key(9)], vec![key(10)]).await?, 2);
    assert_eq!(
        touch(vec![key(0)], vec![key(10)]).await?,
        0,
        "marked within the day"
    );
    // Written again: marked used, its first vector kept.
    db.store
        .put_tool_vectors("model-a", &[(key(1), vec![9.0]), (key(3), vec![3.0])])
        .await?;

    db.clock.advance(25 * DAY_MS);
    let pruned = db.store.prune_tool_vectors(30 * DAY).await?;
    assert_eq!(
        pruned,
        store::PrunedVectors {
            vectors: 2 + 1_203,
            sets: 1
        }
    );
    let all: Vec<String> = (0..4).map(key).collect();
    let left = db.store.tool_vectors("model-a", &all).await?;
    let expected: HashMap<String, Vec<f32>> = [
        (key(0), vec![0.0]),
        (key(1), vec![1.0]),
        (key(3), vec![3.0]),
    ]
    .into_iter()
    .collect();
    assert_eq!(left, expected);
    assert!(db.store.tool_vectors("model-b", &all).await?.is_empty());
    let sets_left = db
        .store
        .tool_vector_sets("model-a", &[key(10), key(11)])
        .await?;
    assert_eq!(sets_left.keys().cloned().collect::<Vec<_>>(), vec![key(10)]);
    assert_eq!(
        db.store.prune_tool_vectors(30 * DAY).await?,
        store::PrunedVectors::default()
    );

    // A batch naming a key twice (two servers with the same texts) is written, its first
    // row kept, on both backends; so is a batch naming a stored key.
    let twice = [
        (key(20), vec![vec![1.0]]),
        (key(10), vec![vec![5.0]]),
        (key(20), vec![vec![2.0]]),
    ];
    db.store.put_tool_vector_sets("model-a", &twice).await?;
    let read = db
        .store
        .tool_vector_sets("model-a", &[key(10), key(20)])
        .await?;
    let expected: HashMap<String, Vec<Vec<f32>>> =
        [(key(10), vec![vec![1.0]]), (key(20), vec![vec![1.0]])]
            .into_iter()
            .collect();
    assert_eq!(read, expected);
    db.store
        .put_tool_vectors("model-a", &[(key(5), vec![5.0]), (key(5), vec![6.0])])
        .await?;
    assert_eq!(
        db.store.tool_vectors("model-a", &[key(5)]).await?[&key(5)],
        vec![5.0]
    );
    Ok(())
}

backend_tests!(
    vectors_round_trip_per_model,
    vector_sets_round_trip_whole_and_in_order,
    vectors_unused_for_the_retention_are_pruned
);
