//! Fuzzy matching: the ranking behind `find` and the "did you mean" of
//! not-found errors.
//!
//! Text is split into lowercase words (at non-alphanumerics and camelCase
//! humps). A query word matches a candidate word exactly (1.0), as a prefix
//! (0.8–0.95: partial words), inside it (0.7), or within a small edit
//! distance (typos: optimal-string-alignment similarity ≥ 0.7, scaled by 0.85,
//! also against a prefix of the same length). Each query word takes its best
//! match over the candidate's name (weight 1.0), its department (0.8) and its
//! description (0.6); a candidate's score is the mean over query words, or the
//! similarity of the whole query to the whole name when that is higher. The
//! mean is scaled by 0.9 + 0.1 × the share of name words some query word
//! matched, so a name the query covers wholly ranks first.

use std::collections::HashMap;

/// Candidates scoring below this are not hits.
pub const MIN_SCORE: f64 = 0.5;

/// A name is suggested ("did you mean") when this close: the better of the
/// word similarity and Jaro–Winkler.
const SUGGESTION_MIN_SCORE: f64 = 0.8;
const DEPARTMENT_WEIGHT: f64 = 0.8;
const DESCRIPTION_WEIGHT: f64 = 0.6;
/// How much of a score depends on the share of the name's words matched.
const COVERAGE_WEIGHT: f64 = 0.1;
const TYPO_THRESHOLD: f64 = 0.7;
const TYPO_SCALE: f64 = 0.85;

/// What a hit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Department,
    Project,
    Skill,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Department => "department",
            Kind::Project => "project",
            Kind::Skill => "skill",
        }
    }
}

/// Something `find` can return.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub kind: Kind,
    pub name: String,
    /// The department a project or skill belongs to.
    pub department: Option<String>,
    pub description: Option<String>,
    /// Relative to the repository root, `/` separators.
    pub path: String,
}

/// A candidate with its score in 0..=1.
#[derive(Debug, Clone)]
pub struct Hit {
    pub candidate: Candidate,
    pub score: f64,
}

/// Characters of a query read ([`Query::new`]).
pub const MAX_QUERY_CHARS: usize = 1_000;
/// Words of a query scored ([`Query::new`]).
pub const MAX_QUERY_WORDS: usize = 32;

/// A query split into words once, scored against many candidates.
#[derive(Debug, Clone)]
pub struct Query {
    words: Vec<String>,
    joined: String,
}

impl Query {
    /// `None` when the query has no letters or digits. A query is read up to
    /// [`MAX_QUERY_CHARS`] characters and [`MAX_QUERY_WORDS`] words: a ranking
    /// scores each query word against every word of every candidate, so a
    /// query of thousands of words would cost (and memoise) thousands of times
    /// more.
    pub fn new(text: &str) -> Option<Query> {
        let text = text
            .char_indices()
            .nth(MAX_QUERY_CHARS)
            .map_or(text, |(end, _)| &text[..end]);
        let mut words = words(text);
        words.truncate(MAX_QUERY_WORDS);
        if words.is_empty() {
            return None;
        }
        let joined = words.concat();
        Some(Query { words, joined })
    }

    fn score_with(&self, candidate: &Candidate, memo: &mut Memo) -> f64 {
        let name = words(&candidate.name);
        // name_matches[q][n]: query word q against name word n.
        let name_matches: Vec<Vec<f64>> = self
            .words
            .iter()
            .map(|q| name.iter().map(|n| word_similarity(q, n)).collect())
            .collect();
        let department = candidate.department.as_deref().map(words);
        let description = candidate.description.as_deref().map(words);
        let mut total = 0.0;
        for (index, query_word) in self.words.iter().enumerate() {
            let mut best_here = name_matches[index].iter().copied().fold(0.0, f64::max);
            // A weighted field can only win when it could beat the name.
            if best_here < DEPARTMENT_WEIGHT
                && let Some(department) = &department
            {
                best_here =
                    best_here.max(memo.best(index, query_word, department) * DEPARTMENT_WEIGHT);
            }
            if best_here < DESCRIPTION_WEIGHT
                && let Some(description) = &description
            {
                best_here =
                    best_here.max(memo.best(index, query_word, description) * DESCRIPTION_WEIGHT);
            }
            total += best_here;
        }
        let mean = total / self.words.len() as f64;
        // Of two names the query matches equally well, prefer the one it
        // covers more of ("taxonomy" over "taxonomy-tagging").
        let covered = (0..name.len())
            .filter(|&n| name_matches.iter().any(|row| row[n] > 0.0))
            .count();
        let coverage = covered as f64 / name.len().max(1) as f64;
        let whole = word_similarity(&self.joined, &name.concat());
        (mean * (1.0 - COVERAGE_WEIGHT + COVERAGE_WEIGHT * coverage)).max(whole)
    }

