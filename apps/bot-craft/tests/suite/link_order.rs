//! `link-order.txt`, the code layout list `build.rs` hands the linker: a damaged list would
//! not fail a build (the linker skips names it does not know), so its shape is checked here.

use std::collections::HashSet;

#[test]
fn the_link_order_lists_symbols_each_once() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/link-order.txt");
    let text = std::fs::read_to_string(path).expect("apps/bot-craft/link-order.txt");
    let names: Vec<&str> = text.lines().collect();
    assert!(
        names.len() > 1_000,
        "{} names: the list is made from the stdio faces' profiles (scripts/link-order.sh)",
        names.len()
    );
    let mut seen = HashSet::new();
    for (index, name) in names.iter().enumerate() {
        let line = index + 1;
        assert!(!name.is_empty(), "line {line} is empty");
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_graphic() && b != b',' && b != b'#'),
            "line {line} is not one symbol name: {name:?}"
        );
        assert!(seen.insert(*name), "line {line} repeats {name}");
    }
    // Rust's own functions, by their mangled names (legacy `_ZN…E` or v0 `_R…`): a list of
    // demangled names (`callgrind --demangle=yes`) would name nothing the linker knows.
    let rust = names
        .iter()
        .filter(|name| name.starts_with("_ZN") || name.starts_with("_R"))
        .count();
    assert!(
        rust * 10 >= names.len() * 9,
        "{rust} of {} names are mangled Rust symbols",
        names.len()
    );
}
