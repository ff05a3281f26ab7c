//! How a search ranks: field weights, the BM25 constants, the fusion of the
//! lexical and dense signals, and the dense candidates' depth.

use crate::segment::{DESCRIPTION, NAME, PARAMETERS, SERVER};

/// How tier-0 candidates are ordered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ranking {
    /// BM25F only.
    Lexical,
    /// Cosine similarity only (lexical when there are no vectors).
    Dense,
    /// Reciprocal-rank fusion: `1/(k + lexical rank) + 1/(k + dense rank)`,
    /// ranks from 1, each list cut to [`Weights::dense_candidates`]; a list a
    /// tool is not in adds nothing.
    Rrf { k: f32 },
    /// `(1 - dense) * bm25 / most + dense * cosine`, where `most` is the score
    /// of a tool matching every query word to saturation (`Σ idf · (k1 + 1)`).
    Blend { dense: f32 },
}

/// Field weights, BM25 constants and the ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    pub name: f32,
    pub description: f32,
    pub parameters: f32,
    pub server: f32,
    pub instructions: f32,
    pub k1: f32,
    pub b: f32,
    /// Rank exact and near-exact name matches first (off only for the
    /// plain-BM25 baseline).
    pub name_tiers: bool,
    pub ranking: Ranking,
    /// How many of the best dense matches join the candidates.
    pub dense_candidates: usize,
    /// Dense matches below this cosine never join the candidates.
    pub min_similarity: f32,
    /// How much a tool's server counts in its similarity: `cosine(query, tool) + server_dense
    /// · cosine(query, server)`, the server's vector being the mean of its tools' (tools and
    /// their servers in one space). 0: tools alone.
    pub server_dense: f32,
}

impl Default for Weights {
    fn default() -> Self {
        // Chosen on the dev split (`cargo run --release -p search-index --example eval --
        // dev grid`); `parameters` is only used when a search asks for that field.
        Self {
            name: 4.0,
            description: 1.0,
            parameters: 0.5,
            server: 1.0,
            instructions: 0.2,
            k1: 1.2,
            b: 0.75,
            name_tiers: true,
            ranking: Ranking::Blend { dense: 0.7 },
            dense_candidates: 20,
            min_similarity: 0.0,
            server_dense: 0.0,
        }
    }
}

impl Weights {
    /// Plain BM25 over name and description text with equal weights and no
    /// context: the baseline the evaluation compares against.
    pub fn plain_bm25() -> Self {
        Self {
            name: 1.0,
            description: 1.0,
            parameters: 0.0,
            server: 0.0,
            instructions: 0.0,
            k1: 1.2,
            b: 0.75,
            name_tiers: false,
            ranking: Ranking::Lexical,
            ..Self::default()
        }
    }

    /// These weights with another ranking.
    pub fn ranking(self, ranking: Ranking) -> Self {
        Self { ranking, ..self }
    }

    pub(crate) fn of(&self, field: usize) -> f32 {
        match field {
            NAME => self.name,
            DESCRIPTION => self.description,
            PARAMETERS => self.parameters,
            SERVER => self.server,
            _ => self.instructions,
        }
    }
}
