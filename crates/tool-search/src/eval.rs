//! Retrieval evaluation of an index over queries with known right answers, overall, per
//! kind of query, and for the queries with several right tools: success@1 and success@5 (a
//! right tool at rank 1, in the first five: what earlier reports called "recall@k"), MRR@10,
//! true recall@5 (the share of a query's right tools in the first five) and nDCG@10 (binary
//! relevance). Pure: the caller reads the files and computes any vectors.
//!
//! The data (`eval/` in this crate) is `tools/list` captured from real MCP
//! servers, one file per server ([`ServerCapture`]), and queries in JSON
//! lines ([`EvalQuery`]) split into `dev.jsonl` (every tuning decision) and
//! `test.jsonl` (written before tuning, reported, never tuned on).

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::Value;

use crate::doc::ToolDoc;
use crate::index::ToolIndex;
use crate::query::SearchQuery;
use crate::tokenize::Tokenizer;

/// A `(server, tool)` pair.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub struct ToolRef {
    pub server: String,
    pub tool: String,
}

/// How a query was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryKind {
    /// Says what the tool does in the catalog's own words.
    Direct,
    /// Shares no content word with the right tool's name or description.
    Paraphrase,
    /// A task several tools serve; any of them is right.
    Task,
}

/// One evaluation query:
/// `{"q": …, "kind": "direct" | "paraphrase" | "task", "relevant": [{"server", "tool"}]}`.
#[derive(Debug, Clone, Deserialize)]
pub struct EvalQuery {
    pub q: String,
    #[serde(default = "direct")]
    pub kind: QueryKind,
    pub relevant: Vec<ToolRef>,
}

fn direct() -> QueryKind {
    QueryKind::Direct
}

/// Parse a JSON-lines query file; errors name the line.
pub fn parse_queries(text: &str) -> Result<Vec<EvalQuery>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(number, line)| {
            serde_json::from_str(line).map_err(|e| format!("line {}: {e}", number + 1))
        })
        .collect()
}

/// One server's captured `tools/list` (`eval/servers/NAME.json`).
#[derive(Debug, Clone, Deserialize)]
pub struct ServerCapture {
    pub server: String,
    pub package: Package,
    #[serde(default)]
    pub instructions: String,
    pub tools: Vec<Value>,
}

/// Where a captured server comes from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Package {
    pub registry: String,
    pub name: String,
    pub version: String,
}

impl ServerCapture {
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The server's tools as documents, with its instructions as context.
    pub fn docs(&self) -> Vec<ToolDoc> {
        self.tools
            .iter()
            .map(|tool| ToolDoc::from_mcp(&self.server, tool, &self.instructions))
            .collect()
    }
}

/// A captured server file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a captured server: {source}")]
    Parse {
        path: std::path::PathBuf,
        source: serde_json::Error,
    },
}

/// Every `*.json` capture in `dir` (the evaluation's `eval/servers`), in file-name order.
pub fn load_captures(dir: &std::path::Path) -> Result<Vec<ServerCapture>, CaptureError> {
    let read_error = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| CaptureError::Read { path, source }
    };
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(read_error(dir))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(read_error(&path))?;
            ServerCapture::parse(&text).map_err(|source| CaptureError::Parse { path, source })
        })
        .collect()
}

/// Whether `query` shares no content word (stemmed, stop words dropped)
/// with the name or description of any of `relevant`: the rule a query
/// labelled [`QueryKind::Paraphrase`] must meet.
pub fn shares_no_word(query: &str, relevant: &[&ToolDoc]) -> bool {
    let tokenizer = Tokenizer::default();
    let words: BTreeSet<String> = tokenizer.tokens(query).into_iter().collect();
    relevant.iter().all(|doc| {
        let mut tool_words = tokenizer.tokens(&doc.name);
        tool_words.extend(tokenizer.tokens(&doc.description));
        tool_words.iter().all(|w| !words.contains(w))
    })
}

/// Token Jaccard similarity of two queries: their content words (stemmed, stop words
/// dropped) in common over all of theirs.
pub fn token_jaccard(a: &str, b: &str) -> f64 {
    let tokenizer = Tokenizer::default();
    let a: BTreeSet<String> = tokenizer.tokens(a).into_iter().collect();
    let b: BTreeSet<String> = tokenizer.tokens(b).into_iter().collect();
    let union = a.union(&b).count();
    if union == 0 {
        return if a == b { 1.0 } else { 0.0 };
    }
    a.intersection(&b).count() as f64 / union as f64
}

