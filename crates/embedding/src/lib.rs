//! Sentence embeddings from a local sentence-transformers model folder, in
//! pure Rust.
//!
//! Owns: reading and checking the folder ([`ModelFolder`]), the BERT
//! WordPiece tokenizer of its `tokenizer.json` ([`WordPiece`]), and running
//! the model, pooling and normalising ([`Embedder`]): our own BERT encoder
//! (`bert`) over the `.safetensors` weights (`safetensors`), whose dense
//! layers ([`simd::linear`], weights held in half precision) hold nearly all
//! of the arithmetic, with a GELU and softmax `exp` that run in vector lanes
//! (`gelu`); a single text's dense layers are shared among the cores
//! (`crew`).
//! A model is identified by [`Embedder::model_id`], a digest of its files, so
//! vectors computed by one model are never mistaken for another's.
//!
//! CPU-bound and synchronous (threads are scoped to a call): async callers
//! run [`Embedder::embed`] on a blocking thread. No I/O after
//! [`Embedder::load`].

mod bert;
mod crew;
mod encoder;
mod folder;
mod gelu;
mod safetensors;
mod wordpiece;

use std::path::PathBuf;

pub use encoder::Embedder;
pub use folder::{ModelFolder, Pooling};
pub use wordpiece::{TokenizerError, WordPiece};

/// Why a model cannot be loaded or run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbeddingError {
    #[error("embedding model folder {0} does not exist or is not a folder")]
    NotAFolder(PathBuf),
    #[error("embedding model file {0} is missing")]
    MissingFile(PathBuf),
    #[error("embedding model file {path} cannot be read: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("embedding model file {path} is not valid: {reason}")]
    BadFile { path: PathBuf, reason: String },
    #[error("embedding model failed: {0}")]
    Model(String),
}
