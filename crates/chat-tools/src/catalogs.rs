//! Tool-search indexes kept between requests: per bot for the `tool_search` tool of chat
//! turns, and per scope (every server, or one bot) for `GET /api/tools/search`
//! ([`SearchIndex`], which also answers scores, tiers and both signals). Each is reused while
//! its catalog (tools and qualified names) is unchanged; underneath, `search-index` reuses
//! one segment per server and the stored vectors, so a changed catalog rebuilds only what
//! changed.
//!
//! Catalogs are built from the manager's cached tool lists, so neither a search nor building
//! an index starts a server. An index that cannot get its vectors (a model error, a store
//! error) is logged and built lexically: `tool_search` keeps working.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;
use inference::{CatalogEntry, QueryEmbedder, ToolCatalog};
use search_index::{BuildProgress, SearchIndexes, SearchMode};
use serde::Serialize;
use tool_search::{SearchError, SearchQuery, ToolDoc, ToolIndex, catalog_hash};
use toolset::BotToolset;

/// How `tool_search` ranks, and the build embedding tool texts now, if any.
#[derive(Debug, Clone)]
pub struct SearchState {
    pub mode: SearchMode,
    pub building: Option<BuildProgress>,
}

/// The prefix of a bot's scope ([`bot_scope`]).
const BOT_SCOPE: &str = "bot:";

/// The [`ToolCatalogs::search_index`] scope of one bot's tools (`*` is every server's).
pub fn bot_scope(bot_id: &str) -> String {
    format!("{BOT_SCOPE}{bot_id}")
}

/// The indexes of one host (its `AppState`). Cheap to clone (shared).
#[derive(Clone)]
pub struct ToolCatalogs {
    inner: Arc<Inner>,
}

struct Inner {
    indexes: Arc<SearchIndexes>,
    /// Per bot id: the catalog of its `tool_search`, under its toolset's hash.
    turns: Mutex<BTreeMap<String, (String, Arc<ToolCatalog>)>>,
    /// Per bot id: the eager tool-definition tokens, under its toolset's hash.
    tokens: Mutex<BTreeMap<String, (String, usize)>>,
    /// Per scope (`*` or `bot:<id>`): the route's index.
    searches: Mutex<BTreeMap<String, Arc<SearchIndex>>>,
}

impl Default for ToolCatalogs {
    fn default() -> Self {
        Self::new(SearchIndexes::lexical())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl std::fmt::Debug for ToolCatalogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCatalogs")
            .field("mode", &self.inner.indexes.mode())
            .field("bots", &lock(&self.inner.turns).len())
            .field("scopes", &lock(&self.inner.searches).len())
            .finish()
    }
}

/// The query embedder of the shared indexes: a failed embedding is logged and the search
/// goes on lexically.
struct IndexEmbedder(Arc<SearchIndexes>);

impl QueryEmbedder for IndexEmbedder {
    fn embed_query<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Option<Vec<f32>>> {
        Box::pin(async move {
            match self.0.query_vector(text).await {
                Ok(vector) => vector,
                Err(error) => {
                    tracing::warn!(%error, "query embedding failed; searching by BM25F only");
                    None
                }
            }
        })
    }
}

/// `entries` in the order of `index`'s documents, matched by server and tool name (`Err`
/// gives them back when the index does not hold exactly these tools).
fn aligned(
    index: &ToolIndex,
    entries: Vec<CatalogEntry>,
) -> Result<Vec<CatalogEntry>, Vec<CatalogEntry>> {
    if index.len() != entries.len() {
        return Err(entries);
    }
    let mut by_tool: HashMap<(&str, &str), VecDeque<usize>> = HashMap::new();
    for (at, entry) in entries.iter().enumerate() {
        by_tool
            .entry((entry.server.as_str(), entry.tool.as_str()))
            .or_default()
            .push_back(at);
    }
    let order: Option<Vec<usize>> = index
        .docs()
        .map(|doc| {
            by_tool
                .get_mut(&(doc.server.as_str(), doc.name.as_str()))
                .and_then(VecDeque::pop_front)
        })
        .collect();
    let Some(order) = order else {
        return Err(entries);
    };
    let mut slots: Vec<Option<CatalogEntry>> = entries.into_iter().map(Some).collect();
    Ok(order
        .into_iter()
        .filter_map(|at| slots[at].take())
        .collect())
}

/// The key an index is reused under: the fingerprint of its tools and the names they are
/// called by.
fn catalog_key(docs: &[ToolDoc], entries: &[CatalogEntry]) -> String {
    let mut key = canonical_json::Fingerprint::new();
    key.value(&serde_json::Value::String(catalog_hash(docs)));
    for entry in entries {
        key.value(&serde_json::Value::String(entry.qualified.clone()));
    }
    key.finish()
}

