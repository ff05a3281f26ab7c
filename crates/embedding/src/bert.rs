//! A BERT encoder for inference: embeddings, then self-attention and
//! feed-forward layers with post-layer-norm, as Hugging Face's `BertModel`
//! computes them (dropout off).
//!
//! Sequences of different lengths are run together without padding: every
//! token of every sequence goes through the dense layers as one matrix, and
//! attention runs per sequence over its own tokens only, which is what the
//! padded, masked computation gives for the real tokens.

use crate::crew::Crew;
use crate::safetensors::{Tensors, WeightsError};
use serde::Deserialize;
use simd::Weights;
use std::sync::Arc;

/// The fields of a BERT `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "two")]
    pub type_vocab_size: usize,
    #[serde(default = "layer_norm_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "gelu")]
    pub hidden_act: String,
    #[serde(default = "absolute")]
    pub position_embedding_type: String,
}

fn two() -> usize {
    2
}
fn layer_norm_eps() -> f64 {
    1e-12
}
fn gelu() -> String {
    "gelu".into()
}
fn absolute() -> String {
    "absolute".into()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    /// `x · Φ(x)` with the exact normal CDF (BERT's `gelu`).
    Gelu,
    /// The tanh approximation (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
    Relu,
}

/// Why a config and weights do not make a model this encoder runs.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    #[error("{0}")]
    Weights(#[from] WeightsError),
    #[error("config: {0}")]
    Config(String),
}

#[derive(Debug)]
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

#[derive(Debug)]
struct Layer {
    /// Query, key and value weights as one matrix (`3h × h`), so one pass
    /// over the tokens computes all three.
    qkv: Weights,
    qkv_bias: Vec<f32>,
    attention_out: Weights,
    attention_out_bias: Vec<f32>,
    attention_norm: Norm,
    intermediate: Weights,
    intermediate_bias: Vec<f32>,
    output: Weights,
    output_bias: Vec<f32>,
    output_norm: Norm,
}

