//! The index and its ranking.
//!
//! Ranking, in order:
//! 1. tier 2, exact name: the whole query is a tool's name (or its
//!    `server__tool` qualified name) in any case or identifier style, or the
//!    query contains a word written as an identifier (`browser_navigate`,
//!    `readTextFile`) that is a tool's name;
//! 2. tier 1, near-exact name: the whole query is one edit away from a
//!    tool's name (names of 6 characters or more);
//! 3. tier 0, everything else BM25F scored over the chosen fields plus the
//!    server's name and instructions as context;
//!
//! then score, then server and tool name ascending: ties never depend on
//! insertion order.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::doc::ToolDoc;
use crate::query::{Field, MAX_QUERY_CHARS, SearchError, SearchQuery};
use crate::tokenize::{Tokenizer, name_key, split_words};

const NAME: usize = 0;
const DESCRIPTION: usize = 1;
const PARAMETERS: usize = 2;
const SERVER: usize = 3;
const INSTRUCTIONS: usize = 4;
const FIELDS: usize = 5;

/// Field weights and BM25 constants.
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
    /// Expand query words with their synonyms (off for the baseline).
    pub synonyms: bool,
}

impl Default for Weights {
    fn default() -> Self {
        Self {
            name: 3.0,
            description: 1.0,
            parameters: 0.5,
            server: 2.0,
            instructions: 0.2,
            k1: 1.2,
            b: 0.5,
            name_tiers: true,
            synonyms: true,
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
            synonyms: false,
        }
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

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: [u16; FIELDS],
}

/// One ranked tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Index into [`ToolIndex::doc`].
    pub doc: usize,
    pub score: f32,
    /// 2: exact name, 1: near-exact name, 0: text match.
    pub tier: u8,
}

/// The answer to one search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    /// The query was longer than [`MAX_QUERY_CHARS`] and was cut.
    pub truncated_query: bool,
}

/// An immutable index over a catalog of tools.
pub struct ToolIndex {
    docs: Vec<ToolDoc>,
    tokenizer: Tokenizer,
    weights: Weights,
    terms: HashMap<String, u32>,
    postings: Vec<Vec<Posting>>,
    lengths: Vec<[u32; FIELDS]>,
    average: [f32; FIELDS],
    name_keys: HashMap<String, Vec<u32>>,
}

impl ToolIndex {
    pub fn build(docs: Vec<ToolDoc>) -> Self {
        Self::with_weights(docs, Weights::default())
    }

