//! The index and its ranking.
//!
//! Ranking, in order:
//! 1. tier 3, exact qualified name: the whole query, or a word of it written
//!    as an identifier, is a tool's `server__tool` qualified name in any case
//!    or identifier style;
//! 2. tier 2, exact name: the same for a tool's own name (`browser_navigate`,
//!    `readTextFile`);
//! 3. tier 1, near-exact name: the whole query is one edit away from a
//!    tool's name (names of 6 characters or more);
//! 4. tier 0, everything else, by the index's [`Ranking`]: BM25F over the
//!    chosen fields plus the server's name and instructions as context
//!    (lexical), cosine similarity of the query's vector to each tool's
//!    (dense), or the two fused;
//!
//! then score, then server and tool name ascending: ties never depend on
//! insertion order.
//!
//! An index is a list of shared [`Segment`]s; corpus statistics (document
//! frequencies, average field lengths) are summed over them per query.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use crate::dense::{self, DenseQuery, Vectors};
use crate::doc::ToolDoc;
use crate::keys::key_hash;
use crate::query::{Field, SearchError, SearchQuery};
use crate::segment::{DESCRIPTION, FIELDS, INSTRUCTIONS, NAME, PARAMETERS, SERVER, Segment};
use crate::tokenize::{Tokenizer, name_key, split_words};
pub use crate::weights::{Ranking, Weights};

/// Each document's server, and each server's normalised mean vector (rows of `dim`).
fn server_centroids(segments: &[Arc<Segment>], dim: usize) -> (Vec<u32>, Vec<f32>) {
    let mut names: HashMap<&str, u32> = HashMap::new();
    let mut server_of = Vec::new();
    let mut sums: Vec<f32> = Vec::new();
    for segment in segments {
        let Some(vectors) = &segment.vectors else {
            continue;
        };
        for (doc, tool) in segment.docs.iter().enumerate() {
            let next = names.len() as u32;
            let server = *names.entry(tool.server.as_str()).or_insert(next);
            if server == next {
                sums.resize(sums.len() + dim, 0.0);
            }
            let row = &mut sums[server as usize * dim..(server as usize + 1) * dim];
            for (sum, x) in row.iter_mut().zip(vectors.row(doc)) {
                *sum += x;
            }
            server_of.push(server);
        }
    }
    for row in sums.chunks_exact_mut(dim) {
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            row.iter_mut().for_each(|x| *x /= norm);
        }
    }
    (server_of, sums)
}

/// The two signals behind a hit, for `--explain`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Signals {
    /// BM25F score (0 when no query word matched).
    pub lexical: f32,
    /// 1-based rank among lexical matches.
    pub lexical_rank: Option<u32>,
    /// Cosine similarity, when the search had vectors.
    pub dense: Option<f32>,
    /// 1-based rank by cosine, among the first [`Weights::dense_candidates`].
    pub dense_rank: Option<u32>,
}

/// One ranked tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Index into [`ToolIndex::doc`].
    pub doc: usize,
    /// The ranking's score: BM25F, cosine, or fused.
    pub score: f32,
    /// 3: exact qualified name, 2: exact name, 1: near-exact name, 0: text match.
    pub tier: u8,
    pub signals: Signals,
}

/// The answer to one search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    /// The query was longer than [`MAX_QUERY_CHARS`] and was cut.
    pub truncated_query: bool,
    /// The dense signal took part.
    pub dense: bool,
}

/// An immutable index over a catalog of tools, made of shared segments.
pub struct ToolIndex {
    segments: Vec<Arc<Segment>>,
    /// Global id of each segment's first document.
    starts: Vec<usize>,
    count: usize,
    average: [f32; FIELDS],
    tokenizer: Tokenizer,
    weights: Weights,
    /// Vector length when every segment has vectors of one length.
    dimensions: Option<usize>,
    /// Each document's server (an index into `centroids`, by rows of `dimensions`).
    server_of: Vec<u32>,
    /// Each server's unit vector: the normalised mean of its tools' vectors.
    centroids: Vec<f32>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("segments", &self.segments.len())
            .field("tools", &self.count)
            .field("dimensions", &self.dimensions)
            .finish()
    }
}

impl ToolIndex {
    /// One lexical segment over `docs`, default weights.
    pub fn build(docs: Vec<ToolDoc>) -> Self {
        Self::with_weights(docs, Weights::default())
    }

