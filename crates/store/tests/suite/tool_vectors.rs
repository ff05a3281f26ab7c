//! `"ToolVector"`: vectors by (model, text hash), written once, read back exactly.

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

backend_tests!(
    vectors_round_trip_per_model,
    vector_sets_round_trip_whole_and_in_order
);