/// The loaded encoder.
#[derive(Debug)]
pub(crate) struct Bert {
    hidden: usize,
    heads: usize,
    intermediate: usize,
    eps: f32,
    activation: Activation,
    max_positions: usize,
    vocab: usize,
    words: Vec<f32>,
    positions: Vec<f32>,
    /// Token type 0's embedding (every text is one segment).
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

impl Bert {
    pub fn load(config: &Config, mut tensors: Tensors) -> Result<Self, ModelError> {
        let h = config.hidden_size;
        let heads = config.num_attention_heads;
        if h == 0 || heads == 0 || !h.is_multiple_of(heads) {
            return Err(ModelError::Config(format!(
                "hidden_size {h} is not a multiple of num_attention_heads {heads}"
            )));
        }
        if config.position_embedding_type != "absolute" {
            return Err(ModelError::Config(format!(
                "position_embedding_type {} is not supported (absolute only)",
                config.position_embedding_type
            )));
        }
        let activation = match config.hidden_act.as_str() {
            "gelu" => Activation::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_approximate" => Activation::GeluTanh,
            "relu" => Activation::Relu,
            other => {
                return Err(ModelError::Config(format!(
                    "hidden_act {other} is not supported"
                )));
            }
        };
        // Some checkpoints prefix every name with the model's name.
        let prefix = ["", "bert.", "model."]
            .into_iter()
            .find(|p| tensors.contains(&format!("{p}embeddings.word_embeddings.weight")))
            .unwrap_or("");
        let name = |rest: &str| format!("{prefix}{rest}");
        let inter = config.intermediate_size;
        let words = tensors.take(
            &name("embeddings.word_embeddings.weight"),
            &[config.vocab_size, h],
        )?;
        let positions = tensors.take(
            &name("embeddings.position_embeddings.weight"),
            &[config.max_position_embeddings, h],
        )?;
        let mut token_type = tensors.take(
            &name("embeddings.token_type_embeddings.weight"),
            &[config.type_vocab_size, h],
        )?;
        token_type.truncate(h);
        let embedding_norm = norm(&mut tensors, &name("embeddings.LayerNorm"), h)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let at = |rest: &str| name(&format!("encoder.layer.{i}.{rest}"));
            let mut qkv = Vec::with_capacity(3 * h * h);
            let mut qkv_bias = Vec::with_capacity(3 * h);
            for part in ["query", "key", "value"] {
                qkv.extend(tensors.take(&at(&format!("attention.self.{part}.weight")), &[h, h])?);
                qkv_bias.extend(tensors.take(&at(&format!("attention.self.{part}.bias")), &[h])?);
            }
            let pack = |name: String, w: &[f32], outputs: usize, inputs: usize| {
                Weights::pack(w, outputs, inputs)
                    .map_err(|refused| ModelError::Config(format!("{name}: {refused}")))
            };
            let mut dense = |rest: &str, outputs: usize, inputs: usize| {
                let w = tensors.take(&at(rest), &[outputs, inputs])?;
                pack(at(rest), &w, outputs, inputs)
            };
            let attention_out = dense("attention.output.dense.weight", h, h)?;
            let intermediate = dense("intermediate.dense.weight", inter, h)?;
            let output = dense("output.dense.weight", h, inter)?;
            layers.push(Layer {
                qkv: pack(
                    at("attention.self.{query,key,value}.weight"),
                    &qkv,
                    3 * h,
                    h,
                )?,
                qkv_bias,
                attention_out,
                attention_out_bias: tensors.take(&at("attention.output.dense.bias"), &[h])?,
                attention_norm: norm(&mut tensors, &at("attention.output.LayerNorm"), h)?,
                intermediate,
                intermediate_bias: tensors.take(&at("intermediate.dense.bias"), &[inter])?,
                output,
                output_bias: tensors.take(&at("output.dense.bias"), &[h])?,
                output_norm: norm(&mut tensors, &at("output.LayerNorm"), h)?,
            });
        }
        Ok(Self {
            hidden: h,
            heads,
            intermediate: inter,
            eps: config.layer_norm_eps as f32,
            activation,
            max_positions: config.max_position_embeddings,
            vocab: config.vocab_size,
            words,
            positions,
            token_type,
            embedding_norm,
            layers,
        })
    }

    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// The last layer's states of every token of every sequence, sequence
    /// after sequence (`Σ len × hidden` values).
    ///
    /// An id outside the vocabulary or a sequence longer than the model's
    /// positions is an error, not a panic. With `threads` above 1 each dense
    /// layer's outputs are shared among that many threads (the caller's one
    /// of them); the result is the same, bit for bit.
    pub fn forward(&self, sequences: &[&[u32]], threads: usize) -> Result<Vec<f32>, ModelError> {
        let h = self.hidden;
        let tokens: usize = sequences.iter().map(|s| s.len()).sum();
        let mut states = Vec::with_capacity(tokens * h);
        for seq in sequences {
            if seq.len() > self.max_positions {
                return Err(ModelError::Config(format!(
                    "{} tokens, more than the model's {} positions",
                    seq.len(),
                    self.max_positions
                )));
            }
            for (position, &id) in seq.iter().enumerate() {
                let id = id as usize;
                if id >= self.vocab {
                    return Err(ModelError::Config(format!(
                        "token id {id} is outside the vocabulary of {}",
                        self.vocab
                    )));
                }
                let word = &self.words[id * h..(id + 1) * h];
                let pos = &self.positions[position * h..(position + 1) * h];
                states.extend(
                    word.iter()
                        .zip(pos)
                        .zip(&self.token_type)
                        .map(|((w, p), t)| w + p + t),
                );
            }
        }
        layer_norm(&mut states, &self.embedding_norm, self.eps);
        Ok(Crew::run(threads, |crew| {
            self.layers(crew, sequences, states)
        }))
    }

