//! One immutable piece of an index, usually one server's tools: its
//! postings, field lengths, name keys and (optionally) one unit vector per
//! tool. A [`crate::ToolIndex`] is a list of shared segments, so when one
//! server's tools change only that server's segment is built again.
//!
//! Segments hold raw counts only; statistics that span the whole index
//! (document frequencies, average field lengths) are summed over segments at
//! query time, so a segment ranks the same wherever it is reused.

use crate::dense::Vectors;
use crate::doc::{ToolDoc, catalog_hash};
use crate::keys::KeyTable;
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

/// Each word's token (`None`: a stop word), kept across the segments of one build.
#[derive(Default)]
struct WordCache {
    tokenizer: Tokenizer,
    tokens: rustc_hash::FxHashMap<String, Option<String>>,
}

impl WordCache {
    fn token_of(&mut self, word: &str) -> Option<&str> {
        if !self.tokens.contains_key(word) {
            let token = self.tokenizer.token_of(word);
            self.tokens.insert(word.to_owned(), token);
        }
        self.tokens.get(word).and_then(|t| t.as_deref())
    }
}

/// An immutable, shareable group of indexed tools.
#[derive(Debug)]
pub struct Segment {
    pub(crate) docs: Vec<ToolDoc>,
    pub(crate) terms: KeyTable<u32>,
    pub(crate) postings: Vec<Vec<Posting>>,
    pub(crate) lengths: Vec<[u32; FIELDS]>,
    pub(crate) totals: [u64; FIELDS],
    pub(crate) name_keys: KeyTable<Vec<u32>>,
    /// Every name key, one after the other, with each one's span: the near-name scan
    /// reads this in order instead of chasing one allocation per key.
    pub(crate) name_arena: String,
    pub(crate) name_spans: Vec<(u32, u32)>,
    pub(crate) vectors: Option<Vectors>,
    hash: String,
}

impl Segment {
    /// Index `docs` lexically.
    pub fn build(docs: Vec<ToolDoc>) -> Self {
        let hash = catalog_hash(&docs);
        Self::build_with(&mut WordCache::default(), hash, docs)
    }

    /// One segment per group, in order, sharing one cache of each word's token (a word
    /// is looked up in the stop list and stemmed once for all of them): what a build of
    /// many servers' segments on one thread should call.
    pub fn build_all(groups: Vec<Vec<ToolDoc>>) -> Vec<Self> {
        Self::build_all_hashed(
            groups
                .into_iter()
                .map(|docs| (catalog_hash(&docs), docs))
                .collect(),
        )
    }

    /// [`Segment::build_all`] for a caller that has each group's [`catalog_hash`] already
    /// (it looked for a live segment by it); the hash must be that of the group.
    pub fn build_all_hashed(groups: Vec<(String, Vec<ToolDoc>)>) -> Vec<Self> {
        let mut cache = WordCache::default();
        groups
            .into_iter()
            .map(|(hash, docs)| {
                debug_assert_eq!(hash, catalog_hash(&docs), "the group's own hash");
                Self::build_with(&mut cache, hash, docs)
            })
            .collect()
    }