/// The positions in `queries` of those that copy or nearly copy (token Jaccard ≥
/// `threshold`) a query of `held_out`: what a tuning split must not hold.
pub fn near_copies(queries: &[EvalQuery], held_out: &[EvalQuery], threshold: f64) -> Vec<usize> {
    queries
        .iter()
        .enumerate()
        .filter(|(_, query)| {
            held_out
                .iter()
                .any(|other| token_jaccard(&query.q, &other.q) >= threshold)
        })
        .map(|(at, _)| at)
        .collect()
}

/// The figures for one group of queries.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Metrics {
    pub queries: usize,
    /// Share of queries whose first hit is a right tool.
    pub success_at_1: f64,
    /// Share of queries with a right tool in the first five hits.
    pub success_at_5: f64,
    /// Mean reciprocal rank of the first right tool within the first ten hits (0 beyond).
    pub mrr_at_10: f64,
    /// Mean share of a query's right tools found in the first five hits (true recall).
    pub recall_at_5: f64,
    /// Mean nDCG@10 with binary relevance (the ideal ranks every right tool first).
    pub ndcg_at_10: f64,
}

/// One query answered wrong at rank 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Miss {
    pub query: String,
    /// 1-based rank of the first right tool, if in the first ten.
    pub rank: Option<usize>,
    /// The first three hits, `server/tool`.
    pub top: Vec<String>,
}

/// An evaluation's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub all: Metrics,
    pub direct: Metrics,
    pub paraphrase: Metrics,
    pub task: Metrics,
    /// The queries with two right tools or more (where recall and nDCG say more than success).
    pub multi: Metrics,
    pub misses: Vec<Miss>,
}

#[derive(Default)]
struct Tally {
    n: usize,
    first: usize,
    five: usize,
    reciprocal: f64,
    recall_at_5: f64,
    ndcg_at_10: f64,
}

impl Tally {
    /// One query: the 1-based ranks of its right tools within the first ten hits, and how
    /// many right tools it has.
    fn add(&mut self, ranks: &[usize], relevant: usize) {
        self.n += 1;
        if let Some(&rank) = ranks.iter().min() {
            self.first += usize::from(rank == 1);
            self.five += usize::from(rank <= 5);
            self.reciprocal += 1.0 / rank as f64;
        }
        let relevant = relevant.max(1);
        self.recall_at_5 += ranks.iter().filter(|&&r| r <= 5).count() as f64 / relevant as f64;
        let gain = |rank: usize| 1.0 / ((rank + 1) as f64).log2();
        let dcg: f64 = ranks.iter().map(|&r| gain(r)).sum();
        let ideal: f64 = (1..=relevant.min(10)).map(gain).sum();
        self.ndcg_at_10 += dcg / ideal;
    }

    fn metrics(&self) -> Metrics {
        let n = self.n.max(1) as f64;
        Metrics {
            queries: self.n,
            success_at_1: self.first as f64 / n,
            success_at_5: self.five as f64 / n,
            mrr_at_10: self.reciprocal / n,
            recall_at_5: self.recall_at_5 / n,
            ndcg_at_10: self.ndcg_at_10 / n,
        }
    }
}

