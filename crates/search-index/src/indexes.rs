//! [`SearchIndexes`]: segment reuse, vector persistence and query embedding.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use embedding::{Embedder, EmbeddingError};
use serde::Serialize;
use store::{PrunedVectors, Store, StoreError};
use tool_search::{Segment, ToolDoc, ToolIndex, Weights, catalog_hash, text_key};

/// How `tool_search` ranks, as `/api/health` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum SearchMode {
    /// BM25F and tool names only: no embedding model is configured.
    Bm25,
    /// BM25F fused with an embedding model's similarity.
    Hybrid {
        /// The model folder.
        model: String,
        /// Its files' digest (vectors are stored under it).
        #[serde(rename = "modelId")]
        model_id: String,
        dimensions: usize,
    },
}

/// A build's tool texts being embedded: how many are done of how many (`/api/health`'s
/// `toolSearch.building`, the CLI's progress line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BuildProgress {
    pub embedded: u64,
    pub total: u64,
}

/// Told of a build's progress after each batch of texts, on the embedding thread.
pub type ProgressObserver = Arc<dyn Fn(BuildProgress) + Send + Sync>;

/// An observer that passes on a build's start, each `step_percent` crossed and its end,
/// not every batch: for progress lines in a log or a terminal.
pub fn in_steps(
    step_percent: u64,
    report: impl Fn(BuildProgress) + Send + Sync + 'static,
) -> ProgressObserver {
    let step_percent = step_percent.clamp(1, 100);
    let last = AtomicU64::new(0);
    Arc::new(move |progress: BuildProgress| {
        if progress.embedded == 0 {
            last.store(0, Ordering::Relaxed);
            report(progress);
            return;
        }
        let step = if progress.embedded >= progress.total {
            u64::MAX
        } else {
            progress.embedded * 100 / progress.total / step_percent
        };
        if last.fetch_max(step, Ordering::Relaxed) < step {
            report(progress);
        }
    })
}

/// The running build's counts; `total` is 0 when no texts are being embedded.
#[derive(Default)]
struct Building {
    embedded: AtomicU64,
    total: AtomicU64,
}

/// At most how often the stored vectors of a live index are marked used
/// ([`SearchIndexes::keep_vectors`]).
pub const TOUCH_EVERY: Duration = Duration::from_secs(24 * 60 * 60);

/// What [`SearchIndexes::keep_vectors`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeptVectors {
    /// Stored rows of live indexes marked used.
    pub touched: u64,
    /// Stored rows deleted, unused for the retention.
    pub pruned: PrunedVectors,
}