impl ToolCatalogs {
    pub fn new(indexes: SearchIndexes) -> Self {
        Self {
            inner: Arc::new(Inner {
                indexes: Arc::new(indexes),
                turns: Mutex::new(BTreeMap::new()),
                tokens: Mutex::new(BTreeMap::new()),
                searches: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// How searches rank (`/api/health`'s `toolSearch`).
    pub fn mode(&self) -> SearchMode {
        self.inner.indexes.mode()
    }

    /// How searches rank, and the build embedding tool texts now (`/api/health`).
    pub fn search_state(&self) -> SearchState {
        SearchState {
            mode: self.mode(),
            building: self.inner.indexes.build_progress(),
        }
    }

    /// The index of `entries`, and `entries` in the index's order: a hit's document number
    /// is a position in that order. The index keeps one segment per server, in its own
    /// order (a segment reused from another catalog keeps the order it was built in), so the
    /// toolset's order (by qualified name, where two servers' tools may interleave) is not
    /// the index's.
    async fn index_of(&self, entries: Vec<CatalogEntry>) -> (Arc<ToolIndex>, Vec<CatalogEntry>) {
        let docs: Vec<ToolDoc> = entries.iter().map(CatalogEntry::doc).collect();
        let index = match self.inner.indexes.index(docs.clone()).await {
            Ok(index) => index,
            Err(error) => {
                tracing::warn!(%error, "tool vectors unavailable; index ranked by BM25F only");
                return (Arc::new(ToolIndex::build(docs)), entries);
            }
        };
        match aligned(&index, entries) {
            Ok(entries) => (index, entries),
            Err(entries) => {
                tracing::error!(
                    "a tool index does not hold its catalog's tools; rebuilt lexically"
                );
                (Arc::new(ToolIndex::build(docs)), entries)
            }
        }
    }

    /// The `tool_search` catalog of `toolset`'s bot: the cached one while the toolset's hash
    /// is the same (nothing is hashed or rebuilt per request).
    pub async fn for_bot(&self, toolset: &BotToolset) -> Arc<ToolCatalog> {
        let bot_id = toolset.bot_id.as_str();
        let key = toolset.hash.clone();
        if let Some((_, catalog)) = lock(&self.inner.turns)
            .get(bot_id)
            .filter(|(cached, _)| *cached == key)
        {
            return Arc::clone(catalog);
        }
        let (index, entries) = self
            .index_of(crate::executor::catalog_entries(toolset))
            .await;
        let embedder: Arc<dyn QueryEmbedder> =
            Arc::new(IndexEmbedder(Arc::clone(&self.inner.indexes)));
        let catalog = Arc::new(ToolCatalog::from_index(
            index,
            entries.iter().map(|e| e.qualified.clone()).collect(),
            Some(embedder),
        ));
        lock(&self.inner.turns).insert(bot_id.to_owned(), (key, Arc::clone(&catalog)));
        catalog
    }

    /// Mark the stored vectors of the live indexes used and delete those unused for
    /// `retention` ([`SearchIndexes::keep_vectors`]).
    pub async fn keep_vectors(
        &self,
        retention: std::time::Duration,
    ) -> Result<search_index::KeptVectors, search_index::IndexError> {
        self.inner.indexes.keep_vectors(retention).await
    }

    /// Drop the indexes of every bot not in `bots` (ids): those of deleted bots, which would
    /// otherwise stay live, their stored vectors kept, until a restart.
    pub fn forget_bots_except(&self, bots: &std::collections::HashSet<String>) {
        lock(&self.inner.turns).retain(|bot, _| bots.contains(bot));
        lock(&self.inner.tokens).retain(|bot, _| bots.contains(bot));
        lock(&self.inner.searches).retain(|scope, _| {
            scope
                .strip_prefix(BOT_SCOPE)
                .is_none_or(|bot| bots.contains(bot))
        });
    }

    /// `count()` for `toolset`'s bot, computed once per toolset hash.
    pub fn eager_tokens(&self, toolset: &BotToolset, count: impl FnOnce() -> usize) -> usize {
        let mut tokens = lock(&self.inner.tokens);
        match tokens.get(&toolset.bot_id) {
            Some((hash, n)) if *hash == toolset.hash => *n,
            _ => {
                let n = count();
                tokens.insert(toolset.bot_id.clone(), (toolset.hash.clone(), n));
                n
            }
        }
    }

    /// The search index of `scope` over `entries`: the cached one while the tools (and
    /// their qualified names) are the same.
    pub async fn search_index(&self, scope: &str, entries: Vec<CatalogEntry>) -> Arc<SearchIndex> {
        let docs: Vec<ToolDoc> = entries.iter().map(CatalogEntry::doc).collect();
        let key = catalog_key(&docs, &entries);
        if let Some(index) = lock(&self.inner.searches)
            .get(scope)
            .filter(|index| index.key == key)
        {
            return Arc::clone(index);
        }
        let (index, entries) = self.index_of(entries).await;
        let index = Arc::new(SearchIndex {
            key,
            index,
            entries,
            indexes: Arc::clone(&self.inner.indexes),
        });
        lock(&self.inner.searches).insert(scope.to_owned(), Arc::clone(&index));
        index
    }
}

/// An index over a catalog, answering with qualified names, scores, tiers and signals.
pub struct SearchIndex {
    key: String,
    index: Arc<ToolIndex>,
    entries: Vec<CatalogEntry>,
    indexes: Arc<SearchIndexes>,
}

/// One hit of `GET /api/tools/search`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub server: String,
    pub tool: String,
    pub qualified_name: String,
    pub description: String,
    /// The ranking's score (fused when `dense` is on).
    pub score: f64,
    /// `exact`, `near_exact` (tool-name matches) or `ranked`.
    pub tier: &'static str,
    /// BM25F score and rank (rank `null`: no query word matched).
    pub bm25: Signal,
    /// Cosine similarity and rank, when the search was hybrid.
    pub dense: Option<Signal>,
}

/// One signal behind a hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signal {
    pub score: f64,
    pub rank: Option<u32>,
}

/// The hits of one search, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchAnswer {
    pub query: String,
    /// The query was longer than `tool_search::MAX_QUERY_CHARS` and was cut.
    pub truncated: bool,
    /// `bm25` or `hybrid`: how this search ranked.
    pub mode: &'static str,
    pub results: Vec<SearchHit>,
}

fn round(score: f32) -> f64 {
    (f64::from(score) * 1000.0).round() / 1000.0
}

impl SearchIndex {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub async fn search(&self, mut query: SearchQuery) -> Result<SearchAnswer, SearchError> {
        // Refused before any work, and only the text searched is embedded (as `tool_search`).
        query.validate()?;
        if self.index.dimensions().is_some() {
            match self.indexes.query_vector(query.searched_text().0).await {
                Ok(vector) => query.vector = vector,
                Err(error) => {
                    tracing::warn!(%error, "query embedding failed; searching by BM25F only")
                }
            }
        }
        let result = self.index.search(&query)?;
        let results = result
            .hits
            .iter()
            .map(|hit| {
                let entry = &self.entries[hit.doc];
                let s = hit.signals;
                SearchHit {
                    server: entry.server.clone(),
                    tool: entry.tool.clone(),
                    qualified_name: entry.qualified.clone(),
                    description: entry.description.clone(),
                    score: round(hit.score),
                    tier: match hit.tier {
                        2.. => "exact",
                        1 => "near_exact",
                        _ => "ranked",
                    },
                    bm25: Signal {
                        score: round(s.lexical),
                        rank: s.lexical_rank,
                    },
                    dense: s.dense.map(|score| Signal {
                        score: round(score),
                        rank: s.dense_rank,
                    }),
                }
            })
            .collect();
        Ok(SearchAnswer {
            query: query.text.clone(),
            truncated: result.truncated_query,
            mode: if result.dense { "hybrid" } else { "bm25" },
            results,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

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

    #[tokio::test]
    async fn indexes_are_rebuilt_only_when_the_catalog_changes() {
        let catalogs = ToolCatalogs::default();
        let entries = vec![
            entry("fs", "read", "Read a file"),
            entry("sh", "run", "Run"),
        ];
        let first = catalogs.search_index("*", entries.clone()).await;
        assert!(Arc::ptr_eq(
            &first,
            &catalogs.search_index("*", entries.clone()).await
        ));
        let other_scope = catalogs.search_index("bot:b", entries.clone()).await;
        assert!(!Arc::ptr_eq(&first, &other_scope));
        let mut renamed = entries.clone();
        renamed[0].qualified = "fs__read_1".into();
        assert!(!Arc::ptr_eq(
            &first,
            &catalogs.search_index("*", renamed).await
        ));
    }

    /// A deleted bot's indexes go (so their stored vectors are no longer kept); every
    /// other bot's, and the every-server scope, stay as they are.
    #[tokio::test]
    async fn indexes_of_deleted_bots_are_forgotten() {
        let catalogs = ToolCatalogs::default();
        let entries = vec![entry("fs", "read", "Read a file")];
        let mut kept = Vec::new();
        for scope in ["*".to_owned(), bot_scope("a"), bot_scope("b")] {
            kept.push(catalogs.search_index(&scope, entries.clone()).await);
        }
        for bot in ["a", "b"] {
            lock(&catalogs.inner.tokens).insert(bot.into(), ("hash".into(), 1));
        }
        catalogs.forget_bots_except(&["a".to_owned()].into_iter().collect());
        let scopes: Vec<String> = lock(&catalogs.inner.searches).keys().cloned().collect();
        assert_eq!(scopes, vec!["*".to_owned(), "bot:a".to_owned()]);
        let bots: Vec<String> = lock(&catalogs.inner.tokens).keys().cloned().collect();
        assert_eq!(bots, vec!["a".to_owned()]);
        assert!(Arc::ptr_eq(
            &kept[1],
            &catalogs
                .search_index(&bot_scope("a"), entries.clone())
                .await
        ));
        assert!(!Arc::ptr_eq(
            &kept[2],
            &catalogs.search_index(&bot_scope("b"), entries).await
        ));
    }

    /// The index groups tools by server; a catalog whose servers' tools interleave (as the
    /// toolset's order by qualified name may) still names each hit's own tool, for a
    /// catalog built fresh and for one whose segments are reused in another order.
    #[tokio::test]
    async fn hits_name_their_own_tool_when_servers_interleave() {
        let catalogs = ToolCatalogs::default();
        let interleaved = vec![
            entry("acme.fs", "delete_file", "Delete a file"),
            entry("acme_fs", "list", "List the entries of a folder"),
            entry("acme.fs", "read_file", "Read a file from disk"),
        ];
        let mut reordered = interleaved.clone();
        reordered.reverse();
        for (scope, entries) in [("*", interleaved), ("bot:b", reordered)] {
            let index = catalogs.search_index(scope, entries).await;
            for (query, expected) in [
                ("read_file", "acme.fs__read_file"),
                ("list the entries of a folder", "acme_fs__list"),
                ("delete_file", "acme.fs__delete_file"),
            ] {
                let answer = index
                    .search(SearchQuery::new(query))
                    .await
                    .expect("a search");
                let first = &answer.results[0];
                assert_eq!(
                    (
                        first.qualified_name.as_str(),
                        format!("{}__{}", first.server, first.tool)
                    ),
                    (expected, expected.to_owned()),
                    "{scope}: {query}"
                );
            }
        }
    }

    /// The name the model calls a tool by is the catalog's (made unique there), not its
    /// server's raw name: `acme.docs`'s `search` is `acme_docs__search`, and a server named
    /// `acme_docs`, whose `search` the catalog had to name otherwise, does not take it (nor
    /// any name tier: its own name, `search`, is not what was written).
    #[tokio::test]
    async fn the_catalogs_qualified_name_names_its_tool() {
        let mut dotted = entry("acme.docs", "search", "Search the documentation");
        dotted.qualified = "acme_docs__search".into();
        let mut impostor = entry("acme_docs", "search", "acme docs search");
        impostor.qualified = "acme_docs__search_2".into();
        let index = ToolCatalogs::default()
            .search_index("*", vec![impostor, dotted])
            .await;
        let answer = index
            .search(SearchQuery::new("acme_docs__search"))
            .await
            .expect("a search");
        let found: Vec<(&str, &str)> = answer
            .results
            .iter()
            .map(|hit| (hit.qualified_name.as_str(), hit.tier))
            .collect();
        assert_eq!(
            found,
            vec![
                ("acme_docs__search", "exact"),
                ("acme_docs__search_2", "ranked")
            ]
        );
    }

    #[tokio::test]
    async fn hits_carry_qualified_names_scores_and_tiers() {
        let index = ToolCatalogs::default()
            .search_index(
                "*",
                vec![
                    entry("fs", "read_file", "Read a file from disk"),
                    entry("sh", "run", "Run a shell command"),
                ],
            )
            .await;
        let answer = index
            .search(SearchQuery::new("read_file"))
            .await
            .expect("a search");
        assert!(!answer.truncated);
        let first = &answer.results[0];
        assert_eq!(
            (first.qualified_name.as_str(), first.tier),
            ("fs__read_file", "exact")
        );
        assert!(first.score > 0.0);
        let prose = index
            .search(SearchQuery::new("shell"))
            .await
            .expect("a search");
        assert_eq!(prose.results.len(), 1);
        assert_eq!(prose.results[0].tier, "ranked");
        assert!(matches!(
            index.search(SearchQuery::new(" ")).await,
            Err(SearchError::EmptyQuery)
        ));
    }
}