/// Evaluate `index` on `queries`. `vectors`, when given, holds each query's
/// embedding (same order) for the dense signal. A query none of whose right
/// tools is in the index is an error: it would measure nothing.
pub fn evaluate(
    index: &ToolIndex,
    queries: &[EvalQuery],
    vectors: Option<&[Vec<f32>]>,
) -> Result<Report, String> {
    let mut tallies: [Tally; 5] = Default::default();
    let mut misses = Vec::new();
    for (i, query) in queries.iter().enumerate() {
        let right = |doc: &ToolDoc| {
            query
                .relevant
                .iter()
                .any(|r| r.server == doc.server && r.tool == doc.name)
        };
        if !index.docs().any(right) {
            return Err(format!(
                "query {:?}: no right tool is in the index",
                query.q
            ));
        }
        let mut search = SearchQuery::new(query.q.clone()).max_results(10);
        if let Some(vector) = vectors.and_then(|v| v.get(i)) {
            search = search.vector(vector.clone());
        }
        let result = index
            .search(&search)
            .map_err(|e| format!("query {:?}: {e}", query.q))?;
        let ranks: Vec<usize> = result
            .hits
            .iter()
            .enumerate()
            .filter(|(_, hit)| right(index.doc(hit.doc)))
            .map(|(at, _)| at + 1)
            .collect();
        let rank = ranks.first().copied();
        let kind = match query.kind {
            QueryKind::Direct => 1,
            QueryKind::Paraphrase => 2,
            QueryKind::Task => 3,
        };
        let relevant: BTreeSet<&ToolRef> = query.relevant.iter().collect();
        tallies[0].add(&ranks, relevant.len());
        tallies[kind].add(&ranks, relevant.len());
        if relevant.len() > 1 {
            tallies[4].add(&ranks, relevant.len());
        }
        if rank != Some(1) {
            misses.push(Miss {
                query: query.q.clone(),
                rank,
                top: result
                    .hits
                    .iter()
                    .take(3)
                    .map(|h| {
                        let doc = index.doc(h.doc);
                        format!("{}/{}", doc.server, doc.name)
                    })
                    .collect(),
            });
        }
    }
    Ok(Report {
        all: tallies[0].metrics(),
        direct: tallies[1].metrics(),
        paraphrase: tallies[2].metrics(),
        task: tallies[3].metrics(),
        multi: tallies[4].metrics(),
        misses,
    })
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

    #[test]
    fn paraphrase_rule_uses_stems_and_ignores_stop_words() {
        let read = doc("fs", "read_text_file", "Read the contents of a file");
        let cases = [
            ("show me what is inside the document", true),
            ("reading files", false),
            ("the contents, please", false),
            ("open it", true),
        ];
        for (query, expected) in cases {
            assert_eq!(shares_no_word(query, &[&read]), expected, "{query}");
        }
    }

    #[test]
    fn near_copies_are_found_by_token_jaccard() {
        let parse = |lines: &[&str]| {
            let text: Vec<String> = lines
                .iter()
                .map(|q| format!(r#"{{"q": {q:?}, "relevant": [{{"server": "s", "tool": "t"}}]}}"#))
                .collect();
            parse_queries(&text.join("\n")).expect("queries")
        };
        let held_out = parse(&["take a screenshot of the current page"]);
        let dev = parse(&[
            "Take a screenshot of the current page!",
            "take screenshots of the current pages",
            "take a screenshot of the page",
            "capture the page as an image",
        ]);
        // Stems and stop words: the same content words.
        assert_eq!(token_jaccard("open the file", "opening files"), 1.0);
        assert_eq!(near_copies(&dev, &held_out, 0.8), [0, 1]);
        assert_eq!(near_copies(&dev, &held_out, 0.6), [0, 1, 2]);
    }

    #[test]
    fn success_recall_and_ndcg_of_a_query_with_several_right_tools() {
        // Right tools at ranks 2 and 7 of ten, three right tools in all.
        let mut tally = Tally::default();
        tally.add(&[2, 7], 3);
        let gain = |rank: f64| 1.0 / (rank + 1.0).log2();
        let m = tally.metrics();
        assert_eq!(
            (m.success_at_1, m.success_at_5, m.mrr_at_10),
            (0.0, 1.0, 0.5)
        );
        assert!((m.recall_at_5 - 1.0 / 3.0).abs() < 1e-12, "{m:?}");
        let ndcg = (gain(2.0) + gain(7.0)) / (gain(1.0) + gain(2.0) + gain(3.0));
        assert!((m.ndcg_at_10 - ndcg).abs() < 1e-12, "{m:?}");
        // None found: zero everywhere.
        let mut none = Tally::default();
        none.add(&[], 2);
        assert_eq!(none.metrics().ndcg_at_10, 0.0);
    }

    #[test]
    fn metrics_count_ranks_per_kind() {
        let index = ToolIndex::build(vec![
            doc("fs", "read_file", "Read a file"),
            doc("fs", "write_file", "Write a file"),
            doc("web", "fetch", "Fetch a web page"),
        ]);
        let queries = parse_queries(
            r#"{"q": "read a file", "relevant": [{"server": "fs", "tool": "read_file"}]}
{"q": "file", "kind": "task", "relevant": [{"server": "web", "tool": "fetch"}]}
"#,
        )
        .expect("queries");
        let report = evaluate(&index, &queries, None).expect("evaluate");
        assert_eq!(report.all.queries, 2);
        assert_eq!(report.direct.success_at_1, 1.0);
        assert_eq!(report.task.queries, 1);
        assert_eq!(report.task.success_at_5, 0.0);
        assert_eq!(report.all.success_at_1, 0.5);
        assert_eq!(report.misses.len(), 1);
        assert!(parse_queries("{}").is_err());
        let missing = parse_queries(r#"{"q": "x", "relevant": [{"server": "no", "tool": "pe"}]}"#)
            .expect("queries");
        assert!(evaluate(&index, &missing, None).is_err());
    }
}