    pub fn with_weights(docs: Vec<ToolDoc>, weights: Weights) -> Self {
        Self::from_segments(vec![Arc::new(Segment::build(docs))], weights)
    }

    /// An index over already built segments (cheap: nothing is tokenised).
    pub fn from_segments(segments: Vec<Arc<Segment>>, weights: Weights) -> Self {
        let mut starts = Vec::with_capacity(segments.len());
        let mut count = 0;
        let mut totals = [0u64; FIELDS];
        for segment in &segments {
            starts.push(count);
            count += segment.len();
            for (field, total) in totals.iter_mut().enumerate() {
                *total += segment.totals[field];
            }
        }
        let n = count.max(1) as f32;
        let mut average = [1.0f32; FIELDS];
        for (field, total) in totals.iter().enumerate() {
            average[field] = ((*total as f32) / n).max(1.0);
        }
        let mut dims = segments
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| s.dimensions());
        let first = dims.next().flatten();
        let dimensions = first.filter(|d| dims.all(|other| other == Some(*d)));
        let (server_of, centroids) = match dimensions {
            Some(dim) if weights.server_dense != 0.0 => server_centroids(&segments, dim),
            _ => (Vec::new(), Vec::new()),
        };
        Self {
            segments,
            starts,
            count,
            average,
            tokenizer: Tokenizer::default(),
            weights,
            dimensions,
            server_of,
            centroids,
        }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn weights(&self) -> Weights {
        self.weights
    }

    pub fn segments(&self) -> &[Arc<Segment>] {
        &self.segments
    }

    /// The vector length queries must have for the dense signal, when every
    /// segment has vectors.
    pub fn dimensions(&self) -> Option<usize> {
        self.dimensions
    }

    pub fn doc(&self, index: usize) -> &ToolDoc {
        let (segment, local) = self.locate(index);
        &self.segments[segment].docs[local]
    }

    /// Bytes the index holds on the heap: its segments' ([`Segment::heap_bytes`]; a
    /// segment shared with another index counts here too) and the servers' vectors.
    pub fn heap_bytes(&self) -> usize {
        self.segments.iter().map(|s| s.heap_bytes()).sum::<usize>()
            + self.centroids.capacity() * 4
            + self.server_of.capacity() * 4
            + self.starts.capacity() * std::mem::size_of::<usize>()
    }

    /// Every document, in global id order.
    pub fn docs(&self) -> impl Iterator<Item = &ToolDoc> {
        self.segments.iter().flat_map(|s| s.docs.iter())
    }

    fn locate(&self, index: usize) -> (usize, usize) {
        let segment = self.starts.partition_point(|&start| start <= index) - 1;
        (segment, index - self.starts[segment])
    }

    /// Rank the catalog for `query`.
    pub fn search(&self, query: &SearchQuery) -> Result<SearchResult, SearchError> {
        self.search_on(query, self.count >= LARGE_INDEX)
    }