    pub fn with_weights(docs: Vec<ToolDoc>, weights: Weights) -> Self {
        let tokenizer = Tokenizer::default();
        let mut terms: HashMap<String, u32> = HashMap::new();
        let mut postings: Vec<Vec<Posting>> = Vec::new();
        let mut lengths = Vec::with_capacity(docs.len());
        let mut totals = [0u64; FIELDS];
        let mut name_keys: HashMap<String, Vec<u32>> = HashMap::new();

        for (doc_id, doc) in docs.iter().enumerate() {
            let doc_id = doc_id as u32;
            let mut params = String::new();
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
            let mut counts: HashMap<u32, [u16; FIELDS]> = HashMap::new();
            let mut length = [0u32; FIELDS];
            for (field, text) in texts.iter().enumerate() {
                for token in tokenizer.tokens(text) {
                    let next = terms.len() as u32;
                    let term = *terms.entry(token).or_insert(next);
                    if term as usize == postings.len() {
                        postings.push(Vec::new());
                    }
                    let tf = counts.entry(term).or_insert([0; FIELDS]);
                    tf[field] = tf[field].saturating_add(1);
                    length[field] += 1;
                }
            }
            for (field, total) in totals.iter_mut().enumerate() {
                *total += u64::from(length[field]);
            }
            lengths.push(length);
            for (term, tf) in counts {
                postings[term as usize].push(Posting { doc: doc_id, tf });
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
        let count = docs.len().max(1) as f32;
        let mut average = [1.0f32; FIELDS];
        for (field, total) in totals.iter().enumerate() {
            average[field] = ((*total as f32) / count).max(1.0);
        }
        Self {
            docs,
            tokenizer,
            weights,
            terms,
            postings,
            lengths,
            average,
            name_keys,
        }
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    pub fn doc(&self, index: usize) -> &ToolDoc {
        &self.docs[index]
    }

    pub fn docs(&self) -> &[ToolDoc] {
        &self.docs
    }

    /// Rank the catalog for `query`.
    pub fn search(&self, query: &SearchQuery) -> Result<SearchResult, SearchError> {
        query.validate()?;
        let (text, truncated_query) = cut(&query.text);
        let allowed = self.allowed_docs(&query.servers);
        let active = active_fields(&query.fields);

        let mut scores = vec![0f32; self.docs.len()];
        for (term, _, weight) in self.query_terms(text) {
            self.accumulate(term, weight, &active, &mut scores);
        }
        let mut tiers = vec![0u8; self.docs.len()];
        if self.weights.name_tiers {
            self.mark_names(text, &mut tiers);
        }

        let mut hits: Vec<Hit> = scores
            .iter()
            .zip(&tiers)
            .enumerate()
            .filter(|(doc, (score, tier))| {
                (**score > 0.0 || **tier > 0) && allowed.as_ref().is_none_or(|a| a[*doc])
            })
            .map(|(doc, (score, tier))| Hit {
                doc,
                score: *score,
                tier: *tier,
            })
            .collect();
        let order = |a: &Hit, b: &Hit| {
            b.tier
                .cmp(&a.tier)
                .then(b.score.partial_cmp(&a.score).unwrap_or(Ordering::Equal))
                .then_with(|| self.docs[a.doc].server.cmp(&self.docs[b.doc].server))
                .then_with(|| self.docs[a.doc].name.cmp(&self.docs[b.doc].name))
        };
        if hits.len() > query.max_results {
            hits.select_nth_unstable_by(query.max_results - 1, order);
            hits.truncate(query.max_results);
        }
        hits.sort_by(order);
        Ok(SearchResult {
            hits,
            truncated_query,
        })
    }

    /// Each query term's contribution to `doc`'s score, for people tuning a
    /// catalog (`botcraft tools search --explain`).
    pub fn explain(&self, query: &SearchQuery, doc: usize) -> Vec<(String, f32)> {
        let (text, _) = cut(&query.text);
        let active = active_fields(&query.fields);
        let mut out = Vec::new();
        for (term, token, weight) in self.query_terms(text) {
            let mut scores = vec![0f32; self.docs.len()];
            self.accumulate(term, weight, &active, &mut scores);
            if let Some(score) = scores.get(doc).copied().filter(|s| *s > 0.0) {
                out.push((token, score));
            }
        }
        out
    }

    /// Known query terms with their weights (synonyms weigh less; see
    /// [`crate::tokenize::SYNONYM_WEIGHT`]).
    fn query_terms(&self, text: &str) -> Vec<(u32, String, f32)> {
        let mut seen: Vec<(u32, String, f32)> = Vec::new();
        let tokens = if self.weights.synonyms {
            self.tokenizer.query_tokens(text)
        } else {
            self.tokenizer
                .tokens(text)
                .into_iter()
                .map(|t| (t, 1.0))
                .collect()
        };
        for (token, weight) in tokens {
            if let Some(&term) = self.terms.get(&token)
                && !seen.iter().any(|(t, _, _)| *t == term)
            {
                seen.push((term, token, weight));
            }
        }
        seen
    }

    fn accumulate(&self, term: u32, weight: f32, active: &[bool; FIELDS], scores: &mut [f32]) {
        let list = &self.postings[term as usize];
        let n = self.docs.len() as f32;
        let df = list.len() as f32;
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        let Weights { k1, b, .. } = self.weights;
        for posting in list {
            let length = &self.lengths[posting.doc as usize];
            let mut tf = 0f32;
            for field in 0..FIELDS {
                if !active[field] || posting.tf[field] == 0 {
                    continue;
                }
                let norm = 1.0 - b + b * (length[field] as f32 / self.average[field]);
                tf += self.weights.of(field) * f32::from(posting.tf[field]) / norm;
            }
            if tf > 0.0 {
                scores[posting.doc as usize] += weight * idf * tf * (k1 + 1.0) / (tf + k1);
            }
        }
    }

    fn mark_names(&self, text: &str, tiers: &mut [u8]) {
        let whole = name_key(text);
        if let Some(docs) = self.name_keys.get(&whole) {
            for &doc in docs {
                tiers[doc as usize] = 2;
            }
        }
        // A word written as an identifier names a tool.
        for word in text.split_whitespace() {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
            let identifier = split_words(word).len() > 1;
            if !identifier {
                continue;
            }
            if let Some(docs) = self.name_keys.get(&name_key(word)) {
                for &doc in docs {
                    tiers[doc as usize] = 2;
                }
            }
        }
        if whole.chars().count() >= 6 {
            for (key, docs) in &self.name_keys {
                if key.len().abs_diff(whole.len()) <= 1 && one_edit_apart(key, &whole) {
                    for &doc in docs {
                        let tier = &mut tiers[doc as usize];
                        *tier = (*tier).max(1);
                    }
                }
            }
        }
    }

    fn allowed_docs(&self, servers: &[String]) -> Option<Vec<bool>> {
        if servers.is_empty() {
            return None;
        }
        Some(
            self.docs
                .iter()
                .map(|d| servers.contains(&d.server))
                .collect(),
        )
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
