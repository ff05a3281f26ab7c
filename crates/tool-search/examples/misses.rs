//! Print the top 3 of each query whose first hit is wrong (tuning aid).
use tool_search::eval::EvalQuery;
use tool_search::{SearchQuery, ToolIndex, report::parse_catalog};

fn main() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/eval");
    let docs =
        parse_catalog(&std::fs::read_to_string(format!("{dir}/catalog.json")).expect("catalog"))
            .expect("parse");
    let index = ToolIndex::build(docs);
    for line in std::fs::read_to_string(format!("{dir}/queries.jsonl"))
        .expect("queries")
        .lines()
    {
        let q: EvalQuery = serde_json::from_str(line).expect("line");
        let hits = index
            .search(&SearchQuery::new(q.q.clone()).max_results(3))
            .expect("search")
            .hits;
        let top: Vec<String> = hits
            .iter()
            .map(|h| {
                let d = index.doc(h.doc);
                format!("{}/{} {:.2}", d.server, d.name, h.score)
            })
            .collect();
        let ok = hits.first().is_some_and(|h| {
            let d = index.doc(h.doc);
            q.relevant
                .iter()
                .any(|r| r.server == d.server && r.tool == d.name)
        });
        if !ok {
            let want: Vec<String> = q
                .relevant
                .iter()
                .map(|r| format!("{}/{}", r.server, r.tool))
                .collect();
            println!("{:<60} want {:?}\n    got {:?}", q.q, want, top);
        }
    }
}
