//! `botcraft tools search "query" [--server S]… [--max N] [--explain] [--json]
//! [--catalog FILE] [--queries FILE.jsonl]`.
//!
//! By default it asks a running BotCraft (`GET /api/tools/search`, the cached catalog of
//! every server; never starts one). With `--catalog FILE` it searches a JSON list of
//! `{server, name, description, inputSchema}` offline with the same ranking
//! (`tool_search::ToolIndex`). `--queries FILE.jsonl` answers one query per line
//! (`{"q", "mcp_server"?}`) with one JSON line each: `{"q", "ranked": [{"server", "tool",
//! "score"}]}`. `--explain` (offline) prints both signals (BM25F and, with a model, cosine),
//! the fused rank and each term's contribution; `--json` prints JSON.
//!
//! Offline, `BOTCRAFT_EMBEDDING_MODEL` (or `--embedding-model`) makes the ranking hybrid as
//! `botcraft serve`'s is: the catalog is embedded once, then every query, so a whole
//! evaluation (`--catalog … --queries … --json`) runs in one process.

use std::path::{Path, PathBuf};

use anyhow::Context;
use search_index::SearchIndexes;
use serde_json::{Value, json};
use tool_search::report::{QueryLine, ServerList, answer_line, parse_catalog, ranking_text};
use tool_search::{SearchQuery, ToolIndex};

use crate::config::ModelArgs;

use crate::remote::{Remote, print_json, segment};
use crate::terminal::{printable, printable_aligned, printable_json};

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// What the tool should do, or its name.
    #[arg(required_unless_present = "queries")]
    query: Option<String>,
    /// Only tools of this server (repeat for several).
    #[arg(long = "server")]
    servers: Vec<String>,
    /// Results at most, 1 to 50.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(1..=50))]
    max: u8,
    /// Show each query term's contribution to a tool's score (needs --catalog).
    #[arg(long, requires = "catalog")]
    explain: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Search this JSON file of tools offline instead of a running BotCraft.
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// Answer every query of this JSON-lines file, one JSON line each.
    #[arg(long, conflicts_with = "query")]
    queries: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
}

/// An offline catalog and the indexes that embed its queries.
struct Offline {
    index: std::sync::Arc<ToolIndex>,
    indexes: SearchIndexes,
}

impl Offline {
    async fn vector(&self, text: &str) -> anyhow::Result<Option<Vec<f32>>> {
        if self.index.dimensions().is_none() {
            return Ok(None);
        }
        Ok(self.indexes.query_vector(text).await?)
    }
}

pub async fn run(remote: &Remote, args: SearchArgs) -> anyhow::Result<()> {
    let max = usize::from(args.max);
    let index = match &args.catalog {
        Some(path) => Some(load_catalog(path, &args.model).await?),
        None => None,
    };
    if let Some(path) = &args.queries {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let query: QueryLine = serde_json::from_str(line).with_context(|| {
                format!(
                    "{}:{}: not a query line ({{\"q\": …}})",
                    path.display(),
                    number + 1
                )
            })?;
            let answer = match &index {
                Some(offline) => {
                    answer_line(&offline.index, &query, max, offline.vector(&query.q).await?)
                }
                None => remote_answer_line(remote, &query, max).await?,
            };
            println!("{}", printable_json(&answer.to_string()));
        }
        return Ok(());
    }
    let text = args.query.context("give a query, or --queries FILE")?;
    match &index {
        Some(offline) => {
            let vector = offline.vector(&text).await?;
            let mut query = SearchQuery::new(text.clone())
                .servers(args.servers.clone())
                .max_results(max);
            query.vector = vector.clone();
            if args.json {
                let mcp_server =
                    (!args.servers.is_empty()).then_some(ServerList::Many(args.servers));
                let line = QueryLine {
                    q: text,
                    mcp_server,
                };
                let answer = answer_line(&offline.index, &line, max, vector);
                println!("{}", printable_json(&answer.to_string()));
            } else {
                // Tools' names and descriptions: a server's own text.
                let text = ranking_text(&offline.index, &query, args.explain)?;
                print!("{}", printable_aligned(&text));
            }
        }
        None => {
            let answer = remote_search(remote, &text, &args.servers, max).await?;
            if args.json {
                print_json(&answer);
            } else {
                print!("{}", printable_aligned(&remote_text(&answer)));
            }
        }
    }
    Ok(())
}

async fn load_catalog(path: &Path, model: &ModelArgs) -> anyhow::Result<Offline> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let docs = parse_catalog(&text).with_context(|| format!("{}", path.display()))?;
    // Embedding a large catalog takes a while (tens of ms per tool text): say how far it is.
    let indexes = SearchIndexes::new(model.load().await?, None).with_progress(
        search_index::in_steps(10, |progress| {
            eprintln!(
                "botcraft: embedding tool texts: {} of {} ({}%)",
                progress.embedded,
                progress.total,
                progress.embedded * 100 / progress.total.max(1)
            );
        }),
    );
    let index = indexes.index(docs).await?;
    Ok(Offline { index, indexes })
}

async fn remote_search(
    remote: &Remote,
    query: &str,
    servers: &[String],
    max: usize,
) -> anyhow::Result<Value> {
    let mut path = format!("/api/tools/search?q={}&limit={max}", segment(query));
    for server in servers {
        path.push_str(&format!("&server={}", segment(server)));
    }
    remote.get(&path).await
}

/// A `--queries` line answered by a running BotCraft, in the offline line's shape.
async fn remote_answer_line(
    remote: &Remote,
    line: &QueryLine,
    max: usize,
) -> anyhow::Result<Value> {
    let servers = line.query(max).servers;
    let answer = remote_search(remote, &line.q, &servers, max).await?;
    let ranked: Vec<Value> = answer["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|hit| json!({"server": hit["server"], "tool": hit["tool"], "score": hit["score"]}))
        .collect();
    Ok(json!({"q": line.q, "ranked": ranked}))
}

/// The route's answer as text, like the offline ranking.
fn remote_text(answer: &Value) -> String {
    let mut out = String::new();
    if answer["truncated"] == true {
        out.push_str("(query cut to its first 512 characters)\n");
    }
    let hits = answer["results"].as_array().cloned().unwrap_or_default();
    if hits.is_empty() {
        out.push_str("No tools matched.\n");
    }
    for (rank, hit) in hits.iter().enumerate() {
        let tier = match hit["tier"].as_str() {
            Some("exact") => "  [exact name]",
            Some("near_exact") => "  [near-exact name]",
            _ => "",
        };
        // A server's own names: each field on one line, so none can add a line of its own.
        let field = |name: &str| printable(hit[name].as_str().unwrap_or_default(), true);
        out.push_str(&format!(
            "{:>2}. {}/{}  score {:.3}{tier}  ({})\n",
            rank + 1,
            field("server"),
            field("tool"),
            hit["score"].as_f64().unwrap_or_default(),
            field("qualifiedName"),
        ));
        let description = hit["description"].as_str().unwrap_or_default();
        if let Some(first) = description.lines().next().filter(|l| !l.is_empty()) {
            out.push_str(&format!("    {}\n", printable(first, true)));
        }
    }
    out
}