    /// [`Self::search`], with the dense scan on a thread of its own beside the lexical
    /// pass (`beside`) or after it: the same result either way.
    fn search_on(&self, query: &SearchQuery, beside: bool) -> Result<SearchResult, SearchError> {
        query.validate()?;
        let (text, truncated_query) = query.searched_text();
        let allowed = self.allowed_docs(&query.servers);
        let is_allowed = |doc: usize| allowed.as_ref().is_none_or(|a| a[doc]);
        let active = active_fields(&query.fields);
        let dense = self.dense_query(query);
        // Only the best `dense_candidates` are ranked: the rest never join by similarity,
        // and a rank deeper than that counts for nothing in the fusion.
        let scan = |dense: &Dense| {
            let rows: Vec<(usize, &Vectors)> = self
                .segments
                .iter()
                .zip(&self.starts)
                .filter_map(|(s, &start)| s.vectors.as_ref().map(|v| (start, v)))
                .collect();
            dense::nearest(
                &dense.query,
                &rows,
                self.weights.dense_candidates,
                is_allowed,
                |doc, cosine| dense.adjust(self, doc, cosine),
            )
        };
        let lexical_pass = || {
            let mut lexical = vec![0f32; self.count];
            // The most a tool could score: every query word matched to saturation.
            // Normalising by it says how much of the query a tool matched, not how it
            // compares to the best match (which may have matched one common word).
            let mut most = 0f32;
            for (token, weight) in self.query_terms(text) {
                let idf = self.accumulate(&token, weight, &active, &mut lexical);
                most += weight * idf * (self.weights.k1 + 1.0);
            }
            let mut tiers = vec![0u8; self.count];
            if self.weights.name_tiers {
                self.mark_names(text, &mut tiers);
            }
            (lexical, most.max(f32::MIN_POSITIVE), tiers)
        };
        let ((lexical, most, tiers), nearest) = match &dense {
            // The scan reads every tool's vector and the lexical pass every matching
            // posting; on a large index each is milliseconds, and neither needs the other.
            // A thread the system will not start (at its limit) leaves the scan to this one.
            Some(dense) if beside => std::thread::scope(|threads| {
                let scanning = std::thread::Builder::new()
                    .name("tool-search-scan".into())
                    .spawn_scoped(threads, || scan(dense));
                let lexical = lexical_pass();
                let nearest = match scanning {
                    Ok(scanning) => scanning
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    Err(_) => scan(dense),
                };
                (lexical, Some(nearest))
            }),
            _ => (lexical_pass(), dense.as_ref().map(scan)),
        };

        // Candidates: lexical matches, name matches, and the best dense matches.
        let mut candidates: Vec<usize> = (0..self.count)
            .filter(|&d| (lexical[d] > 0.0 || tiers[d] > 0) && is_allowed(d))
            .collect();
        let mut dense_ranks: HashMap<usize, (u32, f32)> = HashMap::new();
        if let Some(found) = &nearest {
            for (rank, scored) in found.best.iter().enumerate() {
                dense_ranks.insert(scored.doc, (rank as u32 + 1, scored.score));
                if scored.score >= self.weights.min_similarity
                    && lexical[scored.doc] <= 0.0
                    && tiers[scored.doc] == 0
                {
                    candidates.push(scored.doc);
                }
            }
        }
        let ranking = if dense.is_some() {
            self.weights.ranking
        } else {
            Ranking::Lexical
        };
        // Lexical ranks count to `dense_candidates` in the fusion; the hits' own ranks,
        // whatever they are, are counted at the end.
        let depth = self.weights.dense_candidates;
        let lexical_top: HashMap<usize, u32> = match ranking {
            Ranking::Rrf { .. } => {
                let mut matched: Vec<usize> = (0..self.count)
                    .filter(|&d| lexical[d] > 0.0 && is_allowed(d))
                    .collect();
                let by_score = |a: &usize, b: &usize| by_lexical(&lexical, *a, *b);
                if depth > 0 && depth < matched.len() {
                    matched.select_nth_unstable_by(depth - 1, by_score);
                }
                matched.truncate(depth);
                matched.sort_by(by_score);
                (1..).zip(matched).map(|(rank, doc)| (doc, rank)).collect()
            }
            _ => HashMap::new(),
        };
        let score_of = |doc: usize, s: &Signals| match ranking {
            Ranking::Lexical => s.lexical,
            Ranking::Dense => s.dense.unwrap_or(0.0),
            Ranking::Rrf { k } => {
                // Each list counts to its first `dense_candidates` entries, as reciprocal-rank
                // fusion of two top-N lists does (dense ranks stop there already).
                let part = |rank: Option<u32>| rank.map_or(0.0, |r| 1.0 / (k + r as f32));
                part(lexical_top.get(&doc).copied()) + part(s.dense_rank)
            }
            Ranking::Blend { dense: weight } => {
                (1.0 - weight) * s.lexical / most + weight * s.dense.unwrap_or(0.0).max(0.0)
            }
        };
        // A candidate outside the dense ranks has only an estimated cosine so far: its
        // score is known within a range, and the exact cosine is computed only for those
        // whose range can still reach the results.
        let mut pending: Vec<(Hit, f32, f32)> = candidates
            .into_iter()
            .map(|doc| {
                let dense_rank = dense_ranks.get(&doc).copied();
                let mut s = Signals {
                    lexical: lexical[doc],
                    lexical_rank: None,
                    dense: dense_rank.map(|(_, score)| score),
                    dense_rank: dense_rank.map(|(rank, _)| rank),
                };
                let (low, high) = match (&dense, &nearest, dense_rank) {
                    (Some(dense), Some(nearest), None) => {
                        let (low, high) = nearest.range(doc);
                        s.dense = Some(dense.adjust(self, doc, low));
                        let low = score_of(doc, &s);
                        s.dense = Some(dense.adjust(self, doc, high));
                        let high = score_of(doc, &s);
                        s.dense = None;
                        (low, high)
                    }
                    _ => {
                        let score = score_of(doc, &s);
                        (score, score)
                    }
                };
                let hit = Hit {
                    doc,
                    score: low,
                    tier: tiers[doc],
                    signals: s,
                };
                (hit, low, high)
            })
            .filter(|(hit, _, high)| hit.tier > 0 || ranking != Ranking::Lexical || *high > 0.0)
            .collect();
        if pending.len() > query.max_results {
            let mut lows: Vec<(u8, f32)> =
                pending.iter().map(|(h, low, _)| (h.tier, *low)).collect();
            lows.select_nth_unstable_by(query.max_results - 1, |a, b| {
                b.0.cmp(&a.0).then(b.1.total_cmp(&a.1))
            });
            let (tier, low) = lows[query.max_results - 1];
            pending.retain(|(h, _, high)| h.tier > tier || (h.tier == tier && *high >= low));
        }
        let mut hits: Vec<Hit> = pending
            .into_iter()
            .map(|(mut hit, _, _)| {
                if let (Some(dense), None) = (&dense, hit.signals.dense) {
                    hit.signals.dense = Some(dense.score(self, hit.doc));
                    hit.score = score_of(hit.doc, &hit.signals);
                }
                hit
            })
            .collect();
        let order = |a: &Hit, b: &Hit| {
            b.tier
                .cmp(&a.tier)
                .then(b.score.partial_cmp(&a.score).unwrap_or(Ordering::Equal))
                .then_with(|| self.doc(a.doc).server.cmp(&self.doc(b.doc).server))
                .then_with(|| self.doc(a.doc).name.cmp(&self.doc(b.doc).name))
        };
        if hits.len() > query.max_results {
            hits.select_nth_unstable_by(query.max_results - 1, order);
            hits.truncate(query.max_results);
        }
        hits.sort_by(order);
        // Each hit's rank among all lexical matches (the fusion only needed the first few).
        if hits.iter().any(|hit| hit.signals.lexical > 0.0) {
            let matched: Vec<usize> = (0..self.count)
                .filter(|&d| lexical[d] > 0.0 && is_allowed(d))
                .collect();
            for hit in hits.iter_mut().filter(|hit| hit.signals.lexical > 0.0) {
                let ahead = matched
                    .iter()
                    .filter(|&&d| by_lexical(&lexical, d, hit.doc) == Ordering::Less)
                    .count();
                hit.signals.lexical_rank = Some(ahead as u32 + 1);
            }
        }
        Ok(SearchResult {
            hits,
            truncated_query,
            dense: dense.is_some(),
        })
    }

