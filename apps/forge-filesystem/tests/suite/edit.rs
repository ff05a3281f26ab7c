//! edit_file: exact and whitespace-flexible edits, all-or-nothing, dryRun,
//! CRLF, and the diff text (snapshots).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Fixture, put};

struct Case {
    name: &'static str,
    before: &'static str,
    edits: Value,
    dry_run: bool,
    /// The file afterwards.
    after: &'static str,
}

#[tokio::test]
async fn successful_edits_table() {
    let fx = Fixture::start().await;
    let cases = [
        Case {
            name: "exact_single_line",
            before: "alpha\nbeta\ngamma\n",
            edits: json!([{"oldText": "beta", "newText": "BETA"}]),
            dry_run: false,
            after: "alpha\nBETA\ngamma\n",
        },
        Case {
            name: "whitespace_flexible_takes_the_file_indentation",
            before: "    a();\n    b();\n",
            edits: json!([{"oldText": "        a();\n        b();", "newText": "        a();\n        c();"}]),
            dry_run: false,
            after: "    a();\n    c();\n",
        },
        Case {
            // The reference's re-indentation, quirks included: a new line is
            // indented relative to the old line at the same position, and
            // kept as written when either is unindented.
            name: "whitespace_flexible_reindents_like_the_reference",
            before: "fn main() {\n    if ready {\n        go();\n    }\n}\n",
            edits: json!([{"oldText": "if ready {\n  go();\n}", "newText": "if ready {\n  go();\n  done();\n}"}]),
            dry_run: false,
            after: "fn main() {\n    if ready {\n    go();\n  done();\n}\n}\n",
        },
        Case {
            name: "several_edits_in_order",
            before: "one\ntwo\nthree\n",
            edits: json!([
                {"oldText": "one", "newText": "1"},
                {"oldText": "three", "newText": "3"},
                {"oldText": "1\ntwo", "newText": "1\n2"}
            ]),
            dry_run: false,
            after: "1\n2\n3\n",
        },
        Case {
            name: "dry_run_writes_nothing",
            before: "keep me\n",
            edits: json!([{"oldText": "keep", "newText": "change"}]),
            dry_run: true,
            after: "keep me\n",
        },
        Case {
            name: "crlf_is_normalised",
            before: "a\r\nb\r\nc\r\n",
            edits: json!([{"oldText": "b\r\nc", "newText": "B\r\nC"}]),
            dry_run: false,
            after: "a\nB\nC\n",
        },
        Case {
            name: "no_final_newline",
            before: "x\ny",
            edits: json!([{"oldText": "y", "newText": "y\nz"}]),
            dry_run: false,
            after: "x\ny\nz",
        },
        Case {
            name: "backticks_lengthen_the_fence",
            before: "text\n",
            edits: json!([{"oldText": "text", "newText": "```rust\ncode\n```"}]),
            dry_run: false,
            after: "```rust\ncode\n```\n",
        },
        Case {
            name: "far_apart_changes_make_two_hunks",
            before: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n",
            edits: json!([{"oldText": "2\n", "newText": "two\n"}, {"oldText": "19", "newText": "nineteen"}]),
            dry_run: false,
            after: "1\ntwo\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\nnineteen\n20\n",
        },
    ];
    for case in cases {
        let file = format!("{}.txt", case.name);
        put(&fx.ws, &file, case.before);
        let outcome = fx
            .call(
                "edit_file",
                json!({"path": file, "edits": case.edits, "dryRun": case.dry_run}),
            )
            .await;
        assert!(!outcome.is_error, "{}: {}", case.name, outcome.text);
        assert_eq!(outcome.structured, Some(json!({"content": outcome.text})));
        assert_eq!(
            std::fs::read_to_string(fx.ws_path(&file)).expect("read"),
            case.after,
            "{}",
            case.name
        );
        // [END] keeps the final blank line visible in the snapshot.
        insta::assert_snapshot!(case.name, format!("{}[END]", fx.redact(&outcome.text)));
    }
}

#[tokio::test]
async fn failed_edits_change_nothing() {
    let fx = Fixture::start().await;
    put(&fx.ws, "f.txt", "alpha\nbeta\n");
    let cases = [
        (
            "no match",
            json!([{"oldText": "delta", "newText": "x"}]),
            "Could not find exact match for edit:\ndelta",
        ),
        (
            "second edit fails, first is not applied",
            json!([{"oldText": "alpha", "newText": "ALPHA"}, {"oldText": "gamma\nbeta", "newText": "x"}]),
            "Could not find exact match for edit:\ngamma\nbeta",
        ),
        (
            "empty oldText",
            json!([{"oldText": "", "newText": "x"}]),
            "Edit 0 has an empty oldText; give the text to replace (use write_file to write a whole file)",
        ),
    ];
    for (name, edits, expected) in cases {
        let text = fx
            .err("edit_file", json!({"path": "f.txt", "edits": edits}))
            .await;
        assert_eq!(text, expected, "{name}");
        assert_eq!(
            std::fs::read_to_string(fx.ws_path("f.txt")).expect("read"),
            "alpha\nbeta\n",
            "{name}"
        );
    }
}

#[tokio::test]
async fn non_utf8_files_are_refused() {
    let fx = Fixture::start().await;
    std::fs::write(fx.ws_path("bin.dat"), b"\xff\xfe\x00x").expect("write");
    let text = fx
        .err(
            "edit_file",
            json!({"path": "bin.dat", "edits": [{"oldText": "x", "newText": "y"}]}),
        )
        .await;
    assert_eq!(
        fx.redact(&text),
        "Cannot edit [WS]/bin.dat: the file is not valid UTF-8 text"
    );
}
