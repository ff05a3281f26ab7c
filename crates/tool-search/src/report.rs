//! What `botcraft tools search` prints, kept pure here so the CLI only reads
//! files and writes text: the human ranking (with `--explain`), the JSON
//! lines of `--queries`, and the parsing of a `--catalog` file.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::doc::ToolDoc;
use crate::index::{SearchResult, ToolIndex};
use crate::query::{SearchError, SearchQuery};

/// A catalog file: a JSON list of `{server, name, description, inputSchema}`.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("the catalog is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the catalog must be a JSON list of tools")]
    NotAList,
    #[error("catalog entry {index} has no {field:?}")]
    Missing { index: usize, field: &'static str },
}

/// Parse a catalog file's text into documents.
pub fn parse_catalog(text: &str) -> Result<Vec<ToolDoc>, CatalogError> {
    let value: Value = serde_json::from_str(text)?;
    let list = value.as_array().ok_or(CatalogError::NotAList)?;
    list.iter()
        .enumerate()
        .map(|(index, tool)| {
            let server = tool["server"].as_str().ok_or(CatalogError::Missing {
                index,
                field: "server",
            })?;
            if tool["name"].as_str().is_none() {
                return Err(CatalogError::Missing {
                    index,
                    field: "name",
                });
            }
            let context = tool["instructions"].as_str().unwrap_or_default();
            Ok(ToolDoc::from_mcp(server, tool, context))
        })
        .collect()
}

/// One line of a `--queries` file: `{"q": …, "mcp_server"?: string | [string]}`.
#[derive(Debug, Clone, Deserialize)]
pub struct QueryLine {
    pub q: String,
    #[serde(default)]
    pub mcp_server: Option<ServerList>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ServerList {
    One(String),
    Many(Vec<String>),
}

impl QueryLine {
    pub fn query(&self, max_results: usize) -> SearchQuery {
        let servers = match &self.mcp_server {
            None => Vec::new(),
            Some(ServerList::One(s)) => vec![s.clone()],
            Some(ServerList::Many(list)) => list.clone(),
        };
        SearchQuery::new(self.q.clone())
            .servers(servers)
            .max_results(max_results)
    }
}

/// The JSON line answering one query:
/// `{"q": …, "ranked": [{"server": …, "tool": …, "score": …}]}` (raw names). `vector` is the
/// query's embedding, for an index with vectors.
pub fn answer_line(
    index: &ToolIndex,
    line: &QueryLine,
    max_results: usize,
    vector: Option<Vec<f32>>,
) -> Value {
    let mut query = line.query(max_results);
    query.vector = vector;
    match index.search(&query) {
        Ok(result) => json!({ "q": line.q, "ranked": ranked(index, &result) }),
        Err(error) => json!({ "q": line.q, "ranked": [], "error": error.to_string() }),
    }
}

fn ranked(index: &ToolIndex, result: &SearchResult) -> Vec<Value> {
    result
        .hits
        .iter()
        .map(|hit| {
            let doc = index.doc(hit.doc);
            json!({ "server": doc.server, "tool": doc.name, "score": round(hit.score) })
        })
        .collect()
}

fn rank(rank: Option<u32>) -> String {
    rank.map_or("-".to_owned(), |r| r.to_string())
}

fn round(score: f32) -> f64 {
    (f64::from(score) * 1000.0).round() / 1000.0
}

/// The ranking as text for people: rank, server/tool, score, and with `explain` both
/// signals (BM25F score and rank, cosine and rank) and each query term's BM25F part.
pub fn ranking_text(
    index: &ToolIndex,
    query: &SearchQuery,
    explain: bool,
) -> Result<String, SearchError> {
    let result = index.search(query)?;
    let mut out = String::new();
    if result.truncated_query {
        out.push_str("(query cut to its first 512 characters)\n");
    }
    if result.hits.is_empty() {
        out.push_str("No tools matched.\n");
        return Ok(out);
    }
    for (rank, hit) in result.hits.iter().enumerate() {
        let doc = index.doc(hit.doc);
        let tier = match hit.tier {
            3 => "  [exact qualified name]",
            2 => "  [exact name]",
            1 => "  [near-exact name]",
            _ => "",
        };
        out.push_str(&format!(
            "{:>2}. {}/{}  score {:.3}{tier}\n",
            rank + 1,
            doc.server,
            doc.name,
            hit.score
        ));
        let first_line = doc.description.lines().next().unwrap_or_default();
        if !first_line.is_empty() {
            out.push_str(&format!("    {first_line}\n"));
        }
        if explain {
            let s = hit.signals;
            let dense = match s.dense {
                Some(cosine) => format!("dense {cosine:.3} (rank {})", self::rank(s.dense_rank)),
                None => "dense off".to_owned(),
            };
            out.push_str(&format!(
                "    fused rank {}: bm25 {:.3} (rank {}), {dense}\n",
                rank + 1,
                s.lexical,
                self::rank(s.lexical_rank),
            ));
            for (term, score) in index.explain(query, hit.doc) {
                out.push_str(&format!("    {term:<16} {score:.3}\n"));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const CATALOG: &str = r#"[
        {"server": "fs", "name": "read_text_file", "description": "Read a text file", "inputSchema": {"type": "object"}},
        {"server": "web", "name": "fetch", "description": "Fetch a web page", "inputSchema": {"type": "object"}}
    ]"#;

    #[test]
    fn catalog_files_parse_and_bad_ones_say_why() {
        assert_eq!(parse_catalog(CATALOG).expect("catalog").len(), 2);
        assert!(matches!(parse_catalog("{}"), Err(CatalogError::NotAList)));
        assert!(matches!(
            parse_catalog(r#"[{"name": "x"}]"#),
            Err(CatalogError::Missing {
                index: 0,
                field: "server"
            })
        ));
    }

    #[test]
    fn answer_lines_use_raw_names() {
        let index = ToolIndex::build(parse_catalog(CATALOG).expect("catalog"));
        let line: QueryLine = serde_json::from_str(r#"{"q": "read a file"}"#).expect("line");
        let answer = answer_line(&index, &line, 5, None);
        assert_eq!(answer["q"], "read a file");
        assert_eq!(answer["ranked"][0]["server"], "fs");
        assert_eq!(answer["ranked"][0]["tool"], "read_text_file");
        let filtered: QueryLine =
            serde_json::from_str(r#"{"q": "read a file", "mcp_server": ["web"]}"#).expect("line");
        assert_eq!(answer_line(&index, &filtered, 5, None)["ranked"], json!([]));
    }

    #[test]
    fn ranking_text_marks_exact_names_and_explains() {
        let index = ToolIndex::build(parse_catalog(CATALOG).expect("catalog"));
        let text = ranking_text(&index, &SearchQuery::new("read_text_file"), true).expect("text");
        let first = text.lines().next().expect("a line");
        assert!(first.starts_with(" 1. fs/read_text_file  score "), "{text}");
        assert!(first.ends_with("[exact name]"), "{text}");
        assert!(text.contains("    read "), "{text}");
        assert!(
            text.contains("    fused rank 1: bm25 ") && text.contains("dense off"),
            "{text}"
        );
    }
}
