//! One immutable piece of an index, usually one server's tools: its
//! postings, field lengths, name keys and (optionally) one unit vector per
//! tool. A [`crate::ToolIndex`] is a list of shared segments, so when one
//! server's tools change only that server's segment is built again.
//!
//! Segments hold raw counts only; statistics that span the whole index
//! (document frequencies, average field lengths) are summed over segments at
//! query time, so a segment ranks the same wherever it is reused.

use std::collections::HashMap;

use crate::doc::{ToolDoc, catalog_hash};
use crate::tokenize::{Tokenizer, name_key};

pub(crate) const NAME: usize = 0;
pub(crate) const DESCRIPTION: usize = 1;
pub(crate) const PARAMETERS: usize = 2;
pub(crate) const SERVER: usize = 3;
pub(crate) const INSTRUCTIONS: usize = 4;
pub(crate) const FIELDS: usize = 5;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Posting {
    pub doc: u32,
    pub tf: [u16; FIELDS],
}

/// Why vectors do not fit a segment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VectorError {
    #[error("{vectors} vectors for {docs} tools")]
    Count { vectors: usize, docs: usize },
    #[error("vector {index} has {got} dimensions, expected {expected}")]
    Dimensions {
        index: usize,
        got: usize,
        expected: usize,
    },
    #[error("vector {index} is zero or not finite")]
    Degenerate { index: usize },
}

/// Unit vectors, one row per document.
#[derive(Debug, Clone)]
pub(crate) struct Vectors {
    pub dim: usize,
    pub data: Vec<f32>,
}

impl Vectors {
    pub fn row(&self, doc: usize) -> &[f32] {
        &self.data[doc * self.dim..(doc + 1) * self.dim]
    }
}

/// An immutable, shareable group of indexed tools.
#[derive(Debug)]
pub struct Segment {
    pub(crate) docs: Vec<ToolDoc>,
    pub(crate) terms: HashMap<String, u32>,
    pub(crate) postings: Vec<Vec<Posting>>,
    pub(crate) lengths: Vec<[u32; FIELDS]>,
    pub(crate) totals: [u64; FIELDS],
    pub(crate) name_keys: HashMap<String, Vec<u32>>,
    pub(crate) vectors: Option<Vectors>,
    hash: String,
}

impl Segment {
    /// Index `docs` lexically.
    pub fn build(docs: Vec<ToolDoc>) -> Self {
        Self::build_with(&Tokenizer::default(), docs)
    }

    pub(crate) fn build_with(tokenizer: &Tokenizer, docs: Vec<ToolDoc>) -> Self {
        let mut terms: HashMap<String, u32> = HashMap::new();
        let mut postings: Vec<Vec<Posting>> = Vec::new();
        let mut lengths = Vec::with_capacity(docs.len());
        let mut totals = [0u64; FIELDS];
        let mut name_keys: HashMap<String, Vec<u32>> = HashMap::new();
        let mut counts: Vec<(u32, [u16; FIELDS])> = Vec::new();
        // Per term: (document id + 1 it was last counted in, its place in `counts`), so a
        // token finds its count without a search.
        let mut slots: Vec<(u32, u32)> = Vec::new();
        let mut params = String::new();
        // Each distinct word's term (`None`: a stop word), so a word is looked up in the
        // stop list and stemmed once per build, not once per occurrence.
        let mut words: rustc_hash::FxHashMap<String, Option<u32>> = Default::default();

        for (doc_id, doc) in docs.iter().enumerate() {
            let doc_id = doc_id as u32;
            params.clear();
            for p in &doc.parameters {
                params.push_str(&p.name);
                params.push(' ');
                params.push_str(&p.description);
                params.push(' ');
            }
            let texts = [
                doc.name.as_str(),
                doc.description.as_str(),
                params.as_str(),
                doc.server.as_str(),
                doc.server_context.as_str(),
            ];
            counts.clear();
            let mut length = [0u32; FIELDS];
            for (field, text) in texts.iter().enumerate() {
                crate::tokenize::for_each_lower_word(text, |word| {
                    let term = match words.get(word) {
                        Some(term) => *term,
                        None => {
                            let term =
                                tokenizer
                                    .token_of(word)
                                    .map(|token| match terms.get(&token) {
                                        Some(&term) => term,
                                        None => {
                                            let term = terms.len() as u32;
                                            terms.insert(token, term);
                                            postings.push(Vec::new());
                                            term
                                        }
                                    });
                            words.insert(word.to_owned(), term);
                            term
                        }
                    };
                    let Some(term) = term else {
                        return;
                    };
                    if slots.len() <= term as usize {
                        slots.resize(term as usize + 1, (0, 0));
                    }
                    let slot = &mut slots[term as usize];
                    if slot.0 == doc_id + 1 {
                        let tf = &mut counts[slot.1 as usize].1;
                        tf[field] = tf[field].saturating_add(1);
                    } else {
                        *slot = (doc_id + 1, counts.len() as u32);
                        let mut tf = [0u16; FIELDS];
                        tf[field] = 1;
                        counts.push((term, tf));
                    }
                    length[field] += 1;
                });
            }
            for (field, total) in totals.iter_mut().enumerate() {
                *total += u64::from(length[field]);
            }
            lengths.push(length);
            for (term, tf) in &counts {
                postings[*term as usize].push(Posting {
                    doc: doc_id,
                    tf: *tf,
                });
            }
            for key in [
                name_key(&doc.name),
                name_key(&format!("{}{}", doc.server, doc.name)),
            ] {
                if !key.is_empty() {
                    let entry = name_keys.entry(key).or_default();
                    if !entry.contains(&doc_id) {
                        entry.push(doc_id);
                    }
                }
            }
        }
        let hash = catalog_hash(&docs);
        Self {
            docs,
            terms,
            postings,
            lengths,
            totals,
            name_keys,
            vectors: None,
            hash,
        }
    }

