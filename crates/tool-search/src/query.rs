//! What a search asks for, validated: the seed's `tool_search` input.

use serde::{Deserialize, Serialize};

/// Longest query text searched; longer queries are cut here and the result
/// says so.
pub const MAX_QUERY_CHARS: usize = 512;

/// Most servers a search may be limited to.
pub const MAX_SERVERS: usize = 64;

/// Which part of a tool a query is matched against (seed §9.2 `fields`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    Name,
    Description,
    Parameters,
}

/// A validated search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchQuery {
    pub text: String,
    /// Only tools of these servers; empty means every server.
    pub servers: Vec<String>,
    /// 1..=50.
    pub max_results: usize,
    /// At least one field.
    pub fields: Vec<Field>,
    /// The query text's embedding, for the dense signal (computed by the
    /// caller with the same model as the index's vectors).
    pub vector: Option<Vec<f32>>,
}

/// A search that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("query is empty: say what the tool should do, e.g. \"read a file\"")]
    EmptyQuery,
    #[error("max_results must be between 1 and 50, got {0}")]
    MaxResults(usize),
    #[error("fields must name at least one of name, description, parameters")]
    NoFields,
    #[error("mcp_server may name at most {MAX_SERVERS} servers, got {0}")]
    TooManyServers(usize),
}

impl SearchQuery {
    /// The seed's defaults: 5 results, fields name and description.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            servers: Vec::new(),
            max_results: 5,
            fields: vec![Field::Name, Field::Description],
            vector: None,
        }
    }

    pub fn servers(mut self, servers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.servers = servers.into_iter().map(Into::into).collect();
        self
    }

    pub fn max_results(mut self, max_results: usize) -> Self {
        self.max_results = max_results;
        self
    }

    pub fn fields(mut self, fields: impl IntoIterator<Item = Field>) -> Self {
        self.fields = fields.into_iter().collect();
        self
    }

    pub fn vector(mut self, vector: Vec<f32>) -> Self {
        self.vector = Some(vector);
        self
    }

    /// The text searched (and embedded): the query's first [`MAX_QUERY_CHARS`]
    /// characters, and whether it was cut.
    pub fn searched_text(&self) -> (&str, bool) {
        match self.text.char_indices().nth(MAX_QUERY_CHARS) {
            Some((at, _)) => (&self.text[..at], true),
            None => (&self.text, false),
        }
    }

    /// Whether the search can run (checked again by the search itself): run it
    /// before the work a search needs, such as embedding its text.
    pub fn validate(&self) -> Result<(), SearchError> {
        if self.text.trim().is_empty() {
            return Err(SearchError::EmptyQuery);
        }
        if !(1..=50).contains(&self.max_results) {
            return Err(SearchError::MaxResults(self.max_results));
        }
        if self.fields.is_empty() {
            return Err(SearchError::NoFields);
        }
        if self.servers.len() > MAX_SERVERS {
            return Err(SearchError::TooManyServers(self.servers.len()));
        }
        Ok(())
    }
}
