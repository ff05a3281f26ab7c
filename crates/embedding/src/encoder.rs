//! The model: candle's BERT over the folder's weights, then pooling and
//! L2 normalisation, texts batched by length.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};

use crate::EmbeddingError;
use crate::folder::{self, CONFIG, ModelFolder, Pooling, TOKENIZER, WEIGHTS};
use crate::wordpiece::WordPiece;

/// Texts embedded in one forward pass.
const BATCH: usize = 8;

/// A loaded sentence-embedding model.
pub struct Embedder {
    model: BertModel,
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

fn model_error(e: impl std::fmt::Display) -> EmbeddingError {
    EmbeddingError::Model(e.to_string())
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
        let device = Device::Cpu;
        let bad_weights = |e: candle_core::Error| EmbeddingError::BadFile {
            path: folder.file(WEIGHTS),
            reason: e.to_string(),
        };
        let tensors =
            candle_core::safetensors::load_buffer(&weights, &device).map_err(bad_weights)?;
        drop(weights);
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let model = BertModel::load(vb, &config).map_err(bad_weights)?;
        let max_len = folder.max_seq_length.min(config.max_position_embeddings);
        Ok(Self {
            model,
            tokenizer,
            max_len,
            dim: config.hidden_size,
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
        let mut out = vec![Vec::new(); texts.len()];
        let mut embedded = 0;
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| encoded[i].as_slice()).collect();
            for (&i, vector) in chunk.iter().zip(self.forward(&batch)?) {
                out[i] = vector;
            }
            embedded += chunk.len();
            done(embedded);
        }
        Ok(out)
    }

    fn forward(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbeddingError> {
        let width = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(batch.len() * width);
        let mut mask = Vec::with_capacity(batch.len() * width);
        for row in batch {
            ids.extend_from_slice(row);
            ids.extend(std::iter::repeat_n(0u32, width - row.len()));
            mask.extend(std::iter::repeat_n(1u32, row.len()));
            mask.extend(std::iter::repeat_n(0u32, width - row.len()));
        }
        let device = &self.model.device;
        let shape = (batch.len(), width);
        let ids = Tensor::from_vec(ids, shape, device).map_err(model_error)?;
        let mask = Tensor::from_vec(mask, shape, device).map_err(model_error)?;
        let types = ids.zeros_like().map_err(model_error)?;
        let hidden = self
            .model
            .forward(&ids, &types, Some(&mask))
            .map_err(model_error)?;
        let pooled = self.pool(&hidden, &mask).map_err(model_error)?;
        let pooled = if self.folder.normalize {
            let norm = pooled
                .sqr()
                .and_then(|s| s.sum_keepdim(1))
                .and_then(|s| s.sqrt())
                .and_then(|n| n.clamp(1e-12, f32::MAX))
                .map_err(model_error)?;
            pooled.broadcast_div(&norm).map_err(model_error)?
        } else {
            pooled
        };
        pooled.to_vec2::<f32>().map_err(model_error)
    }

    fn pool(&self, hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        match self.folder.pooling {
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1),
            Pooling::Mean => {
                let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
                let counts = mask.sum(1)?.clamp(1e-9, f32::MAX)?;
                summed.broadcast_div(&counts)
            }
            Pooling::Max => {
                let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                // Padding positions get a large negative value so they never win.
                let penalty = ((mask.ones_like()? - &mask)? * -1e9)?;
                hidden.broadcast_add(&penalty)?.max(1)
            }
        }
    }
}