    /// The query's vector, when it has one, the index has vectors of its length, the
    /// ranking uses them and the search covers descriptions (the vectors embed the
    /// whole tool).
    fn dense_query(&self, query: &SearchQuery) -> Option<Dense> {
        let vector = query.vector.as_deref()?;
        let dims = self.dimensions?;
        if vector.len() != dims
            || self.weights.ranking == Ranking::Lexical
            || !query.fields.contains(&Field::Description)
        {
            return None;
        }
        let query = DenseQuery::new(vector)?;
        let servers: Vec<f32> = self
            .centroids
            .chunks_exact(dims)
            .map(|centroid| query.cosine(centroid))
            .collect();
        Some(Dense { query, servers })
    }

    /// Each query term's BM25F contribution to `doc`'s score, for people
    /// tuning a catalog (`botcraft tools search --explain`).
    pub fn explain(&self, query: &SearchQuery, doc: usize) -> Vec<(String, f32)> {
        let (text, _) = query.searched_text();
        let active = active_fields(&query.fields);
        let mut out = Vec::new();
        for (token, weight) in self.query_terms(text) {
            let mut scores = vec![0f32; self.count];
            let _ = self.accumulate(&token, weight, &active, &mut scores);
            if let Some(score) = scores.get(doc).copied().filter(|s| *s > 0.0) {
                out.push((token, score));
            }
        }
        out
    }

