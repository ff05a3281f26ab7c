//! Check a query file against the captured servers, without ranking anything:
//! `check_queries FILE.jsonl`. Every line must parse, name tools that exist,
//! a `paraphrase` must share no content word with its tools' names and
//! descriptions (the words it shares are printed), and a `task` must list at
//! least two right tools. Prints counts per kind and per server.

use std::collections::BTreeMap;

use tool_search::ToolDoc;
use tool_search::eval::{QueryKind, ServerCapture, load_captures, parse_queries, shares_no_word};
use tool_search::tokenize::Tokenizer;

fn main() {
    let file = std::env::args()
        .nth(1)
        .expect("usage: check_queries FILE.jsonl");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/eval/servers");
    let docs: Vec<ToolDoc> = load_captures(std::path::Path::new(dir))
        .expect("eval/servers")
        .iter()
        .flat_map(ServerCapture::docs)
        .collect();
    let queries = parse_queries(&std::fs::read_to_string(&file).expect("query file"))
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    let tokenizer = Tokenizer::default();
    let mut problems = 0;
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut servers: BTreeMap<String, usize> = BTreeMap::new();
    for (i, q) in queries.iter().enumerate() {
        let line = i + 1;
        *kinds.entry(format!("{:?}", q.kind)).or_default() += 1;
        let mut relevant = Vec::new();
        for r in &q.relevant {
            match docs
                .iter()
                .find(|d| d.server == r.server && d.name == r.tool)
            {
                Some(doc) => relevant.push(doc),
                None => {
                    problems += 1;
                    println!("line {line}: no tool {}/{}", r.server, r.tool);
                }
            }
            *servers.entry(r.server.clone()).or_default() += 1;
        }
        if q.relevant.is_empty() {
            problems += 1;
            println!("line {line}: no right tools");
        }
        if q.kind == QueryKind::Paraphrase && !shares_no_word(&q.q, &relevant) {
            problems += 1;
            let words = tokenizer.tokens(&q.q);
            let shared: Vec<&String> = words
                .iter()
                .filter(|w| {
                    relevant.iter().any(|d| {
                        tokenizer.tokens(&d.name).contains(w)
                            || tokenizer.tokens(&d.description).contains(w)
                    })
                })
                .collect();
            println!("line {line}: paraphrase shares {shared:?}: {:?}", q.q);
        }
        if q.kind == QueryKind::Task && q.relevant.len() < 2 {
            problems += 1;
            println!("line {line}: a task query needs at least two right tools");
        }
    }
    println!("{} queries, kinds {kinds:?}", queries.len());
    println!("right tools per server: {servers:?}");
    if problems > 0 {
        println!("{problems} problems");
        std::process::exit(1);
    }
}
