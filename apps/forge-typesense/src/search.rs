//! The two tools' logic: their parameters (as in seed §4.3–4.4), the search
//! requests they send, and the text they answer with.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use server_kit::ToolFailure;

use crate::client::{Hit, MultiSearchResponse, SearchResult, UpstreamError};
use crate::filters::{self, FilterError};

pub const DEFAULT_LIMIT: u32 = 5;
pub const MAX_LIMIT: u32 = 50;
/// What stands in for a missing summary or snippet.
pub const NONE: &str = "(none)";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchKnowledgeParams {
    /// Search query — keywords or natural language
    pub query: String,
    /// Filter by department
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub department: Option<String>,
    /// Filter by project name
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub project: Option<String>,
    /// Filter by document type
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub doc_type: Option<String>,
    /// Filter by source: repo or website
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub source: Option<String>,
    /// Filter by status
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub status: Option<String>,
    /// Filter by visibility
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub visibility: Option<String>,
    /// Filter by owner
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub owner: Option<String>,
    /// Max results
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "limit_schema")]
    pub limit: Option<f64>,
}

/// `limit` as the seed's zod declares it: a number from 1 to 50, default 5.
fn limit_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "number",
        "minimum": 1,
        "maximum": 50,
        "default": 5,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FileSummaryParams {
    /// Relative file path, e.g. Forge/README.md
    pub path: String,
}

/// A bad argument the model can fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("limit must be a whole number from 1 to {MAX_LIMIT}, not {0}.")]
    Limit(String),
    #[error(transparent)]
    Filter(#[from] FilterError),
    #[error(
        "The path is empty: give a file path relative to the repository root, e.g. Forge/README.md."
    )]
    EmptyPath,
}

impl From<InputError> for ToolFailure {
    fn from(error: InputError) -> Self {
        ToolFailure::tool(error.to_string())
    }
}

impl SearchKnowledgeParams {
    pub fn limit(&self) -> Result<u32, InputError> {
        match self.limit {
            None => Ok(DEFAULT_LIMIT),
            Some(limit)
                if limit.fract() == 0.0 && (1.0..=f64::from(MAX_LIMIT)).contains(&limit) =>
            {
                Ok(limit as u32)
            }
            Some(limit) => Err(InputError::Limit(limit.to_string())),
        }
    }

    /// The `filter_by` of the non-empty filters, in the seed's order.
    pub fn filter_by(&self) -> Result<Option<String>, InputError> {
        Ok(filters::filter_by(&[
            ("department", self.department.as_deref()),
            ("project", self.project.as_deref()),
            ("type", self.doc_type.as_deref()),
            ("source", self.source.as_deref()),
            ("status", self.status.as_deref()),
            ("visibility", self.visibility.as_deref()),
            ("owner", self.owner.as_deref()),
        ])?)
    }

    /// The one search of `search_knowledge`.
    pub fn search(&self, collection: &str) -> Result<Value, InputError> {
        let mut search = json!({
            "collection": collection,
            "q": self.query,
            "query_by": "title,summary,content",
            "per_page": self.limit()?,
        });
        if let Some(filter) = self.filter_by()? {
            search["filter_by"] = Value::String(filter);
        }
        Ok(search)
    }
}

impl FileSummaryParams {
    /// The path as stored: trimmed, without a leading `./`.
    pub fn normalized_path(&self) -> Result<String, InputError> {
        let path = self.path.trim();
        let path = path.strip_prefix("./").unwrap_or(path);
        if path.is_empty() {
            return Err(InputError::EmptyPath);
        }
        Ok(path.to_owned())
    }

    /// The path's `filter_by`: an exact match.
    pub fn filter_by(&self) -> Result<String, InputError> {
        Ok(filters::exact("path", &self.normalized_path()?)?)
    }

    /// The one search of `get_file_summary`.
    pub fn search(&self, collection: &str) -> Result<Value, InputError> {
        Ok(json!({
            "collection": collection,
            "q": "*",
            "query_by": "path",
            "filter_by": self.filter_by()?,
            "per_page": 1,
        }))
    }
}