    /// Distinct query tokens with their weights.
    fn query_terms(&self, text: &str) -> Vec<(String, f32)> {
        let mut seen: Vec<(String, f32)> = Vec::new();
        for token in self.tokenizer.tokens(text) {
            if !seen.iter().any(|(t, _)| *t == token) {
                seen.push((token, 1.0));
            }
        }
        seen
    }

    /// Add `token`'s BM25F part to `scores`; returns its idf (that of an unseen word when
    /// no tool has it).
    fn accumulate(
        &self,
        token: &str,
        weight: f32,
        active: &[bool; FIELDS],
        scores: &mut [f32],
    ) -> f32 {
        // Hashed once, looked up in every segment.
        let hash = key_hash(token);
        let lists: Vec<(usize, &Vec<crate::segment::Posting>)> = self
            .segments
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                s.terms
                    .get(token, hash)
                    .map(|&t| (i, &s.postings[t as usize]))
            })
            .collect();
        let df: usize = lists.iter().map(|(_, l)| l.len()).sum();
        let n = self.count as f32;
        let idf = (1.0 + (n - df as f32 + 0.5) / (df as f32 + 0.5)).ln();
        if df == 0 {
            return idf;
        }
        let Weights { k1, b, .. } = self.weights;
        for (segment, list) in lists {
            let seg = &self.segments[segment];
            let start = self.starts[segment];
            for posting in list {
                let length = &seg.lengths[posting.doc as usize];
                let mut tf = 0f32;
                for field in 0..FIELDS {
                    if !active[field] || posting.tf[field] == 0 {
                        continue;
                    }
                    let norm = 1.0 - b + b * (length[field] as f32 / self.average[field]);
                    tf += self.weights.of(field) * f32::from(posting.tf[field]) / norm;
                }
                if tf > 0.0 {
                    scores[start + posting.doc as usize] +=
                        weight * idf * tf * (k1 + 1.0) / (tf + k1);
                }
            }
        }
        idf
    }

    fn mark_names(&self, text: &str, tiers: &mut [u8]) {
        // Only text written as an identifier names a tool (`read_text_file`, `readTextFile`,
        // `fs__read`): prose whose letters happen to spell a tool's name ("run shell
        // command", "GitHub", "forge-bash") is ranked by what it says, so a server cannot
        // take the first place for a sentence by naming its tool after it.
        //
        // Text that is a tool's qualified name as the model calls it (`server__tool`, as the
        // catalog made it unique) names that tool more surely than the same text as another
        // tool's bare name, or as another server's name read the same way
        // (`forge_filesystem`): a server cannot take the first place for
        // `forge-filesystem__read_text_file` by naming a tool, or itself, so. Otherwise a
        // bare name names the tools whose names split into the same words.
        let mut mark = |written: &str| {
            let key = name_key(written);
            let words = split_words(written);
            let hash = key_hash(&key);
            for (segment, seg) in self.segments.iter().enumerate() {
                if let Some(docs) = seg.name_keys.get(&key, hash) {
                    for &doc in docs {
                        let named = &seg.docs[doc as usize];
                        let tier = if is_qualified_name(written, named) {
                            3
                        } else if split_words(&named.name) == words {
                            2
                        } else {
                            continue;
                        };
                        let t = &mut tiers[self.starts[segment] + doc as usize];
                        *t = (*t).max(tier);
                    }
                }
            }
        };
        let trimmed = text.trim();
        let whole_named = identifier_shaped(trimmed);
        if whole_named {
            mark(trimmed);
        }
        for word in text.split_whitespace() {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
            if identifier_shaped(word) {
                mark(word);
            }
        }
        let whole = name_key(trimmed);
        if whole_named && whole.chars().count() >= 6 {
            for (segment, seg) in self.segments.iter().enumerate() {
                for key in seg.name_key_list() {
                    if key.len().abs_diff(whole.len()) <= 1 && one_edit_apart(key, &whole) {
                        for &doc in seg.name_keys.get(key, key_hash(key)).into_iter().flatten() {
                            let tier = &mut tiers[self.starts[segment] + doc as usize];
                            *tier = (*tier).max(1);
                        }
                    }
                }
            }
        }
    }

    fn allowed_docs(&self, servers: &[String]) -> Option<Vec<bool>> {
        if servers.is_empty() {
            return None;
        }
        let wanted: std::collections::HashSet<&str> = servers.iter().map(String::as_str).collect();
        Some(
            self.docs()
                .map(|d| wanted.contains(d.server.as_str()))
                .collect(),
        )
    }
}