/// Why an index could not be built.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Embedding(#[from] EmbeddingError),
    #[error("the tool vectors could not be read or stored")]
    Store(#[from] StoreError),
    #[error("the model's vectors do not fit the tools: {0}")]
    Vectors(#[from] tool_search::VectorError),
    #[error("the embedding task stopped: {0}")]
    Task(String),
}

/// The indexes of one BotCraft process. Cheap to share (`Arc`).
pub struct SearchIndexes {
    embedder: Option<Arc<Embedder>>,
    store: Option<Store>,
    weights: Weights,
    /// Live segments by [`Segment::hash`]: reused while some index holds them.
    segments: Mutex<HashMap<String, Weak<Segment>>>,
    /// One build at a time, so two requests never embed the same tools twice.
    build: tokio::sync::Mutex<()>,
    /// Texts run through the model for indexes (not queries), since start.
    embedded: AtomicU64,
    /// The build embedding now (builds take turns: `build`).
    building: Arc<Building>,
    observer: Option<ProgressObserver>,
}

impl std::fmt::Debug for SearchIndexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndexes")
            .field("mode", &self.mode())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl SearchIndexes {
    /// BM25F only.
    pub fn lexical() -> Self {
        Self::new(None, None)
    }

    /// Hybrid when `embedder` is given; its vectors persist in `store` when given.
    pub fn new(embedder: Option<Arc<Embedder>>, store: Option<Store>) -> Self {
        Self {
            embedder,
            store,
            weights: Weights::default(),
            segments: Mutex::new(HashMap::new()),
            build: tokio::sync::Mutex::new(()),
            embedded: AtomicU64::new(0),
            building: Arc::new(Building::default()),
            observer: None,
        }
    }

    /// The same, telling `observer` how a build's embedding advances.
    pub fn with_progress(mut self, observer: ProgressObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The texts of the running build, embedded and in all; `None` when nothing is being
    /// embedded (no build, or a build whose vectors were all stored).
    pub fn build_progress(&self) -> Option<BuildProgress> {
        let total = self.building.total.load(Ordering::Acquire);
        (total > 0).then(|| BuildProgress {
            embedded: self.building.embedded.load(Ordering::Acquire),
            total,
        })
    }

    /// The same, ranking with `weights`.
    pub fn with_weights(mut self, weights: Weights) -> Self {
        self.weights = weights;
        self
    }

    pub fn mode(&self) -> SearchMode {
        match &self.embedder {
            None => SearchMode::Bm25,
            Some(e) => SearchMode::Hybrid {
                model: e.folder().dir.display().to_string(),
                model_id: e.model_id().to_owned(),
                dimensions: e.dimensions(),
            },
        }
    }

    /// An index over `docs`: one segment per server, in order of first
    /// appearance, each reused while its documents are unchanged. Segments
    /// that must be built are tokenised on blocking threads (one chunk of
    /// servers per core, each sharing one word cache) while the vectors of all
    /// of them are read (or computed) at once.
    pub async fn index(&self, docs: Vec<ToolDoc>) -> Result<Arc<ToolIndex>, IndexError> {
        let mut order: Vec<String> = Vec::new();
        let mut by_server: BTreeMap<String, Vec<ToolDoc>> = BTreeMap::new();
        for doc in docs {
            if !by_server.contains_key(&doc.server) {
                order.push(doc.server.clone());
            }
            by_server.entry(doc.server.clone()).or_default().push(doc);
        }
        let groups: Vec<Vec<ToolDoc>> = order
            .iter()
            .map(|server| by_server.remove(server).unwrap_or_default())
            .collect();
        let (mut groups, hashes) = if groups.iter().map(Vec::len).sum::<usize>() < PARALLEL_HASH {
            let hashes = hash_all(&groups);
            (groups, hashes)
        } else {
            tokio::task::spawn_blocking(move || {
                let hashes = hash_all(&groups);
                (groups, hashes)
            })
            .await
            .map_err(|e| IndexError::Task(e.to_string()))?
        };
        let mut segments: Vec<Option<Arc<Segment>>> =
            hashes.iter().map(|hash| self.live(hash)).collect();
        if segments.iter().any(Option::is_none) {
            let _building = match &self.embedder {
                Some(_) => Some(self.build.lock().await),
                None => None,
            };
            // Another request may have built them while this one waited.
            for (i, hash) in hashes.iter().enumerate() {
                if segments[i].is_none() {
                    segments[i] = self.live(hash);
                }
            }
            let missing: Vec<usize> = (0..groups.len())
                .filter(|&i| segments[i].is_none())
                .collect();
            let label = match missing.as_slice() {
                [one] => groups[*one]
                    .first()
                    .map(|d| d.server.clone())
                    .unwrap_or_default(),
                many => format!("{} servers", many.len()),
            };
            let cores = std::thread::available_parallelism().map_or(1, usize::from);
            let per_chunk = missing.len().div_ceil(cores).max(1);
            let chunks: Vec<Vec<(String, Vec<ToolDoc>)>> = missing
                .chunks(per_chunk)
                .map(|chunk| {
                    chunk
                        .iter()
                        .map(|&i| (hashes[i].clone(), std::mem::take(&mut groups[i])))
                        .collect()
                })
                .collect();
            let built = self.build_segments(chunks, &label).await?;
            for (i, segment) in missing.into_iter().zip(built) {
                segments[i] = Some(self.remember(segment));
            }
        }
        let segments = segments.into_iter().flatten().collect();
        Ok(Arc::new(ToolIndex::from_segments(segments, self.weights)))
    }

    /// The segment of one server's `docs`: the live one with the same
    /// documents, else a new one (with vectors when a model is loaded).
    pub async fn segment(&self, docs: Vec<ToolDoc>) -> Result<Arc<Segment>, IndexError> {
        let index = self.index(docs).await?;
        Ok(index
            .segments()
            .first()
            .cloned()
            .unwrap_or_else(|| Arc::new(Segment::build(Vec::new()))))
    }

    /// Vectors of `texts` (none without a model): the stored ones, the others computed and
    /// stored. Not for queries on the request path (see [`SearchIndexes::query_vector`]).
    pub async fn vectors(&self, texts: &[String]) -> Result<Option<Vec<Vec<f32>>>, IndexError> {
        let Some(embedder) = &self.embedder else {
            return Ok(None);
        };
        let _building = self.build.lock().await;
        self.vectors_with(embedder, texts, "").await.map(Some)
    }

    /// The segments of `chunks` (servers' hashes and tools), each chunk a blocking task on a
    /// core of its own. With a model, each task makes its servers' texts and set keys and
    /// hands them over, tokenises, then attaches the vectors it is handed back; meanwhile
    /// this task reads (or computes) the vectors. The texts, their hashes and the attaching
    /// run on every core, beside the tokenising, instead of on this task's one.
    async fn build_segments(
        &self,
        chunks: Vec<Vec<(String, Vec<ToolDoc>)>>,
        label: &str,
    ) -> Result<Vec<Segment>, IndexError> {
        let Some(embedder) = &self.embedder else {
            let tasks = chunks
                .into_iter()
                .map(|docs| tokio::task::spawn_blocking(move || Segment::build_all_hashed(docs)))
                .collect();
            return Ok(join_all_tasks(tasks).await?.into_iter().flatten().collect());
        };
        /// A chunk's servers' set keys and texts.
        type Texts = (Vec<String>, Vec<Vec<String>>);
        let mut texts_in = Vec::with_capacity(chunks.len());
        let mut sets_out = Vec::with_capacity(chunks.len());
        let tasks = chunks
            .into_iter()
            .map(|docs| {
                let (texts_tx, texts_rx) = tokio::sync::oneshot::channel::<Texts>();
                let (sets_tx, sets_rx) = tokio::sync::oneshot::channel::<Vec<Vec<Vec<f32>>>>();
                texts_in.push(texts_rx);
                sets_out.push(sets_tx);
                tokio::task::spawn_blocking(move || -> Result<Vec<Segment>, IndexError> {
                    let texts: Vec<Vec<String>> = docs
                        .iter()
                        .map(|(_, tools)| tools.iter().map(ToolDoc::embedding_text).collect())
                        .collect();
                    let keys = texts.iter().map(|texts| vector_set_key(texts)).collect();
                    let _ = texts_tx.send((keys, texts));
                    let segments = Segment::build_all_hashed(docs);
                    // Dropped unsent only when reading the vectors failed: that error is
                    // the build's.
                    let sets = sets_rx
                        .blocking_recv()
                        .map_err(|_| IndexError::Task("the tool vectors never came".into()))?;
                    if sets.len() != segments.len() {
                        return Err(IndexError::Task(format!(
                            "{} vector sets for {} servers",
                            sets.len(),
                            segments.len()
                        )));
                    }
                    segments
                        .into_iter()
                        .zip(sets)
                        .map(|(segment, own)| segment.with_vectors(own).map_err(IndexError::from))
                        .collect()
                })
            })
            .collect();
        let builds = join_all_tasks(tasks);
        let vectors = async {
            let (mut keys, mut texts, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
            for received in texts_in {
                let (chunk_keys, chunk_texts) = received
                    .await
                    .map_err(|_| IndexError::Task("a build stopped before its texts".into()))?;
                sizes.push(chunk_keys.len());
                keys.extend(chunk_keys);
                texts.extend(chunk_texts);
            }
            let mut sets = self
                .vector_sets(embedder, keys, texts, label)
                .await?
                .into_iter();
            for (sender, size) in sets_out.into_iter().zip(sizes) {
                let _ = sender.send(sets.by_ref().take(size).collect());
            }
            Ok::<(), IndexError>(())
        };
        let (built, vectors) = tokio::join!(builds, vectors);
        // A task that panicked first, then the vectors' own failure, then a chunk's.
        let built = built?;
        vectors?;
        let mut segments = Vec::new();
        for chunk in built {
            segments.extend(chunk?);
        }
        Ok(segments)
    }

    /// The vectors of each server's `texts` (one list per server, in order, with its set key
    /// in `keys`): each server's stored set when there is one of the right size (one row
    /// read per server), else [`Self::vectors_with`]'s (stored per text, or computed), then
    /// kept as a set.
    async fn vector_sets(
        &self,
        embedder: &Arc<Embedder>,
        keys: Vec<String>,
        groups: Vec<Vec<String>>,
        label: &str,
    ) -> Result<Vec<Vec<Vec<f32>>>, IndexError> {
        let model = embedder.model_id().to_owned();
        let mut stored = match &self.store {
            Some(store) => store.tool_vector_sets(&model, &keys).await?,
            None => HashMap::new(),
        };
        let mut sets: Vec<Option<Vec<Vec<f32>>>> = keys
            .iter()
            .zip(&groups)
            .map(|(key, texts)| {
                // A set of another size or length is not these texts' for this model.
                stored.remove(key).filter(|set| {
                    set.len() == texts.len() && set.iter().all(|v| v.len() == embedder.dimensions())
                })
            })
            .collect();
        let missing: Vec<usize> = (0..sets.len()).filter(|&i| sets[i].is_none()).collect();
        if !missing.is_empty() {
            let texts: Vec<String> = missing
                .iter()
                .flat_map(|&i| groups[i].iter().cloned())
                .collect();
            let mut vectors = self
                .vectors_with(embedder, &texts, label)
                .await?
                .into_iter();
            let fresh: Vec<(String, Vec<Vec<f32>>)> = missing
                .iter()
                .map(|&i| {
                    let own = vectors.by_ref().take(groups[i].len()).collect();
                    (keys[i].clone(), own)
                })
                .collect();
            if let Some(store) = &self.store {
                store.put_tool_vector_sets(&model, &fresh).await?;
            }
            for (&i, (_, own)) in missing.iter().zip(fresh) {
                sets[i] = Some(own);
            }
        }
        Ok(sets.into_iter().map(Option::unwrap_or_default).collect())
    }

    async fn vectors_with(
        &self,
        embedder: &Arc<Embedder>,
        texts: &[String],
        server: &str,
    ) -> Result<Vec<Vec<f32>>, IndexError> {
        let keys: Vec<String> = texts.iter().map(|t| text_key(t)).collect();
        let model = embedder.model_id().to_owned();
        let mut known = match &self.store {
            Some(store) => store.tool_vectors(&model, &keys).await?,
            None => HashMap::new(),
        };
        // A stored vector of another length is not this model's: compute it again.
        known.retain(|_, v| v.len() == embedder.dimensions());
        let mut seen = std::collections::HashSet::new();
        let missing: Vec<usize> = (0..keys.len())
            .filter(|&i| !known.contains_key(&keys[i]) && seen.insert(&keys[i]))
            .collect();
        if !missing.is_empty() {
            let started = Instant::now();
            let batch: Vec<String> = missing.iter().map(|&i| texts[i].clone()).collect();
            let computed = self.embed_counted(embedder, batch).await?;
            self.embedded
                .fetch_add(computed.len() as u64, Ordering::Relaxed);
            let fresh: Vec<(String, Vec<f32>)> = missing
                .iter()
                .map(|&i| keys[i].clone())
                .zip(computed)
                .collect();
            if let Some(store) = &self.store {
                store.put_tool_vectors(&model, &fresh).await?;
            }
            tracing::info!(
                server,
                embedded = fresh.len(),
                reused = keys.len() - fresh.len(),
                ms = started.elapsed().as_millis() as u64,
                "tool vectors computed"
            );
            known.extend(fresh);
        }
        // Each vector moves out of the map; a text given twice copies the first's.
        let mut first: HashMap<&str, usize> = HashMap::new();
        let mut out: Vec<Vec<f32>> = Vec::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let vector = match known.remove(key) {
                Some(vector) => {
                    first.insert(key, i);
                    vector
                }
                None => first
                    .get(key.as_str())
                    .map(|&at| out[at].clone())
                    .unwrap_or_default(),
            };
            out.push(vector);
        }
        Ok(out)
    }

    /// `texts` embedded on a blocking thread, the running build's counts kept as it goes
    /// (and the observer told); the counts are cleared when it ends, however it ends.
    async fn embed_counted(
        &self,
        embedder: &Arc<Embedder>,
        texts: Vec<String>,
    ) -> Result<Vec<Vec<f32>>, IndexError> {
        struct Clear(Arc<Building>);
        impl Drop for Clear {
            fn drop(&mut self) {
                self.0.total.store(0, Ordering::Release);
                self.0.embedded.store(0, Ordering::Release);
            }
        }
        let total = texts.len() as u64;
        self.building.embedded.store(0, Ordering::Release);
        self.building.total.store(total, Ordering::Release);
        let _clear = Clear(Arc::clone(&self.building));
        let building = Arc::clone(&self.building);
        let observer = self.observer.clone();
        if let Some(observer) = &observer {
            observer(BuildProgress { embedded: 0, total });
        }
        let embedder = Arc::clone(embedder);
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder.embed_reporting(&refs, &mut |done| {
                let embedded = done as u64;
                building.embedded.store(embedded, Ordering::Release);
                if let Some(observer) = &observer {
                    observer(BuildProgress { embedded, total });
                }
            })
        })
        .await
        .map_err(|e| IndexError::Task(e.to_string()))?
        .map_err(IndexError::from)
    }

    /// How many texts were embedded for indexes since start (vectors found in the store do
    /// not count).
    pub fn texts_embedded(&self) -> u64 {
        self.embedded.load(Ordering::Relaxed)
    }

    /// The query's embedding, when a model is loaded.
    pub async fn query_vector(&self, text: &str) -> Result<Option<Vec<f32>>, IndexError> {
        let Some(embedder) = &self.embedder else {
            return Ok(None);
        };
        let mut vectors = embed_blocking(Arc::clone(embedder), vec![text.to_owned()]).await?;
        Ok(vectors.pop())
    }

    /// Mark the stored vectors of every live index's segments used (rows not marked within
    /// [`TOUCH_EVERY`], or a quarter of `retention` if shorter), then delete the stored
    /// vectors and sets of every model neither made nor used within `retention`: what
    /// changed tool texts, changed servers, removed servers and other models left behind.
    /// This process's builds wait while it runs, so none reads a row it deletes (another
    /// replica's build may, and then embeds those texts again). Without a model or a store,
    /// nothing.
    pub async fn keep_vectors(&self, retention: Duration) -> Result<KeptVectors, IndexError> {
        let (Some(embedder), Some(store)) = (&self.embedder, &self.store) else {
            return Ok(KeptVectors::default());
        };
        let _building = self.build.lock().await;
        let live: Vec<Arc<Segment>> = lock(&self.segments)
            .values()
            .filter_map(Weak::upgrade)
            .filter(|segment| segment.dimensions().is_some())
            .collect();
        let (texts, sets) = tokio::task::spawn_blocking(move || stored_keys(&live))
            .await
            .map_err(|e| IndexError::Task(e.to_string()))?;
        let touched = store
            .touch_tool_vectors(
                embedder.model_id(),
                &texts,
                &sets,
                TOUCH_EVERY.min(retention / 4),
            )
            .await?;
        let pruned = store.prune_tool_vectors(retention).await?;
        Ok(KeptVectors { touched, pruned })
    }

    fn live(&self, hash: &str) -> Option<Arc<Segment>> {
        lock(&self.segments).get(hash).and_then(Weak::upgrade)
    }

    fn remember(&self, segment: Segment) -> Arc<Segment> {
        let segment = Arc::new(segment);
        let mut segments = lock(&self.segments);
        segments.retain(|_, weak| weak.strong_count() > 0);
        segments.insert(segment.hash().to_owned(), Arc::downgrade(&segment));
        segment
    }
}