    /// Attach one vector per document (in document order). Vectors are
    /// normalised to unit length here, so similarity is a dot product.
    pub fn with_vectors(mut self, vectors: Vec<Vec<f32>>) -> Result<Self, VectorError> {
        if vectors.len() != self.docs.len() {
            return Err(VectorError::Count {
                vectors: vectors.len(),
                docs: self.docs.len(),
            });
        }
        let dim = vectors.first().map_or(0, Vec::len);
        let mut data = Vec::with_capacity(dim * vectors.len());
        for (index, vector) in vectors.iter().enumerate() {
            if vector.len() != dim {
                return Err(VectorError::Dimensions {
                    index,
                    got: vector.len(),
                    expected: dim,
                });
            }
            let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            if !norm.is_finite() || norm == 0.0 {
                return Err(VectorError::Degenerate { index });
            }
            data.extend(vector.iter().map(|x| x / norm));
        }
        self.vectors = Some(Vectors { dim, data });
        Ok(self)
    }

    pub fn docs(&self) -> &[ToolDoc] {
        &self.docs
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// [`catalog_hash`] of the segment's documents.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// Dimensions of the attached vectors, if any.
    pub fn dimensions(&self) -> Option<usize> {
        self.vectors.as_ref().map(|v| v.dim)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn docs() -> Vec<ToolDoc> {
        ["read_file", "write_file"]
            .iter()
            .map(|n| ToolDoc::from_mcp("fs", &json!({"name": n, "description": n}), ""))
            .collect()
    }

    #[test]
    fn vectors_are_checked_and_normalised() {
        let segment = Segment::build(docs());
        assert_eq!(
            Segment::build(docs()).with_vectors(vec![vec![1.0]]).err(),
            Some(VectorError::Count {
                vectors: 1,
                docs: 2
            })
        );
        assert_eq!(
            Segment::build(docs())
                .with_vectors(vec![vec![1.0, 0.0], vec![1.0]])
                .err(),
            Some(VectorError::Dimensions {
                index: 1,
                got: 1,
                expected: 2
            })
        );
        assert_eq!(
            Segment::build(docs())
                .with_vectors(vec![vec![1.0, 0.0], vec![0.0, 0.0]])
                .err(),
            Some(VectorError::Degenerate { index: 1 })
        );
        let with = segment
            .with_vectors(vec![vec![3.0, 4.0], vec![0.0, 2.0]])
            .expect("vectors");
        let v = with.vectors.as_ref().expect("vectors");
        assert_eq!(v.row(0), &[0.6, 0.8]);
        assert_eq!(v.row(1), &[0.0, 1.0]);
        assert_eq!(with.dimensions(), Some(2));
    }
}