/// The single result of a one-search `multi_search`, or why there is none.
pub fn only_result(
    response: MultiSearchResponse,
    collection: &str,
    url: &str,
) -> Result<(u64, Vec<Hit>), UpstreamError> {
    let bad = |detail: &str| UpstreamError::BadPayload {
        url: url.to_owned(),
        detail: detail.to_owned(),
    };
    let Some(result) = response.results.into_iter().next() else {
        return Err(bad("`results` is empty"));
    };
    match result {
        SearchResult {
            error: Some(message),
            code,
            ..
        } => {
            let code = code.unwrap_or(0);
            let hint = if code == 404 {
                format!(
                    " Does the collection exist? Create and fill it with `forge-typesense index` (TYPESENSE_COLLECTION is \"{collection}\")."
                )
            } else {
                String::new()
            };
            Err(UpstreamError::SearchFailed {
                collection: collection.to_owned(),
                code,
                message,
                hint,
            })
        }
        SearchResult {
            found: Some(found),
            hits: Some(hits),
            ..
        } => Ok((found, hits)),
        _ => Err(bad("a search result without `found` and `hits`")),
    }
}

fn text_field(hit: &Hit, field: &str) -> Option<String> {
    match hit.document.get(field)? {
        Value::String(text) if !text.trim().is_empty() => Some(one_line(text)),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The snippet of `field` in the current `highlight` form: an object with
/// `snippet`, or an array of them (array fields).
fn current_snippet(hit: &Hit, field: &str) -> Option<String> {
    let value = hit.highlight.as_ref()?.get(field)?;
    let first = match value {
        Value::Array(items) => items.iter().find_map(|item| item.get("snippet")),
        other => other.get("snippet"),
    };
    first.and_then(Value::as_str).map(str::to_owned)
}

/// The snippet of `field` in the older `highlights[]` form.
fn old_snippet(hit: &Hit, field: &str) -> Option<String> {
    hit.highlights
        .as_ref()?
        .iter()
        .filter(|highlight| highlight.field == field)
        .find_map(|highlight| {
            highlight
                .snippet
                .clone()
                .or_else(|| highlight.snippets.as_ref()?.first().cloned())
        })
}

/// The snippet shown for a hit: the highlight of `content`, then of
/// `summary`, from `highlight` or else `highlights[]`, on one line.
pub fn snippet(hit: &Hit) -> Option<String> {
    ["content", "summary"]
        .iter()
        .find_map(|field| current_snippet(hit, field).or_else(|| old_snippet(hit, field)))
        .map(|snippet| one_line(&snippet))
        .filter(|snippet| !snippet.is_empty())
}

/// The seed §4.3 format.
pub fn render_results(found: u64, hits: &[Hit]) -> String {
    let mut blocks = vec![format!(
        "Found {found} result(s). Showing top {}:",
        hits.len()
    )];
    for (index, hit) in hits.iter().enumerate() {
        let path = text_field(hit, "path").unwrap_or_else(|| NONE.to_owned());
        let title = text_field(hit, "title").unwrap_or_else(|| path.clone());
        let score = hit
            .text_match
            .map(|score| score.to_string())
            .unwrap_or_else(|| NONE.to_owned());
        blocks.push(format!(
            "{}. {title}\n   Path: {path}\n   Summary: {}\n   Snippet: {}\n   Score: {score}",
            index + 1,
            text_field(hit, "summary").unwrap_or_else(|| NONE.to_owned()),
            snippet(hit).unwrap_or_else(|| NONE.to_owned()),
        ));
    }
    blocks.join("\n\n")
}

/// What `get_file_summary` answers for a stored document.
pub fn render_file_summary(hit: &Hit, asked_path: &str) -> String {
    let path = text_field(hit, "path").unwrap_or_else(|| asked_path.to_owned());
    let title = text_field(hit, "title").unwrap_or_else(|| path.clone());
    match text_field(hit, "summary") {
        Some(summary) => format!("Title: {title}\nPath: {path}\nSummary: {summary}"),
        None => format!(
            "Title: {title}\nPath: {path}\nSummary: none stored. Re-index the repository with `forge-typesense index` to store one (it comes from the file's `summary:` frontmatter or its first paragraph)."
        ),
    }
}

/// The `get_file_summary` failure for a path the index does not hold.
pub fn not_indexed(path: &str, collection: &str) -> ToolFailure {
    ToolFailure::tool(format!(
        "No document with path \"{path}\" in the Typesense collection \"{collection}\". Paths are relative to the repository root (e.g. Forge/README.md). If the file is new, re-index with `forge-typesense index`."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn params(arguments: Value) -> SearchKnowledgeParams {
        serde_json::from_value(arguments).expect("params")
    }

    fn hit(value: Value) -> Hit {
        serde_json::from_value(value).expect("hit")
    }

    #[test]
    fn the_search_request_has_the_seed_parameters() {
        let search = params(json!({
            "query": "taxonomy",
            "department": "Forge",
            "type": "readme",
            "owner": "",
            "limit": 10
        }))
        .search("uvilo")
        .expect("search");
        assert_eq!(
            search,
            json!({
                "collection": "uvilo",
                "q": "taxonomy",
                "query_by": "title,summary,content",
                "per_page": 10,
                "filter_by": "department:=`Forge` && type:=`readme`"
            })
        );
        let plain = params(json!({"query": "x"})).search("c").expect("search");
        assert_eq!(plain["per_page"], 5);
        assert_eq!(plain.get("filter_by"), None);
    }

    #[test]
    fn limit_is_a_whole_number_from_1_to_50() {
        let cases = [
            (json!(1), Ok(1)),
            (json!(50), Ok(50)),
            (json!(7.0), Ok(7)),
            (
                json!(0),
                Err("limit must be a whole number from 1 to 50, not 0."),
            ),
            (
                json!(51),
                Err("limit must be a whole number from 1 to 50, not 51."),
            ),
            (
                json!(2.5),
                Err("limit must be a whole number from 1 to 50, not 2.5."),
            ),
        ];
        for (limit, expected) in cases {
            let actual = params(json!({"query": "x", "limit": limit}))
                .limit()
                .map_err(|e| e.to_string());
            assert_eq!(actual, expected.map_err(str::to_owned), "for {limit}");
        }
    }

    #[test]
    fn snippets_prefer_content_then_summary_in_both_forms() {
        let cases = [
            (
                json!({"document": {}, "highlight": {
                    "summary": {"snippet": "from <mark>summary</mark>"},
                    "content": {"snippet": "from\n<mark>content</mark>"}
                }}),
                Some("from <mark>content</mark>"),
            ),
            (
                json!({"document": {}, "highlight": {"title": {"snippet": "t"}, "summary": {"snippet": "s"}}}),
                Some("s"),
            ),
            (
                json!({"document": {}, "highlight": {"content": [{"snippet": "first"}, {"snippet": "second"}]}}),
                Some("first"),
            ),
            (
                json!({"document": {}, "highlights": [
                    {"field": "summary", "snippet": "old summary"},
                    {"field": "content", "snippet": "old content"}
                ]}),
                Some("old content"),
            ),
            (
                json!({"document": {}, "highlights": [{"field": "content", "snippets": ["a", "b"]}]}),
                Some("a"),
            ),
            (
                json!({"document": {}, "highlight": {}, "highlights": [{"field": "summary", "snippet": "old"}]}),
                Some("old"),
            ),
            (
                json!({"document": {}, "highlight": {"title": {"snippet": "t"}}}),
                None,
            ),
            (json!({"document": {}}), None),
        ];
        for (value, expected) in cases {
            assert_eq!(
                snippet(&hit(value.clone())).as_deref(),
                expected,
                "for {value}"
            );
        }
    }

    #[test]
    fn a_search_error_inside_a_200_is_an_http_error_with_a_hint() {
        let response: MultiSearchResponse =
            serde_json::from_value(json!({"results": [{"code": 404, "error": "Not found."}]}))
                .expect("response");
        let error = only_result(response, "uvilo", "http://h/multi_search").expect_err("404");
        assert_eq!(
            error.to_string(),
            "Typesense could not run the search on collection \"uvilo\": Not found. (code 404). Does the collection exist? Create and fill it with `forge-typesense index` (TYPESENSE_COLLECTION is \"uvilo\")."
        );
    }
}