    fn build_with(cache: &mut WordCache, hash: String, docs: Vec<ToolDoc>) -> Self {
        let mut terms: KeyTable<u32> = KeyTable::default();
        let mut postings: Vec<Vec<Posting>> = Vec::new();
        let mut lengths = Vec::with_capacity(docs.len());
        let mut totals = [0u64; FIELDS];
        let mut name_keys: KeyTable<Vec<u32>> = KeyTable::default();
        let mut counts: Vec<(u32, [u16; FIELDS])> = Vec::new();
        // Per term: (document id + 1 it was last counted in, its place in `counts`), so a
        // token finds its count without a search.
        let mut slots: Vec<(u32, u32)> = Vec::new();
        let mut params = String::new();
        // Each distinct word's term (`None`: a stop word), so a word is looked up in the
        // stop list and stemmed once per build, not once per occurrence.
        let mut words: rustc_hash::FxHashMap<String, Option<u32>> = Default::default();
        // Per field, the previous document's text and its terms, in order.
        let mut last: [(String, Vec<u32>); FIELDS] = Default::default();

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
                // A field whose text is the previous document's (the server's name and
                // context, the same for each of its tools) has the same terms: they
                // are counted again without splitting the text again.
                let replay = &mut last[field];
                let terms_of_text = if replay.0 == *text {
                    Replay::Known(&replay.1)
                } else {
                    replay.0.clear();
                    replay.0.push_str(text);
                    replay.1.clear();
                    Replay::Record(&mut replay.1)
                };
                let mut count = |term: u32| {
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
                };
                let recorded = match terms_of_text {
                    Replay::Known(known) => {
                        for &term in known.iter() {
                            count(term);
                        }
                        continue;
                    }
                    Replay::Record(recorded) => recorded,
                };
                crate::tokenize::for_each_lower_word(text, |word| {
                    let term = match words.get(word) {
                        Some(term) => *term,
                        None => {
                            let term = cache.token_of(word).map(|token| {
                                let next = terms.len() as u32;
                                let term = *terms.get_or_insert_with(token, || next);
                                if term == next {
                                    postings.push(Vec::new());
                                }
                                term
                            });
                            words.insert(word.to_owned(), term);
                            term
                        }
                    };
                    let Some(term) = term else {
                        return;
                    };
                    recorded.push(term);
                    count(term);
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
            for key in [name_key(&doc.name), qualified_key(doc)] {
                if !key.is_empty() {
                    let entry = name_keys.get_or_insert_with(&key, Vec::new);
                    if !entry.contains(&doc_id) {
                        entry.push(doc_id);
                    }
                }
            }
        }
        let mut name_arena =
            String::with_capacity(name_keys.iter().map(|(key, _)| key.len()).sum::<usize>());
        let mut name_spans = Vec::with_capacity(name_keys.len());
        for (key, _) in name_keys.iter() {
            name_spans.push((name_arena.len() as u32, key.len() as u32));
            name_arena.push_str(key);
        }
        Self {
            docs,
            terms,
            postings,
            lengths,
            totals,
            name_keys,
            name_arena,
            name_spans,
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
        self.vectors = Some(Vectors::new(dim, data));
        Ok(self)
    }

    /// Bytes the segment holds on the heap (documents, terms, postings, name keys,
    /// vectors), counted from lengths and capacities; hash tables count their entries,
    /// not their buckets' spare room, and the allocator's own overhead is not counted.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let text = |s: &String| s.capacity();
        let docs: usize = self
            .docs
            .iter()
            .map(|d| {
                size_of::<ToolDoc>()
                    + text(&d.server)
                    + text(&d.name)
                    + text(&d.description)
                    + text(&d.server_context)
                    + d.parameters
                        .iter()
                        .map(|p| {
                            size_of::<crate::ParamDoc>()
                                + text(&p.name)
                                + text(&p.kind)
                                + text(&p.description)
                        })
                        .sum::<usize>()
            })
            .sum();
        let terms: usize = self
            .terms
            .iter()
            .map(|(k, _)| size_of::<(String, u32)>() + k.capacity())
            .sum();
        let postings: usize = self
            .postings
            .iter()
            .map(|p| size_of::<Vec<Posting>>() + p.capacity() * size_of::<Posting>())
            .sum();
        let names: usize = self
            .name_keys
            .iter()
            .map(|(k, v)| size_of::<(String, Vec<u32>)>() + k.capacity() + v.capacity() * 4)
            .sum::<usize>()
            + self.name_arena.capacity()
            + self.name_spans.capacity() * size_of::<(u32, u32)>();
        docs + terms
            + postings
            + names
            + self.lengths.capacity() * size_of::<[u32; FIELDS]>()
            + self.vectors.as_ref().map_or(0, Vectors::heap_bytes)
    }

    /// Each name key, read from the arena.
    pub(crate) fn name_key_list(&self) -> impl Iterator<Item = &str> {
        self.name_spans
            .iter()
            .map(|&(at, len)| &self.name_arena[at as usize..(at + len) as usize])
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

/// A field's terms in [`Segment::build_with`]: known from the previous
/// document's same text, or to be recorded as the text is split.
enum Replay<'a> {
    Known(&'a [u32]),
    Record(&'a mut Vec<u32>),
}

/// The name key of a tool's qualified name: its server's name and its own, as one key.
fn qualified_key(doc: &ToolDoc) -> String {
    name_key(&format!("{}{}", doc.server, doc.name))
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

    /// Every (token, tool) count, each tool's field lengths and the totals: what a
    /// segment holds for scoring, keyed by names so two orders of the same tools compare.
    #[allow(clippy::type_complexity)]
    fn counted(
        segment: &Segment,
    ) -> (
        std::collections::BTreeMap<(String, String), [u16; FIELDS]>,
        std::collections::BTreeMap<String, [u32; FIELDS]>,
        [u64; FIELDS],
    ) {
        let name = |doc: u32| segment.docs[doc as usize].name.clone();
        let mut counts = std::collections::BTreeMap::new();
        for (token, &term) in segment.terms.iter() {
            for posting in &segment.postings[term as usize] {
                counts.insert((token.clone(), name(posting.doc)), posting.tf);
            }
        }
        let lengths = (0..segment.docs.len() as u32)
            .map(|doc| (name(doc), segment.lengths[doc as usize]))
            .collect();
        (counts, lengths, segment.totals)
    }

    /// Tools of one server in a row repeat its name and context, whose terms are counted
    /// again without splitting them again: the counts are those of the same tools
    /// interleaved with another server's, where nothing repeats.
    #[test]
    fn repeated_field_texts_count_as_split_ones() {
        let tool = |server: &str, context: &str, name: &str, description: &str| {
            ToolDoc::from_mcp(
                server,
                &json!({"name": name, "description": description}),
                context,
            )
        };
        let files = "Files under /workspace; the Trash keeps deleted files restorable";
        let web = "Browse the web: pages, screenshots and forms";
        let a1 = tool("fs", files, "read_file", "Read a file");
        let a2 = tool("fs", files, "trash_file", "Move a file into the trash");
        let b1 = tool("web", web, "take_screenshot", "Screenshot the page");
        let b2 = tool("web", web, "fill_form", "Fill the page's form fields");
        let in_runs = Segment::build(vec![a1.clone(), a2.clone(), b1.clone(), b2.clone()]);
        let interleaved = Segment::build(vec![a1, b1, a2, b2]);
        assert_eq!(counted(&in_runs), counted(&interleaved));
        // And the context was counted for both tools of a run.
        let (counts, _, _) = counted(&in_runs);
        assert!(counts.contains_key(&("restor".to_owned(), "trash_file".to_owned())));
        assert!(counts.contains_key(&("restor".to_owned(), "read_file".to_owned())));
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
        // Vectors are held twice: 4 bytes a value as f32, 1 as an 8-bit copy, and two
        // floats a row.
        assert_eq!(
            with.heap_bytes() - Segment::build(docs()).heap_bytes(),
            2 * 2 * 4 + 2 * 2 + 2 * 2 * 4
        );
    }
}
