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

backend_tests!(vectors_round_trip_per_model);
