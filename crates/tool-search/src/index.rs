//! The index and its ranking.
//!
//! Ranking, in order:
//! 1. tier 2, exact name: the whole query is a tool's name (or its
//!    `server__tool` qualified name) in any case or identifier style, or the
//!    query contains a word written as an identifier (`browser_navigate`,
//!    `readTextFile`) that is a tool's name;
//! 2. tier 1, near-exact name: the whole query is one edit away from a
//!    tool's name (names of 6 characters or more);
//! 3. tier 0, everything else, by the index's [`Ranking`]: BM25F over the
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

use crate::doc::ToolDoc;
use crate::query::{Field, MAX_QUERY_CHARS, SearchError, SearchQuery};
use crate::segment::{DESCRIPTION, FIELDS, INSTRUCTIONS, NAME, PARAMETERS, SERVER, Segment};
use crate::tokenize::{Tokenizer, name_key, split_words};

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

    fn of(&self, field: usize) -> f32 {
        match field {
            NAME => self.name,
            DESCRIPTION => self.description,
            PARAMETERS => self.parameters,
            SERVER => self.server,
            _ => self.instructions,
        }
    }
}

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
    /// 2: exact name, 1: near-exact name, 0: text match.
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
        query.validate()?;
        let (text, truncated_query) = cut(&query.text);
        let allowed = self.allowed_docs(&query.servers);
        let is_allowed = |doc: usize| allowed.as_ref().is_none_or(|a| a[doc]);
        let active = active_fields(&query.fields);

        let mut lexical = vec![0f32; self.count];
        // The most a tool could score: every query word matched to saturation. Normalising
        // by it says how much of the query a tool matched, not how it compares to the best
        // match (which may have matched one common word).
        let mut most = 0f32;
        for (token, weight) in self.query_terms(text) {
            let idf = self.accumulate(&token, weight, &active, &mut lexical);
            most += weight * idf * (self.weights.k1 + 1.0);
        }
        let most = most.max(f32::MIN_POSITIVE);
        let mut tiers = vec![0u8; self.count];
        if self.weights.name_tiers {
            self.mark_names(text, &mut tiers);
        }
        let dense = self.dense_scores(query);

        let lexical_order = ranked(
            (0..self.count).filter(|&d| lexical[d] > 0.0 && is_allowed(d)),
            &lexical,
        );
        let mut signals = vec![Signals::default(); self.count];
        for (rank, &doc) in lexical_order.iter().enumerate() {
            signals[doc].lexical = lexical[doc];
            signals[doc].lexical_rank = Some(rank as u32 + 1);
        }
        let mut candidate = vec![false; self.count];
        for &doc in &lexical_order {
            candidate[doc] = true;
        }
        for (doc, tier) in tiers.iter().enumerate() {
            if *tier > 0 && is_allowed(doc) {
                candidate[doc] = true;
            }
        }
        if let Some(cosine) = &dense {
            let mut allowed_docs: Vec<usize> = (0..self.count).filter(|&d| is_allowed(d)).collect();
            for &doc in &allowed_docs {
                signals[doc].dense = Some(cosine[doc]);
            }
            // Only the best `dense_candidates` are ranked: the rest never join by similarity,
            // and a rank deeper than that counts for nothing in the fusion.
            let depth = self.weights.dense_candidates.min(allowed_docs.len());
            let by_cosine = |a: &usize, b: &usize| {
                cosine[*b]
                    .partial_cmp(&cosine[*a])
                    .unwrap_or(Ordering::Equal)
                    .then(a.cmp(b))
            };
            if depth > 0 && depth < allowed_docs.len() {
                allowed_docs.select_nth_unstable_by(depth - 1, by_cosine);
            }
            allowed_docs.truncate(depth);
            allowed_docs.sort_by(by_cosine);
            for (rank, &doc) in allowed_docs.iter().enumerate() {
                signals[doc].dense_rank = Some(rank as u32 + 1);
                if cosine[doc] >= self.weights.min_similarity {
                    candidate[doc] = true;
                }
            }
        }
        let ranking = if dense.is_some() {
            self.weights.ranking
        } else {
            Ranking::Lexical
        };
        let mut hits: Vec<Hit> = (0..self.count)
            .filter(|&doc| candidate[doc])
            .map(|doc| {
                let s = signals[doc];
                let score = match ranking {
                    Ranking::Lexical => s.lexical,
                    Ranking::Dense => s.dense.unwrap_or(0.0),
                    Ranking::Rrf { k } => {
                        // Each list counts to its first `dense_candidates` entries, as
                        // reciprocal-rank fusion of two top-N lists does (dense ranks
                        // stop there already).
                        let depth = self.weights.dense_candidates as u32;
                        let part = |rank: Option<u32>| {
                            rank.filter(|r| *r <= depth)
                                .map_or(0.0, |r| 1.0 / (k + r as f32))
                        };
                        part(s.lexical_rank) + part(s.dense_rank)
                    }
                    Ranking::Blend { dense: weight } => {
                        (1.0 - weight) * s.lexical / most + weight * s.dense.unwrap_or(0.0).max(0.0)
                    }
                };
                Hit {
                    doc,
                    score,
                    tier: tiers[doc],
                    signals: s,
                }
            })
            .filter(|hit| hit.tier > 0 || ranking != Ranking::Lexical || hit.score > 0.0)
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
        Ok(SearchResult {
            hits,
            truncated_query,
            dense: dense.is_some(),
        })
    }

    /// Cosine of the query's vector to every tool, when the query has one,
    /// the index has vectors of its length, the ranking uses them and the
    /// search covers descriptions (the vectors embed the whole tool).
    fn dense_scores(&self, query: &SearchQuery) -> Option<Vec<f32>> {
        let vector = query.vector.as_deref()?;
        let dims = self.dimensions?;
        if vector.len() != dims
            || self.weights.ranking == Ranking::Lexical
            || !query.fields.contains(&Field::Description)
        {
            return None;
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if !norm.is_finite() || norm == 0.0 {
            return None;
        }
        let mut scores = Vec::with_capacity(self.count);
        for segment in &self.segments {
            let Some(vectors) = &segment.vectors else {
                continue;
            };
            for doc in 0..segment.len() {
                scores.push(dot(vectors.row(doc), vector) / norm);
            }
        }
        if !self.centroids.is_empty() {
            let servers: Vec<f32> = self
                .centroids
                .chunks_exact(dims)
                .map(|centroid| dot(centroid, vector) / norm)
                .collect();
            let weight = self.weights.server_dense;
            for (score, server) in scores.iter_mut().zip(&self.server_of) {
                *score = (*score + weight * servers[*server as usize]) / (1.0 + weight);
            }
        }
        Some(scores)
    }

    /// Each query term's BM25F contribution to `doc`'s score, for people
    /// tuning a catalog (`botcraft tools search --explain`).
    pub fn explain(&self, query: &SearchQuery, doc: usize) -> Vec<(String, f32)> {
        let (text, _) = cut(&query.text);
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
        let lists: Vec<(usize, &Vec<crate::segment::Posting>)> = self
            .segments
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.terms.get(token).map(|&t| (i, &s.postings[t as usize])))
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
        let whole = name_key(text);
        let mut mark = |key: &str, tier: u8| {
            for (segment, seg) in self.segments.iter().enumerate() {
                if let Some(docs) = seg.name_keys.get(key) {
                    for &doc in docs {
                        let t = &mut tiers[self.starts[segment] + doc as usize];
                        *t = (*t).max(tier);
                    }
                }
            }
        };
        mark(&whole, 2);
        // A word written as an identifier names a tool.
        for word in text.split_whitespace() {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
            if split_words(word).len() > 1 {
                mark(&name_key(word), 2);
            }
        }
        if whole.chars().count() >= 6 {
            for (segment, seg) in self.segments.iter().enumerate() {
                for (key, docs) in &seg.name_keys {
                    if key.len().abs_diff(whole.len()) <= 1 && one_edit_apart(key, &whole) {
                        for &doc in docs {
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
        Some(self.docs().map(|d| servers.contains(&d.server)).collect())
    }
}

/// `docs` ordered by `scores`, best first; ties by id, so ranks are stable.
fn ranked(docs: impl Iterator<Item = usize>, scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = docs.collect();
    order.sort_by(|&a, &b| {
        scores[b]
            .partial_cmp(&scores[a])
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(&b))
    });
    order
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight lanes so the compiler vectorises the loop.
    let mut lanes = [0f32; 8];
    let (a_chunks, a_rest) = a.as_chunks::<8>();
    let (b_chunks, b_rest) = b.as_chunks::<8>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
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

fn cut(text: &str) -> (&str, bool) {
    match text.char_indices().nth(MAX_QUERY_CHARS) {
        Some((at, _)) => (&text[..at], true),
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn doc(server: &str, name: &str, description: &str) -> ToolDoc {
        ToolDoc::from_mcp(
            server,
            &json!({"name": name, "description": description}),
            "",
        )
    }

    fn catalog() -> ToolIndex {
        ToolIndex::build(vec![
            doc(
                "forge-bash",
                "run",
                "Run a bash command with pipes and chains",
            ),
            doc(
                "forge-filesystem",
                "read_text_file",
                "Read the contents of a text file",
            ),
            doc(
                "forge-filesystem",
                "write_file",
                "Create or overwrite a file",
            ),
            doc(
                "forge-filesystem",
                "list_directory",
                "List files and folders",
            ),
            doc(
                "playwright",
                "browser_navigate",
                "Navigate the browser to a URL",
            ),
            doc(
                "playwright",
                "browser_take_screenshot",
                "Take a screenshot of the page",
            ),
        ])
    }

    fn names(index: &ToolIndex, query: &SearchQuery) -> Vec<String> {
        index
            .search(query)
            .expect("search")
            .hits
            .iter()
            .map(|h| index.doc(h.doc).name.clone())
            .collect()
    }

    #[test]
    fn seed_checks() {
        let index = catalog();
        let found = names(&index, &SearchQuery::new("filesystem").max_results(10));
        assert_eq!(found, ["list_directory", "read_text_file", "write_file"]);
        let bash = names(&index, &SearchQuery::new("bash").servers(["forge-bash"]));
        assert_eq!(bash, ["run"]);
    }

    #[test]
    fn exact_names_rank_first_in_any_style() {
        let index = catalog();
        for query in [
            "read_text_file",
            "readTextFile",
            "READ-TEXT-FILE",
            "forge-filesystem__read_text_file",
        ] {
            let found = names(&index, &SearchQuery::new(query));
            assert_eq!(
                found.first().map(String::as_str),
                Some("read_text_file"),
                "{query}"
            );
        }
        let found = names(
            &index,
            &SearchQuery::new("then call browser_take_screenshot please"),
        );
        assert_eq!(
            found.first().map(String::as_str),
            Some("browser_take_screenshot")
        );
        let typo = names(&index, &SearchQuery::new("browser_navigat"));
        assert_eq!(typo.first().map(String::as_str), Some("browser_navigate"));
    }

    #[test]
    fn errors_and_limits() {
        let index = catalog();
        assert_eq!(
            index.search(&SearchQuery::new("  ")),
            Err(SearchError::EmptyQuery)
        );
        assert_eq!(
            index.search(&SearchQuery::new("x").max_results(0)),
            Err(SearchError::MaxResults(0))
        );
        assert_eq!(
            index.search(&SearchQuery::new("x").fields([])),
            Err(SearchError::NoFields)
        );
        let long = "screenshot ".repeat(200);
        let result = index.search(&SearchQuery::new(long)).expect("long query");
        assert!(result.truncated_query);
        assert_eq!(
            index.doc(result.hits[0].doc).name,
            "browser_take_screenshot"
        );
        let none = index
            .search(&SearchQuery::new("kubernetes"))
            .expect("search");
        assert_eq!(none.hits, vec![]);
    }

    #[test]
    fn one_edit_apart_matches_levenshtein_one() {
        let words = [
            "", "a", "ab", "abc", "abd", "acb", "abcd", "xbc", "bc", "abcc", "navigate",
        ];
        for a in words {
            for b in words {
                assert_eq!(
                    one_edit_apart(a, b),
                    strsim::levenshtein(a, b) == 1,
                    "{a:?} {b:?}"
                );
            }
        }
    }

    #[test]
    fn ties_break_by_server_then_name() {
        let index = ToolIndex::build(vec![
            doc("b", "same", "identical text"),
            doc("a", "same", "identical text"),
            doc("a", "also", "identical text"),
        ]);
        let hits = index
            .search(&SearchQuery::new("identical"))
            .expect("search")
            .hits;
        let order: Vec<(String, String)> = hits
            .iter()
            .map(|h| {
                (
                    index.doc(h.doc).server.clone(),
                    index.doc(h.doc).name.clone(),
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                ("a".into(), "also".into()),
                ("a".into(), "same".into()),
                ("b".into(), "same".into())
            ]
        );
    }

    #[test]
    fn parameters_field_is_opt_in() {
        let tool = json!({"name": "fetch", "description": "Get a page",
            "inputSchema": {"type": "object", "properties": {"url": {"type": "string", "description": "The address"}}}});
        let index = ToolIndex::build(vec![ToolDoc::from_mcp("web", &tool, "")]);
        assert!(
            index
                .search(&SearchQuery::new("address"))
                .expect("search")
                .hits
                .is_empty()
        );
        let with_params = SearchQuery::new("address").fields([Field::Name, Field::Parameters]);
        assert_eq!(index.search(&with_params).expect("search").hits.len(), 1);
    }
}
