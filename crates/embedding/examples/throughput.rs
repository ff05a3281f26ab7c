//! Embedding speed on this machine: `cargo run --release -p embedding --example throughput`
//! (model from BOTCRAFT_EMBEDDING_MODEL). Prints per-text time for short queries and for
//! tool-sized texts.
use std::time::Instant;

fn main() {
    let dir = std::env::var("BOTCRAFT_EMBEDDING_MODEL").expect("BOTCRAFT_EMBEDDING_MODEL");
    let started = Instant::now();
    let e = embedding::Embedder::load(std::path::Path::new(&dir)).expect("load");
    println!("load {:?}", started.elapsed());
    let query = "take a screenshot of the current web page";
    for _ in 0..3 {
        e.embed(&[query]).expect("warm");
    }
    let mut times: Vec<f64> = (0..50)
        .map(|_| {
            let t = Instant::now();
            e.embed(&[query]).expect("embed");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!("query p50 {:.2} ms p99 {:.2} ms", times[25], times[49]);
    if std::env::args().nth(1).as_deref() == Some("queries") {
        for _ in 0..500 {
            e.embed(&[query]).expect("embed");
        }
        return;
    }
    let tool = "browser take screenshot (playwright): Take a screenshot of the current page. You can't perform actions based on the screenshot, use browser_snapshot for actions.\nParameters: type (Image format for the screenshot. Default is png.); filename (File name to save the screenshot to. Defaults to page-{timestamp}.{png|jpeg} if not specified.); element (Human-readable element description used to obtain permission to screenshot the element.); ref (Exact target element reference from the page snapshot.); full page (When true, takes a screenshot of the full scrollable page)";
    let texts: Vec<&str> = (0..64).map(|_| tool).collect();
    let t = Instant::now();
    e.embed(&texts).expect("embed");
    println!(
        "tool texts: {:.1} ms each (64)",
        t.elapsed().as_secs_f64() * 1e3 / 64.0
    );
}
