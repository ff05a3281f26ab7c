//! One query's embedding, the cost `tool_search` pays per request (figures in
//! docs/benchmarks.md, "Speed, hybrid"):
//!
//! ```sh
//! export BOTCRAFT_EMBEDDING_MODEL="$(scripts/embedding-model-setup.sh)"
//! cargo bench -p embedding --bench query
//! ```
//!
//! Embeds each query below 25 times, one at a time as a request does, after a
//! warm-up, and prints each query's p50 with its token count, then p50/p99
//! over all of them.

use std::time::Instant;

const QUERIES: &[&str] = &[
    "take a screenshot of the page",
    "delete a file",
    "list open pull requests in a repository",
    "search the web for recent news about rust",
    "run a shell command and show its output",
    "create a calendar event for tomorrow at 3pm with the team",
    "what is the weather in paris",
    "send a message to the engineering channel on slack",
    "move the file into the trash so it can be restored later",
    "query the database for users created last week",
    "click the login button",
    "find documents about quarterly revenue in the index",
];

fn main() {
    let model = std::env::var_os("BOTCRAFT_EMBEDDING_MODEL").expect("BOTCRAFT_EMBEDDING_MODEL");
    let embedder = embedding::Embedder::load(std::path::Path::new(&model)).expect("model loads");
    for q in QUERIES {
        embedder.embed(&[q]).expect("embed");
    }
    let mut times = Vec::new();
    let mut per_query = vec![Vec::new(); QUERIES.len()];
    for _ in 0..25 {
        for (i, q) in QUERIES.iter().enumerate() {
            let t = Instant::now();
            let v = embedder.embed(&[q]).expect("embed");
            let ms = t.elapsed().as_secs_f64() * 1e3;
            times.push(ms);
            per_query[i].push(ms);
            assert_eq!(v[0].len(), embedder.dimensions());
        }
    }
    let at = |times: &mut Vec<f64>, p: f64| {
        times.sort_by(f64::total_cmp);
        times[((times.len() - 1) as f64 * p).round() as usize]
    };
    let json = std::fs::read_to_string(std::path::Path::new(&model).join("tokenizer.json"))
        .expect("tokenizer.json");
    let tokenizer = embedding::WordPiece::from_json(&json).expect("tokenizer");
    for (q, times) in QUERIES.iter().zip(&mut per_query) {
        let tokens = tokenizer.encode(q, 256).len();
        println!("{tokens:>3} tokens  p50 {:>6.2} ms  {q}", at(times, 0.5));
    }
    println!(
        "query embedding ({} queries, {} runs): p50 {:.2} ms, p99 {:.2} ms, min {:.2} ms",
        QUERIES.len(),
        times.len(),
        at(&mut times, 0.5),
        at(&mut times, 0.99),
        times[0]
    );
}
