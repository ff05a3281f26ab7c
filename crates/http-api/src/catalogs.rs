//! Tool-search indexes kept between requests, rebuilt only when a catalog's hash changes:
//! per bot for the `tool_search` tool of chat turns (inference's [`CatalogCache`]), and per
//! scope (every server, or one bot) for `GET /api/tools/search` ([`SearchIndex`], which
//! also answers scores and tiers).
//!
//! Catalogs are built from the manager's cached tool lists, so neither a search nor building
//! an index starts a server.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use inference::{CatalogCache, CatalogEntry, ToolCatalog};
use serde::Serialize;
use serde_json::json;
use tool_search::{SearchError, SearchQuery, ToolDoc, ToolIndex, catalog_hash};

/// The indexes of one [`crate::AppState`]. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct ToolCatalogs {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Per bot id: the catalog of its `tool_search`.
    turns: Mutex<BTreeMap<String, Arc<CatalogCache>>>,
    /// Per scope (`*` or `bot:<id>`): the route's index.
    searches: Mutex<BTreeMap<String, Arc<SearchIndex>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl std::fmt::Debug for ToolCatalogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCatalogs")
            .field("bots", &lock(&self.inner.turns).len())
            .field("scopes", &lock(&self.inner.searches).len())
            .finish()
    }
}

impl ToolCatalogs {
    /// The `tool_search` catalog of bot `bot_id` over `entries`: the cached one while the
    /// tools are the same.
    pub fn for_bot(&self, bot_id: &str, entries: &[CatalogEntry]) -> Arc<ToolCatalog> {
        let cache = Arc::clone(
            lock(&self.inner.turns)
                .entry(bot_id.to_owned())
                .or_default(),
        );
        cache.get(entries)
    }

    /// The search index of `scope` over `entries`: the cached one while the tools (and
    /// their qualified names) are the same.
    pub fn search_index(&self, scope: &str, entries: Vec<CatalogEntry>) -> Arc<SearchIndex> {
        let docs = docs_of(&entries);
        let hash = catalog_hash(&docs);
        let mut searches = lock(&self.inner.searches);
        if let Some(index) = searches
            .get(scope)
            .filter(|index| index.hash == hash && same_names(&index.entries, &entries))
        {
            return Arc::clone(index);
        }
        let index = Arc::new(SearchIndex {
            hash,
            index: ToolIndex::build(docs),
            entries,
        });
        searches.insert(scope.to_owned(), Arc::clone(&index));
        index
    }
}

fn same_names(a: &[CatalogEntry], b: &[CatalogEntry]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.qualified == b.qualified)
}

fn docs_of(entries: &[CatalogEntry]) -> Vec<ToolDoc> {
    entries
        .iter()
        .map(|entry| {
            let tool = json!({
                "name": entry.tool,
                "description": entry.description,
                "inputSchema": entry.input_schema,
            });
            ToolDoc::from_mcp(&entry.server, &tool, &entry.server_instructions)
        })
        .collect()
}

/// An index over a catalog, answering with qualified names, scores and tiers.
pub struct SearchIndex {
    hash: String,
    index: ToolIndex,
    entries: Vec<CatalogEntry>,
}

/// One hit of `GET /api/tools/search`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub server: String,
    pub tool: String,
    pub qualified_name: String,
    pub description: String,
    pub score: f64,
    /// `exact`, `near_exact` (tool-name matches) or `bm25`.
    pub tier: &'static str,
}

/// The hits of one search, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchAnswer {
    pub query: String,
    /// The query was longer than `tool_search::MAX_QUERY_CHARS` and was cut.
    pub truncated: bool,
    pub results: Vec<SearchHit>,
}

impl SearchIndex {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn search(&self, query: &SearchQuery) -> Result<SearchAnswer, SearchError> {
        let result = self.index.search(query)?;
        let results = result
            .hits
            .iter()
            .map(|hit| {
                let entry = &self.entries[hit.doc];
                SearchHit {
                    server: entry.server.clone(),
                    tool: entry.tool.clone(),
                    qualified_name: entry.qualified.clone(),
                    description: entry.description.clone(),
                    score: (f64::from(hit.score) * 1000.0).round() / 1000.0,
                    tier: match hit.tier {
                        2 => "exact",
                        1 => "near_exact",
                        _ => "bm25",
                    },
                }
            })
            .collect();
        Ok(SearchAnswer {
            query: query.text.clone(),
            truncated: result.truncated_query,
            results,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn entry(server: &str, tool: &str, description: &str) -> CatalogEntry {
        CatalogEntry {
            qualified: format!("{server}__{tool}"),
            server: server.into(),
            tool: tool.into(),
            description: description.into(),
            input_schema: json!({"type": "object"}),
            server_instructions: String::new(),
        }
    }

    #[test]
    fn indexes_are_rebuilt_only_when_the_catalog_changes() {
        let catalogs = ToolCatalogs::default();
        let entries = vec![
            entry("fs", "read", "Read a file"),
            entry("sh", "run", "Run"),
        ];
        let first = catalogs.search_index("*", entries.clone());
        assert!(Arc::ptr_eq(
            &first,
            &catalogs.search_index("*", entries.clone())
        ));
        let other_scope = catalogs.search_index("bot:b", entries.clone());
        assert!(!Arc::ptr_eq(&first, &other_scope));
        let mut renamed = entries.clone();
        renamed[0].qualified = "fs__read_1".into();
        assert!(!Arc::ptr_eq(&first, &catalogs.search_index("*", renamed)));

        let bot = catalogs.for_bot("b", &entries);
        assert!(Arc::ptr_eq(&bot, &catalogs.for_bot("b", &entries)));
        let changed = vec![entry("fs", "read", "Read a text file")];
        assert!(!Arc::ptr_eq(&bot, &catalogs.for_bot("b", &changed)));
    }

    #[test]
    fn hits_carry_qualified_names_scores_and_tiers() {
        let index = ToolCatalogs::default().search_index(
            "*",
            vec![
                entry("fs", "read_file", "Read a file from disk"),
                entry("sh", "run", "Run a shell command"),
            ],
        );
        let answer = index
            .search(&SearchQuery::new("read_file"))
            .expect("a search");
        assert!(!answer.truncated);
        let first = &answer.results[0];
        assert_eq!(
            (first.qualified_name.as_str(), first.tier),
            ("fs__read_file", "exact")
        );
        assert!(first.score > 0.0);
        let prose = index.search(&SearchQuery::new("shell")).expect("a search");
        assert_eq!(prose.results.len(), 1);
        assert_eq!(prose.results[0].tier, "bm25");
        assert!(matches!(
            index.search(&SearchQuery::new(" ")),
            Err(SearchError::EmptyQuery)
        ));
    }
}