    /// The candidates scoring at least [`MIN_SCORE`], best first; ties by
    /// kind (department, project, skill), then path.
    pub fn rank(&self, candidates: Vec<Candidate>) -> Vec<Hit> {
        let mut memo = Memo::default();
        let mut hits: Vec<Hit> = candidates
            .into_iter()
            .filter_map(|candidate| {
                let score = self.score_with(&candidate, &mut memo);
                (score >= MIN_SCORE).then_some(Hit { candidate, score })
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.candidate.kind.cmp(&b.candidate.kind))
                .then_with(|| a.candidate.path.cmp(&b.candidate.path))
        });
        hits
    }
}

/// The name in `names` most like `wanted`, if any is close enough to suggest.
pub fn closest(wanted: &str, names: &[String]) -> Option<String> {
    let query = Query::new(wanted)?;
    names
        .iter()
        .map(|name| {
            let joined = words(name).concat();
            let edit = word_similarity(&query.joined, &joined);
            let shape = strsim::jaro_winkler(&query.joined, &joined);
            (edit.max(shape), name)
        })
        .filter(|(score, _)| *score >= SUGGESTION_MIN_SCORE)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, name)| name.clone())
}

/// Word similarities already computed during one ranking, by query word
/// index then candidate word: departments and descriptions repeat words a lot.
#[derive(Debug, Default)]
struct Memo {
    by_query_word: HashMap<usize, HashMap<String, f64>>,
}

impl Memo {
    fn best(&mut self, index: usize, query_word: &str, words: &[String]) -> f64 {
        let seen = self.by_query_word.entry(index).or_default();
        let mut best = 0.0f64;
        for word in words {
            let similarity = match seen.get(word) {
                Some(similarity) => *similarity,
                None => {
                    let similarity = word_similarity(query_word, word);
                    seen.insert(word.clone(), similarity);
                    similarity
                }
            };
            best = best.max(similarity);
        }
        best
    }
}

/// How well query word `query` matches candidate word `word`, in 0..=1.
pub fn word_similarity(query: &str, word: &str) -> f64 {
    if query.is_empty() || word.is_empty() {
        return 0.0;
    }
    if query == word {
        return 1.0;
    }
    let query_len = query.chars().count();
    let word_len = word.chars().count();
    if query_len >= 2 && word.starts_with(query) {
        return 0.8 + 0.15 * query_len as f64 / word_len as f64;
    }
    if query_len >= 3 && word.contains(query) {
        return 0.7;
    }
    let whole = edit_similarity(query, query_len, word, word_len);
    let prefix = if query_len >= 4 && word_len > query_len {
        let head: String = word.chars().take(query_len).collect();
        edit_similarity(query, query_len, &head, query_len) * 0.9
    } else {
        0.0
    };
    let typo = whole.max(prefix);
    if typo >= TYPO_THRESHOLD {
        typo * TYPO_SCALE
    } else {
        0.0
    }
}

/// 1 − (edit distance / longer length), with adjacent transpositions as one
/// edit (optimal string alignment). Pairs whose lengths alone rule out the
/// typo threshold are not compared.
fn edit_similarity(a: &str, a_len: usize, b: &str, b_len: usize) -> f64 {
    let longer = a_len.max(b_len) as f64;
    if 1.0 - a_len.abs_diff(b_len) as f64 / longer < TYPO_THRESHOLD {
        return 0.0;
    }
    1.0 - strsim::osa_distance(a, b) as f64 / longer
}

