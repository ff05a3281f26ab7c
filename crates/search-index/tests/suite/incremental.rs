//! One server's change rebuilds one segment and embeds only what changed; a restart (a new
//! `SearchIndexes` over the same store) embeds nothing.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use search_index::SearchIndexes;
use serde_json::json;
use tool_search::ToolDoc;

fn doc(server: &str, name: &str, description: &str) -> ToolDoc {
    ToolDoc::from_mcp(
        server,
        &json!({"name": name, "description": description}),
        "",
    )
}

/// The model in `model`, loaded, and a new SQLite store in `dir`.
async fn model_and_store(
    model: std::path::PathBuf,
    dir: &std::path::Path,
) -> anyhow::Result<(Arc<embedding::Embedder>, store::Store)> {
    let embedder =
        Arc::new(tokio::task::spawn_blocking(move || embedding::Embedder::load(&model)).await??);
    let store = store::Store::connect(&store::sqlite_url(&dir.join("store.db"))).await?;
    Ok((embedder, store))
}

fn catalog(changed: bool) -> Vec<ToolDoc> {
    vec![
        doc("fs", "read_file", "Read a file from disk"),
        doc("fs", "write_file", "Write a file to disk"),
        doc(
            "web",
            "fetch",
            if changed {
                "Fetch a URL and return it as markdown"
            } else {
                "Fetch a URL"
            },
        ),
        doc("web", "search", "Search the web"),
    ]
}

#[tokio::test]
async fn a_changed_server_rebuilds_its_segment_only() -> anyhow::Result<()> {
    let indexes = SearchIndexes::lexical();
    let first = indexes.index(catalog(false)).await?;
    let again = indexes.index(catalog(false)).await?;
    for (a, b) in first.segments().iter().zip(again.segments()) {
        assert!(Arc::ptr_eq(a, b), "unchanged catalog: segments reused");
    }
    let changed = indexes.index(catalog(true)).await?;
    assert!(
        Arc::ptr_eq(&first.segments()[0], &changed.segments()[0]),
        "fs reused"
    );
    assert!(
        !Arc::ptr_eq(&first.segments()[1], &changed.segments()[1]),
        "web rebuilt"
    );
    assert_eq!(changed.len(), 4);
    Ok(())
}

#[tokio::test]
async fn vectors_are_computed_once_per_text_and_survive_a_restart() -> anyhow::Result<()> {
    let model = test_skip::need!(test_skip::needs::embedding_model());
    let dir = tempfile::tempdir()?;
    let (embedder, store) = model_and_store(model, dir.path()).await?;
    let indexes = SearchIndexes::new(Some(embedder.clone()), Some(store.clone()));
    let first = indexes.index(catalog(false)).await?;
    assert_eq!(first.dimensions(), Some(384));
    assert_eq!(indexes.texts_embedded(), 4);
    // One tool's description changed: only that text is embedded.
    indexes.index(catalog(true)).await?;
    assert_eq!(indexes.texts_embedded(), 5);
    // A restart: the store has every vector.
    let restarted = SearchIndexes::new(Some(embedder), Some(store.clone()));
    let index = restarted.index(catalog(true)).await?;
    assert_eq!(restarted.texts_embedded(), 0);
    assert_eq!(index.dimensions(), Some(384));
    store.close().await;
    Ok(())
}