/// Whether `word` is written as an identifier: no space, and a `_` inside, or lower camel
/// case whose first word has two letters or more and whose later words are capitalised
/// (`readTextFile`). Prose words split into several too (`GitHub`, `e-mail`, `forge-bash`,
/// `s3`, `PDFs`, `iPhone`, `macOS`, `package.json`) and must not name a tool.
fn identifier_shaped(word: &str) -> bool {
    let inner = word.trim_matches(|c: char| !c.is_alphanumeric());
    if inner.is_empty() || inner.chars().any(char::is_whitespace) {
        return false;
    }
    if inner.trim_matches('_').contains('_') {
        return true;
    }
    let first_word = inner.chars().take_while(|c| c.is_lowercase()).count();
    let chars: Vec<char> = inner.chars().collect();
    let capitalised = chars
        .windows(2)
        .any(|pair| pair[0].is_uppercase() && pair[1].is_lowercase());
    first_word >= 2
        && first_word < chars.len()
        && chars[first_word].is_uppercase()
        && capitalised
        && !chars
            .windows(2)
            .any(|pair| pair[0].is_uppercase() && pair[1].is_uppercase())
}

/// Whether `written` is the name the model calls `doc` by: its catalog's qualified name
/// (which a catalog makes unique), else `server__tool`; exactly, case and all.
fn is_qualified_name(written: &str, doc: &ToolDoc) -> bool {
    match &doc.qualified {
        Some(qualified) => written == qualified,
        None => {
            written.len() == doc.server.len() + 2 + doc.name.len()
                && written.starts_with(doc.server.as_str())
                && written[doc.server.len()..].starts_with("__")
                && written.ends_with(doc.name.as_str())
        }
    }
}

/// Lexical order: higher score first, ties by id, so ranks are stable.
fn by_lexical(scores: &[f32], a: usize, b: usize) -> Ordering {
    scores[b]
        .partial_cmp(&scores[a])
        .unwrap_or(Ordering::Equal)
        .then(a.cmp(&b))
}

/// From this many tools on, a search scans the vectors on a thread of its own beside the
/// lexical pass: at 100,000 tools each takes milliseconds, while below about 10,000 the
/// whole search takes about a millisecond and a thread's start would be a noticeable part
/// of it.
const LARGE_INDEX: usize = 20_000;

/// A search's dense side: the query's vector and its cosine to each server.
struct Dense {
    query: DenseQuery,
    servers: Vec<f32>,
}

impl Dense {
    /// A tool's similarity from its cosine: with `server_dense`, its server's counts too
    /// (tools and their servers in one space).
    fn adjust(&self, index: &ToolIndex, doc: usize, cosine: f32) -> f32 {
        if self.servers.is_empty() {
            return cosine;
        }
        let weight = index.weights.server_dense;
        (cosine + weight * self.servers[index.server_of[doc] as usize]) / (1.0 + weight)
    }

    /// The exact similarity of one tool.
    fn score(&self, index: &ToolIndex, doc: usize) -> f32 {
        let (segment, local) = index.locate(doc);
        let cosine = index.segments[segment]
            .vectors
            .as_ref()
            .map_or(0.0, |v| self.query.cosine(v.row(local)));
        self.adjust(index, doc, cosine)
    }
}

/// Whether `a` and `b` differ by exactly one inserted, deleted or replaced
/// byte (Levenshtein distance 1), in one pass without allocating.
fn one_edit_apart(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if long.len() - short.len() > 1 {
        return false;
    }
    let prefix = short.iter().zip(long).take_while(|(x, y)| x == y).count();
    if short.len() == long.len() {
        // One replacement: everything after the first difference is equal.
        prefix < short.len() && short[prefix + 1..] == long[prefix + 1..]
    } else {
        // One insertion into `short`.
        short[prefix..] == long[prefix + 1..]
    }
}

fn active_fields(fields: &[Field]) -> [bool; FIELDS] {
    let mut active = [false; FIELDS];
    for field in fields {
        match field {
            Field::Name => active[NAME] = true,
            Field::Description => active[DESCRIPTION] = true,
            Field::Parameters => active[PARAMETERS] = true,
        }
    }
    active[SERVER] = true;
    active[INSTRUCTIONS] = true;
    active
}

#[cfg(test)]
mod tests;