/// Below this many tools an index's catalogs are hashed on the caller's thread.
const PARALLEL_HASH: usize = 512;

/// The key a server's vectors are stored under as one set: the hash of its texts' hashes,
/// in order.
pub fn vector_set_key(texts: &[String]) -> String {
    let keys: Vec<String> = texts.iter().map(|t| text_key(t)).collect();
    set_key_of(&keys)
}

/// The set key of texts whose [`text_key`]s are `keys`, in order.
fn set_key_of(keys: &[String]) -> String {
    text_key(&keys.join("\n"))
}

/// The text keys and the set keys of `segments`' stored vectors, each text key once.
fn stored_keys(segments: &[Arc<Segment>]) -> (Vec<String>, Vec<String>) {
    let mut texts = Vec::new();
    let mut sets = Vec::with_capacity(segments.len());
    for segment in segments {
        let keys: Vec<String> = segment
            .docs()
            .iter()
            .map(|doc| text_key(&doc.embedding_text()))
            .collect();
        sets.push(set_key_of(&keys));
        texts.extend(keys);
    }
    // In key order, as the store writes: two writers never wait on each other's rows in
    // opposite orders.
    texts.sort_unstable();
    texts.dedup();
    sets.sort_unstable();
    sets.dedup();
    (texts, sets)
}