/// Each server's vectors are kept as one set beside the per-text rows, and a restart reads
/// the sets; a stored set that does not fit its server's texts (another count) is not used:
/// the per-text rows are, and the search is the same.
#[tokio::test]
async fn a_restart_reads_each_servers_vectors_as_one_set() -> anyhow::Result<()> {
    let model = test_skip::need!(test_skip::needs::embedding_model());
    let dir = tempfile::tempdir()?;
    let (embedder, store) = model_and_store(model, dir.path()).await?;
    let indexes = SearchIndexes::new(Some(embedder.clone()), Some(store.clone()));
    let first = indexes.index(catalog(false)).await?;
    let texts = |server: &str| -> Vec<String> {
        catalog(false)
            .iter()
            .filter(|d| d.server == server)
            .map(ToolDoc::embedding_text)
            .collect()
    };
    let (fs, web) = (texts("fs"), texts("web"));
    let model_id = embedder.model_id().to_owned();
    let keys = [
        search_index::vector_set_key(&fs),
        search_index::vector_set_key(&web),
    ];
    let sets = store.tool_vector_sets(&model_id, &keys).await?;
    let per_text = indexes.vectors(&fs).await?.expect("a model");
    assert_eq!(sets.get(&keys[0]), Some(&per_text), "fs's set, in order");
    assert_eq!(sets[&keys[1]].len(), 2);

    let query = |index: &tool_search::ToolIndex, vector: Vec<f32>| {
        index.search(&tool_search::SearchQuery::new("fetch a web page").vector(vector))
    };
    let vector = indexes
        .query_vector("fetch a web page")
        .await?
        .expect("a model");
    let restarted = SearchIndexes::new(Some(embedder.clone()), Some(store.clone()));
    let again = restarted.index(catalog(false)).await?;
    assert_eq!(restarted.texts_embedded(), 0);
    assert_eq!(
        query(&again, vector.clone())?,
        query(&first, vector.clone())?
    );

    // A set under web's key that does not fit its two texts (one vector): never used,
    // neither by the build that finds it nor after a restart; web's vectors come from the
    // per-text rows (nothing embedded after the first build) and the search is the same.
    let other = tempfile::tempdir()?;
    let misfit = store::Store::connect(&store::sqlite_url(&other.path().join("store.db"))).await?;
    misfit
        .put_tool_vector_sets(&model_id, &[(keys[1].clone(), vec![vector.clone()])])
        .await?;
    let built = SearchIndexes::new(Some(embedder.clone()), Some(misfit.clone()));
    let index = built.index(catalog(false)).await?;
    assert_eq!(built.texts_embedded(), 4);
    assert_eq!(
        query(&index, vector.clone())?,
        query(&first, vector.clone())?
    );
    let restarted = SearchIndexes::new(Some(embedder), Some(misfit.clone()));
    let index = restarted.index(catalog(false)).await?;
    assert_eq!(restarted.texts_embedded(), 0);
    assert_eq!(query(&index, vector.clone())?, query(&first, vector)?);
    misfit.close().await;
    store.close().await;
    Ok(())
}

#[tokio::test]
async fn a_build_says_how_far_its_embedding_is() -> anyhow::Result<()> {
    use search_index::BuildProgress;
    let dir = test_skip::need!(test_skip::needs::embedding_model());
    let embedder = tokio::task::spawn_blocking(move || embedding::Embedder::load(&dir)).await??;
    let seen: Arc<std::sync::Mutex<Vec<BuildProgress>>> = Arc::default();
    let observer = {
        let seen = Arc::clone(&seen);
        Arc::new(move |progress| {
            seen.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(progress)
        })
    };
    let indexes = SearchIndexes::new(Some(Arc::new(embedder)), None).with_progress(observer);
    assert_eq!(indexes.build_progress(), None, "no build yet");
    // 37 distinct texts: batches of 8, 8, 8, 8 and 5, run on several threads (so they may
    // finish in any order).
    let docs: Vec<ToolDoc> = (0..37)
        .map(|i| {
            doc(
                "many",
                &format!("tool_{i}"),
                &format!("Tool number {i} of many"),
            )
        })
        .collect();
    indexes.index(docs.clone()).await?;
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(seen.iter().all(|p| p.total == 37), "{seen:?}");
    let counts: Vec<u64> = seen.iter().map(|p| p.embedded).collect();
    assert_eq!((counts.first(), counts.last()), (Some(&0), Some(&37)));
    let mut steps: Vec<u64> = counts.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_unstable();
    assert_eq!(
        steps,
        vec![5, 8, 8, 8, 8],
        "one report per batch: {counts:?}"
    );
    assert_eq!(indexes.build_progress(), None, "the build is over");
    assert_eq!(indexes.texts_embedded(), 37);
    Ok(())
}