/// Lowercase words: split at non-alphanumerics and camelCase humps.
pub fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_numeric();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn candidate(kind: Kind, name: &str, department: Option<&str>, description: &str) -> Candidate {
        Candidate {
            kind,
            name: name.to_owned(),
            department: department.map(str::to_owned),
            description: Some(description.to_owned()),
            path: match department {
                Some(d) => format!("{d}/{name}"),
                None => name.to_owned(),
            },
        }
    }

    /// A query of 30,000 words is scored as its first 32: the same hits as
    /// those words alone, and a memo of at most 32 query words.
    #[test]
    fn a_huge_query_is_scored_as_its_first_words() {
        let huge = format!("taxonomy {}", "zq ".repeat(30_000));
        let query = Query::new(&huge).expect("a query");
        assert_eq!(query.words.len(), MAX_QUERY_WORDS);
        let first: String = huge
            .split_whitespace()
            .take(MAX_QUERY_WORDS)
            .collect::<Vec<_>>()
            .join(" ");
        let scores = |query: &Query| -> Vec<(String, u64)> {
            query
                .rank(sample())
                .into_iter()
                .map(|hit| (hit.candidate.path, (hit.score * 1e9) as u64))
                .collect()
        };
        assert_eq!(
            scores(&query),
            scores(&Query::new(&first).expect("a query"))
        );
    }

    fn sample() -> Vec<Candidate> {
        vec![
            candidate(Kind::Department, "Forge", None, "Builds the tools."),
            candidate(Kind::Department, "Marketing", None, "Tells the story."),
            candidate(
                Kind::Project,
                "Taxonomy",
                Some("Forge"),
                "Classify documents.",
            ),
            candidate(
                Kind::Project,
                "BrandRefresh",
                Some("Marketing"),
                "New logo.",
            ),
            candidate(
                Kind::Skill,
                "pdf-tools",
                Some("Forge"),
                "Extract text from PDF files.",
            ),
        ]
    }

    #[test]
    fn words_split_on_separators_and_humps() {
        assert_eq!(
            words("BrandRefresh pdf-tools  Q3_plan v2Final"),
            [
                "brand", "refresh", "pdf", "tools", "q3", "plan", "v2", "final"
            ]
        );
    }

    #[test]
    fn queries_tolerate_typos_and_partial_words() {
        let cases = [
            ("taxonomy", "Taxonomy"),
            ("taxnomy", "Taxonomy"),
            ("tax", "Taxonomy"),
            ("markting", "Marketing"),
            ("brand refresh", "BrandRefresh"),
            ("brandrefresh", "BrandRefresh"),
            ("pdf", "pdf-tools"),
            ("extract pdf", "pdf-tools"),
            ("forge", "Forge"),
        ];
        for (query, top) in cases {
            let hits = Query::new(query).expect("query").rank(sample());
            let first = hits.first().map(|h| h.candidate.name.as_str());
            assert_eq!(first, Some(top), "for {query:?}: {hits:?}");
        }
    }

    #[test]
    fn unrelated_queries_find_nothing() {
        for query in ["zebra", "qqq", "x"] {
            let hits = Query::new(query).expect("query").rank(sample());
            assert!(hits.is_empty(), "for {query:?}: {hits:?}");
        }
    }

    #[test]
    fn an_empty_query_is_none() {
        assert!(Query::new("  -- ").is_none());
    }

    #[test]
    fn closest_suggests_a_near_name() {
        let names: Vec<String> = ["Forge", "Marketing", "Sales"].map(String::from).to_vec();
        let cases = [
            ("Forj", Some("Forge")),
            ("marketng", Some("Marketing")),
            ("Engineering", None),
        ];
        for (wanted, expected) in cases {
            assert_eq!(closest(wanted, &names).as_deref(), expected, "for {wanted}");
        }
    }
}