/// Each group's [`catalog_hash`], in order, the groups cut into one run per core.
fn hash_all(groups: &[Vec<ToolDoc>]) -> Vec<String> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if cores <= 1 || groups.len() < 2 || groups.iter().map(Vec::len).sum::<usize>() < PARALLEL_HASH
    {
        return groups.iter().map(|docs| catalog_hash(docs)).collect();
    }
    let per_run = groups.len().div_ceil(cores);
    std::thread::scope(|scope| {
        let runs: Vec<_> = groups
            .chunks(per_run)
            .map(|run| scope.spawn(move || run.iter().map(|d| catalog_hash(d)).collect::<Vec<_>>()))
            .collect();
        runs.into_iter()
            .flat_map(|run| {
                run.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// Await every task, in order.
async fn join_all_tasks<T>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Result<Vec<T>, IndexError> {
    let mut out = Vec::with_capacity(tasks.len());
    for task in tasks {
        out.push(task.await.map_err(|e| IndexError::Task(e.to_string()))?);
    }
    Ok(out)
}

async fn embed_blocking(
    embedder: Arc<Embedder>,
    texts: Vec<String>,
) -> Result<Vec<Vec<f32>>, IndexError> {
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        embedder.embed(&refs)
    })
    .await
    .map_err(|e| IndexError::Task(e.to_string()))?
    .map_err(IndexError::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn progress_in_steps_says_the_start_each_step_and_the_end_once() {
        let cases: [(u64, u64, &[u64]); 3] = [
            // (step %, total, what is said, with batches of 8)
            (10, 100, &[0, 16, 24, 32, 40, 56, 64, 72, 80, 96, 100]),
            (30, 100, &[0, 32, 64, 96, 100]),
            (10, 5, &[0, 5]),
        ];
        for (step, total, expected) in cases {
            let said = Arc::new(Mutex::new(Vec::new()));
            let observer = {
                let said = Arc::clone(&said);
                in_steps(step, move |p| lock(&said).push(p.embedded))
            };
            // Two builds in a row: the second starts again.
            for _ in 0..2 {
                lock(&said).clear();
                let mut embedded = 0;
                observer(BuildProgress { embedded, total });
                while embedded < total {
                    embedded = (embedded + 8).min(total);
                    observer(BuildProgress { embedded, total });
                }
                assert_eq!(
                    lock(&said).as_slice(),
                    expected,
                    "step {step}, total {total}"
                );
            }
        }
    }
}