/// A text given twice gets its vector twice (embedded once), whether it is computed now
/// or read back from the store.
#[tokio::test]
async fn a_text_given_twice_gets_its_vector_twice() -> anyhow::Result<()> {
    let model = test_skip::need!(test_skip::needs::embedding_model());
    let dir = tempfile::tempdir()?;
    let (embedder, store) = model_and_store(model, dir.path()).await?;
    let texts: Vec<String> = ["read a file", "search the web", "read a file"]
        .map(String::from)
        .to_vec();
    for round in ["computed", "read back"] {
        let indexes = SearchIndexes::new(Some(embedder.clone()), Some(store.clone()));
        let vectors = indexes.vectors(&texts).await?.expect("a model is loaded");
        assert_eq!(vectors.len(), 3, "{round}");
        assert_eq!(vectors[0].len(), 384, "{round}");
        assert_eq!(vectors[0], vectors[2], "{round}");
        assert_ne!(vectors[0], vectors[1], "{round}");
        let embedded = if round == "computed" { 2 } else { 0 };
        assert_eq!(indexes.texts_embedded(), embedded, "{round}");
    }
    store.close().await;
    Ok(())
}

/// A clock the test moves.
#[derive(Debug)]
struct TestClock(std::sync::atomic::AtomicI64);

impl store::Clock for TestClock {
    fn now_ms(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The stored rows a live index holds are kept whatever their age; the rows no index holds
/// any more (a changed tool's old text, its server's old set) are deleted once unused for
/// the retention, and only those: a restart on the live catalog embeds nothing, and the old
/// catalog back embeds only its one deleted text.
#[tokio::test]
async fn stored_vectors_no_index_holds_are_pruned_after_the_retention() -> anyhow::Result<()> {
    use search_index::KeptVectors;
    use std::time::Duration;
    const DAY: Duration = Duration::from_secs(24 * 60 * 60);
    let model = test_skip::need!(test_skip::needs::embedding_model());
    let dir = tempfile::tempdir()?;
    let embedder =
        Arc::new(tokio::task::spawn_blocking(move || embedding::Embedder::load(&model)).await??);
    let clock = Arc::new(TestClock(1_700_000_000_000.into()));
    let options = store::StoreOptions {
        clock: clock.clone(),
        ..store::StoreOptions::default()
    };
    let store =
        store::Store::connect_with(&store::sqlite_url(&dir.path().join("store.db")), options)
            .await?;
    let indexes = SearchIndexes::new(Some(embedder.clone()), Some(store.clone()));
    let first = indexes.index(catalog(false)).await?;
    let changed = indexes.index(catalog(true)).await?;
    drop(first);
    assert_eq!(indexes.texts_embedded(), 5);

    clock.0.fetch_add(
        40 * 24 * 60 * 60 * 1000,
        std::sync::atomic::Ordering::SeqCst,
    );
    let kept = indexes.keep_vectors(30 * DAY).await?;
    // Live: fs's two texts and set, web's two current texts and set.
    assert_eq!(
        kept,
        KeptVectors {
            touched: 6,
            pruned: store::PrunedVectors {
                vectors: 1,
                sets: 1
            },
        }
    );
    assert_eq!(
        indexes.keep_vectors(30 * DAY).await?,
        KeptVectors::default(),
        "marked within the day, nothing left to prune"
    );

    let restarted = SearchIndexes::new(Some(embedder.clone()), Some(store.clone()));
    restarted.index(catalog(true)).await?;
    assert_eq!(restarted.texts_embedded(), 0);
    let again = SearchIndexes::new(Some(embedder), Some(store.clone()));
    again.index(catalog(false)).await?;
    assert_eq!(again.texts_embedded(), 1, "the old fetch text only");
    drop(changed);
    store.close().await;
    Ok(())
}