    /// The layers over the embedded `states`, their dense layers shared with
    /// `crew`.
    fn layers<'w>(&'w self, crew: &Crew<'w>, sequences: &[&[u32]], states: Vec<f32>) -> Vec<f32> {
        let h = self.hidden;
        let tokens = states.len() / h;
        // The inputs of dense layers are shared with the crew's threads.
        let mut states = Arc::new(states);
        let mut context = Arc::new(vec![0f32; tokens * h]);
        let mut inter = Arc::new(vec![0f32; tokens * self.intermediate]);
        let mut qkv = vec![0f32; tokens * 3 * h];
        let mut projected = vec![0f32; tokens * h];
        let mut scores = Vec::new();
        for layer in &self.layers {
            crew.dense(&states, &layer.qkv, &layer.qkv_bias, &mut qkv, None);
            let context_rows = Arc::make_mut(&mut context);
            let mut start = 0;
            for seq in sequences {
                let rows = start..start + seq.len();
                self.attention(&qkv, rows, context_rows, &mut scores);
                start += seq.len();
            }
            crew.dense(
                &context,
                &layer.attention_out,
                &layer.attention_out_bias,
                &mut projected,
                None,
            );
            let rows = Arc::make_mut(&mut states);
            add(rows, &projected);
            layer_norm(rows, &layer.attention_norm, self.eps);

            // The activation runs on each thread's share of the outputs.
            crew.dense(
                &states,
                &layer.intermediate,
                &layer.intermediate_bias,
                Arc::make_mut(&mut inter).as_mut_slice(),
                Some(self.activation),
            );
            crew.dense(
                &inter,
                &layer.output,
                &layer.output_bias,
                &mut projected,
                None,
            );
            let rows = Arc::make_mut(&mut states);
            add(rows, &projected);
            layer_norm(rows, &layer.output_norm, self.eps);
        }
        Arc::try_unwrap(states).unwrap_or_else(|shared| shared.as_ref().clone())
    }

    /// Scaled dot-product attention of the tokens `rows` (one sequence) over
    /// themselves, head by head, into `context`'s same rows.
    fn attention(
        &self,
        qkv: &[f32],
        rows: std::ops::Range<usize>,
        context: &mut [f32],
        scores: &mut Vec<f32>,
    ) {
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let len = rows.len();
        let row = |t: usize| &qkv[(rows.start + t) * 3 * h..(rows.start + t + 1) * 3 * h];
        scores.resize(len, 0.0);
        for head in 0..self.heads {
            let (q0, k0, v0) = (head * d, h + head * d, 2 * h + head * d);
            for i in 0..len {
                let q = &row(i)[q0..q0 + d];
                let mut max = f32::NEG_INFINITY;
                for (j, score) in scores.iter_mut().enumerate() {
                    let key = &row(j)[k0..k0 + d];
                    *score = simd::dot(q, key) * scale;
                    max = max.max(*score);
                }
                let mut total = 0f32;
                for score in scores.iter_mut() {
                    *score = crate::gelu::exp_nonpositive(*score - max);
                    total += *score;
                }
                let out = &mut context[(rows.start + i) * h + head * d..][..d];
                out.fill(0.0);
                for (j, score) in scores.iter().enumerate() {
                    let weight = score / total;
                    let value = &row(j)[v0..v0 + d];
                    for (o, v) in out.iter_mut().zip(value) {
                        *o += weight * v;
                    }
                }
            }
        }
    }
}

impl Activation {
    /// The activation of every value, in place.
    pub(crate) fn apply(self, values: &mut [f32]) {
        match self {
            Activation::Gelu => crate::gelu::gelu_in_place(values),
            Activation::GeluTanh => {
                let c = (2.0 / std::f32::consts::PI).sqrt();
                for v in values {
                    let x = *v;
                    *v = 0.5 * x * (1.0 + (c * (x + 0.044_715 * x * x * x)).tanh());
                }
            }
            Activation::Relu => {
                for v in values {
                    *v = v.max(0.0);
                }
            }
        }
    }
}

fn norm(tensors: &mut Tensors, at: &str, h: usize) -> Result<Norm, ModelError> {
    // Older checkpoints name the parameters gamma and beta.
    let (weight, bias) = if tensors.contains(&format!("{at}.weight")) {
        ("weight", "bias")
    } else {
        ("gamma", "beta")
    };
    Ok(Norm {
        weight: tensors.take(&format!("{at}.{weight}"), &[h])?,
        bias: tensors.take(&format!("{at}.{bias}"), &[h])?,
    })
}

fn add(states: &mut [f32], other: &[f32]) {
    for (s, o) in states.iter_mut().zip(other) {
        *s += o;
    }
}

/// Normalise each row of `states` to zero mean and unit variance, then scale
/// and shift by the norm's parameters.
fn layer_norm(states: &mut [f32], norm: &Norm, eps: f32) {
    let h = norm.weight.len();
    for row in states.chunks_exact_mut(h) {
        let mean = row.iter().sum::<f32>() / h as f32;
        let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
        let inverse = 1.0 / (variance + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *v = (*v - mean) * inverse * w + b;
        }
    }
}
