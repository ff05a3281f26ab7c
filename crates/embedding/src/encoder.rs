//! The model: our BERT encoder over the folder's weights, then pooling and
//! L2 normalisation; texts batched by length, batches spread over the cores.

use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

use crate::EmbeddingError;
use crate::bert::{Bert, Config};
use crate::folder::{self, CONFIG, ModelFolder, Pooling, TOKENIZER, WEIGHTS};
use crate::safetensors::Tensors;
use crate::wordpiece::WordPiece;

/// Texts embedded in one forward pass (sorted by length, so a batch holds
/// texts of about the same length).
const BATCH: usize = 8;
/// Most threads one call to [`Embedder::embed`] runs batches on.
const MAX_WORKERS: usize = 8;

/// A loaded sentence-embedding model.
pub struct Embedder {
    model: Bert,
    tokenizer: WordPiece,
    folder: ModelFolder,
    max_len: usize,
    dim: usize,
    id: String,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("dir", &self.folder.dir)
            .field("id", &self.id)
            .field("dim", &self.dim)
            .finish()
    }
}

impl Embedder {
    /// Load the model in `dir` (see [`ModelFolder`] for the layout).
    pub fn load(dir: &std::path::Path) -> Result<Self, EmbeddingError> {
        let folder = ModelFolder::open(dir)?;
        let config_bytes = folder::read(&folder.file(CONFIG))?;
        let config: Config =
            serde_json::from_slice(&config_bytes).map_err(|e| EmbeddingError::BadFile {
                path: folder.file(CONFIG),
                reason: e.to_string(),
            })?;
        let tokenizer_bytes = folder::read(&folder.file(TOKENIZER))?;
        let tokenizer = std::str::from_utf8(&tokenizer_bytes)
            .map_err(|e| e.to_string())
            .and_then(|text| WordPiece::from_json(text).map_err(|e| e.to_string()))
            .map_err(|reason| EmbeddingError::BadFile {
                path: folder.file(TOKENIZER),
                reason,
            })?;
        let weights = folder::read(&folder.file(WEIGHTS))?;
        let mut digest = Sha256::new();
        for part in [&config_bytes, &tokenizer_bytes, &weights] {
            digest.update((part.len() as u64).to_le_bytes());
            digest.update(part);
        }
        digest.update(format!("{:?}/{}", folder.pooling, folder.normalize).as_bytes());
        let id = hex::encode(&digest.finalize()[..12]);
        let bad_weights = |reason: String| EmbeddingError::BadFile {
            path: folder.file(WEIGHTS),
            reason,
        };
        let tensors = Tensors::parse(&weights).map_err(|e| bad_weights(e.to_string()))?;
        drop(weights);
        let model = Bert::load(&config, tensors).map_err(|e| bad_weights(e.to_string()))?;
        let max_len = folder.max_seq_length.min(config.max_position_embeddings);
        let dim = model.hidden_size();
        Ok(Self {
            model,
            tokenizer,
            max_len,
            dim,
            id,
            folder,
        })
    }

    /// A short digest of the model's files and settings.
    pub fn model_id(&self) -> &str {
        &self.id
    }

    /// Length of each vector.
    pub fn dimensions(&self) -> usize {
        self.dim
    }

    pub fn folder(&self) -> &ModelFolder {
        &self.folder
    }

    /// One vector per text, in order; unit length when the folder's model
    /// normalises (all-MiniLM-L6-v2 does).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        self.embed_reporting(texts, &mut |_| {})
    }

    /// [`Embedder::embed`], calling `done` with how many texts are embedded so far after
    /// each batch (the last call says all of them): the progress of a long build.
    ///
    /// Batches run on up to as many threads as the machine has cores; a single batch (a
    /// query) shares each of its dense layers among them instead. `done` is called on
    /// the caller's thread.
    pub fn embed_reporting(
        &self,
        texts: &[&str],
        done: &mut dyn FnMut(usize),
    ) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        let encoded: Vec<Vec<u32>> = texts
            .iter()
            .map(|t| self.tokenizer.encode(t, self.max_len))
            .collect();
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encoded[i].len());
        let batches: Vec<&[usize]> = order.chunks(BATCH).collect();
        let run = |batch: &[usize], threads: usize| -> Result<Vec<Vec<f32>>, EmbeddingError> {
            let sequences: Vec<&[u32]> = batch.iter().map(|&i| encoded[i].as_slice()).collect();
            self.forward(&sequences, threads)
        };
        let mut out = vec![Vec::new(); texts.len()];
        let cores = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(MAX_WORKERS);
        let workers = cores.min(batches.len());
        let mut embedded = 0;
        if workers <= 1 {
            // One batch (a query): its dense layers share the cores instead.
            for batch in &batches {
                for (&i, vector) in batch.iter().zip(run(batch, cores)?) {
                    out[i] = vector;
                }
                embedded += batch.len();
                done(embedded);
            }
            return Ok(out);
        }
        let next = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let (sender, receiver) = std::sync::mpsc::channel();
            for _ in 0..workers {
                let sender = sender.clone();
                let (next, batches, run) = (&next, &batches, &run);
                scope.spawn(move || {
                    loop {
                        let b = next.fetch_add(1, Ordering::Relaxed);
                        let Some(batch) = batches.get(b) else { break };
                        let result = run(batch, 1);
                        let failed = result.is_err();
                        if sender.send((b, result)).is_err() || failed {
                            break;
                        }
                    }
                });
            }
            drop(sender);
            for (b, result) in receiver {
                let vectors = match result {
                    Ok(vectors) => vectors,
                    Err(e) => {
                        // The other workers stop at their next batch.
                        next.store(batches.len(), Ordering::Relaxed);
                        return Err(e);
                    }
                };
                for (&i, vector) in batches[b].iter().zip(vectors) {
                    out[i] = vector;
                }
                embedded += batches[b].len();
                done(embedded);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// One pooled (and, when the model says so, normalised) vector per sequence.
    fn forward(
        &self,
        sequences: &[&[u32]],
        threads: usize,
    ) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        let states = self
            .model
            .forward(sequences, threads)
            .map_err(|e| EmbeddingError::Model(e.to_string()))?;
        let h = self.dim;
        let mut start = 0;
        let mut out = Vec::with_capacity(sequences.len());
        for seq in sequences {
            let rows = &states[start * h..(start + seq.len()) * h];
            start += seq.len();
            let mut pooled = self.pool(rows, h);
            if self.folder.normalize {
                let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                for v in &mut pooled {
                    *v /= norm;
                }
            }
            out.push(pooled);
        }
        Ok(out)
    }

    /// One sequence's token states (`rows`, `h` values each) pooled into one vector.
    fn pool(&self, rows: &[f32], h: usize) -> Vec<f32> {
        let count = rows.len() / h;
        if count == 0 {
            return vec![0.0; h];
        }
        match self.folder.pooling {
            Pooling::Cls => rows[..h].to_vec(),
            Pooling::Mean => {
                let mut sum = vec![0f32; h];
                for row in rows.chunks_exact(h) {
                    for (s, v) in sum.iter_mut().zip(row) {
                        *s += v;
                    }
                }
                sum.iter().map(|s| s / count as f32).collect()
            }
            Pooling::Max => {
                let mut max = vec![f32::NEG_INFINITY; h];
                for row in rows.chunks_exact(h) {
                    for (m, v) in max.iter_mut().zip(row) {
                        *m = m.max(*v);
                    }
                }
                max
            }
        }
    }
}
