//! Retrieval evaluation: recall@1, recall@5 and MRR of an index over a set of
//! queries with known right answers. Pure; the caller loads the files.

use serde::Deserialize;

use crate::doc::ToolDoc;
use crate::index::{ToolIndex, Weights};
use crate::query::SearchQuery;

/// A `(server, tool)` pair.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ToolRef {
    pub server: String,
    pub tool: String,
}

/// One evaluation query: `{"q": …, "relevant": [{"server": …, "tool": …}]}`.
#[derive(Debug, Clone, Deserialize)]
pub struct EvalQuery {
    pub q: String,
    pub relevant: Vec<ToolRef>,
}

/// The figures for one configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    pub queries: usize,
    /// Share of queries whose first hit is a right tool.
    pub recall_at_1: f64,
    /// Share of queries with a right tool in the first five hits.
    pub recall_at_5: f64,
    /// Mean reciprocal rank of the first right tool (0 when not in the top 50).
    pub mrr: f64,
}

/// Evaluate `weights` over `catalog` with `queries`. Queries whose right
/// tools are all missing from the catalog are errors: they would measure
/// nothing.
pub fn evaluate(
    catalog: &[ToolDoc],
    queries: &[EvalQuery],
    weights: Weights,
) -> Result<(Metrics, Vec<String>), String> {
    let index = ToolIndex::with_weights(catalog.to_vec(), weights);
    let mut first = 0usize;
    let mut five = 0usize;
    let mut reciprocal = 0f64;
    let mut misses = Vec::new();
    for query in queries {
        if !query.relevant.iter().any(|r| {
            catalog
                .iter()
                .any(|d| d.server == r.server && d.name == r.tool)
        }) {
            return Err(format!(
                "query {:?}: no right tool is in the catalog",
                query.q
            ));
        }
        let result = index
            .search(&SearchQuery::new(query.q.clone()).max_results(50))
            .map_err(|e| format!("query {:?}: {e}", query.q))?;
        let rank = result.hits.iter().position(|hit| {
            let doc = index.doc(hit.doc);
            query
                .relevant
                .iter()
                .any(|r| r.server == doc.server && r.tool == doc.name)
        });
        match rank {
            Some(0) => {
                first += 1;
                five += 1;
                reciprocal += 1.0;
            }
            Some(r) => {
                if r < 5 {
                    five += 1;
                }
                reciprocal += 1.0 / (r as f64 + 1.0);
                misses.push(query.q.clone());
            }
            None => misses.push(query.q.clone()),
        }
    }
    let n = queries.len().max(1) as f64;
    Ok((
        Metrics {
            queries: queries.len(),
            recall_at_1: first as f64 / n,
            recall_at_5: five as f64 / n,
            mrr: reciprocal / n,
        },
        misses,
    ))
}
