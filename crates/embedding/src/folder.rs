//! A sentence-transformers model folder: which files it must have and the
//! settings read from them. Every missing or unreadable file is an error
//! naming that file, so a broken folder never degrades silently.
//!
//! ```text
//! config.json                BERT hyper-parameters
//! tokenizer.json             BertNormalizer + BertPreTokenizer + WordPiece
//! model.safetensors          weights
//! 1_Pooling/config.json      pooling mode (mean, CLS or max); mean if absent
//! modules.json               whether a Normalize module follows; yes if absent
//! sentence_bert_config.json  max_seq_length; 256 if absent
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::EmbeddingError;

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    Mean,
    Cls,
    Max,
}

/// What a folder says about its model.
#[derive(Debug, Clone)]
pub struct ModelFolder {
    pub dir: PathBuf,
    pub pooling: Pooling,
    pub normalize: bool,
    pub max_seq_length: usize,
}

#[derive(Deserialize)]
struct PoolingFile {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
}

#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

pub(crate) const CONFIG: &str = "config.json";
pub(crate) const TOKENIZER: &str = "tokenizer.json";
pub(crate) const WEIGHTS: &str = "model.safetensors";
const POOLING: &str = "1_Pooling/config.json";
const MODULES: &str = "modules.json";
const SENTENCE_BERT: &str = "sentence_bert_config.json";

impl ModelFolder {
    /// Check `dir` and read its settings.
    pub fn open(dir: &Path) -> Result<Self, EmbeddingError> {
        if !dir.is_dir() {
            return Err(EmbeddingError::NotAFolder(dir.to_owned()));
        }
        for required in [CONFIG, TOKENIZER, WEIGHTS] {
            let path = dir.join(required);
            if !path.is_file() {
                return Err(EmbeddingError::MissingFile(path));
            }
        }
        let pooling = match optional_json::<PoolingFile>(&dir.join(POOLING))? {
            None => Pooling::Mean,
            Some(p) if p.pooling_mode_mean_tokens => Pooling::Mean,
            Some(p) if p.pooling_mode_cls_token => Pooling::Cls,
            Some(p) if p.pooling_mode_max_tokens => Pooling::Max,
            Some(_) => {
                return Err(EmbeddingError::BadFile {
                    path: dir.join(POOLING),
                    reason: "no pooling mode (mean, cls or max) is set".into(),
                });
            }
        };
        let normalize = match optional_json::<Vec<ModuleEntry>>(&dir.join(MODULES))? {
            None => true,
            Some(modules) => modules.iter().any(|m| m.kind.ends_with(".Normalize")),
        };
        let max_seq_length = optional_json::<SentenceBertConfig>(&dir.join(SENTENCE_BERT))?
            .and_then(|c| c.max_seq_length)
            .unwrap_or(256);
        Ok(Self {
            dir: dir.to_owned(),
            pooling,
            normalize,
            max_seq_length,
        })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// Read `path` as JSON of type `T`; `None` when it does not exist.
fn optional_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, EmbeddingError> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| EmbeddingError::BadFile {
                path: path.to_owned(),
                reason: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EmbeddingError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        }),
    }
}

/// Read a required file.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, EmbeddingError> {
    std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => EmbeddingError::MissingFile(path.to_owned()),
        _ => EmbeddingError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        },
    })
}
