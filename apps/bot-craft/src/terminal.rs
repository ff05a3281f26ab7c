//! Untrusted text made safe to print on a terminal.
//!
//! What the CLI prints often comes from elsewhere: a model's text (steered, perhaps, by a
//! prompt injection in a page or a file), a tool's input shown for approval, tool results,
//! a third-party server's tool names, descriptions, errors and stderr. Written raw, escape
//! sequences in it could move the cursor and rewrite what was shown (an approval showing
//! `ls` for `rm -rf ~`), fake a prompt, set the clipboard (OSC 52) or hide links (OSC 8);
//! bidirectional overrides and invisible characters could reorder or hide text; a long run
//! of spaces could push the part that matters off the screen.

use observability::shown::invisible;

/// How many spaces in a row are printed as they are; a longer run is written `␠×N`.
const MAX_SPACE_RUN: usize = 8;

/// `text` safe to print on a terminal: control characters (C0 but newline and tab, DEL, C1)
/// and invisible ones ([`invisible`]) are written as `\u{…}`, a run of more than eight
/// blanks (spaces, and the other characters that print as one: no-break, em, ideographic…)
/// as `␠×N` (but the indentation after a kept newline); a newline stays one unless
/// `one_line` (then ` ⏎ `, and a tab is escaped too).
pub fn printable(text: &str, one_line: bool) -> String {
    escaped(text, one_line, true)
}

/// [`printable`] for the CLI's own aligned output (tables, rankings) holding untrusted
/// text: every space kept, lines kept.
pub fn printable_aligned(text: &str) -> String {
    escaped(text, false, false)
}

/// Serialized JSON safe to print: the characters [`printable`] escapes, which serde writes
/// as they are inside strings (DEL, C1, invisible ones), written as JSON escapes instead
/// (`\u009b`, a surrogate pair past U+FFFF), so the output is the same JSON value.
pub fn printable_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if (c.is_control() && !matches!(c, '\n' | '\t' | '\r')) || invisible(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Characters that print as blank space (a run of them is counted as one).
fn blank(c: char) -> bool {
    matches!(
        c,
        ' ' | '\u{00A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

fn escaped(text: &str, one_line: bool, collapse_spaces: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let mut spaces = 0usize;
    // Indentation (spaces after a newline kept as one) is kept: pretty JSON nests by it.
    let flush = |out: &mut String, run: &mut String, spaces: &mut usize| {
        let indent = !one_line && out.ends_with('\n');
        if collapse_spaces && *spaces > MAX_SPACE_RUN && !indent {
            out.push_str(&format!("␠×{spaces}"));
        } else {
            out.push_str(run);
        }
        run.clear();
        *spaces = 0;
    };
    for c in text.chars() {
        if blank(c) {
            run.push(c);
            spaces += 1;
            continue;
        }
        flush(&mut out, &mut run, &mut spaces);
        match c {
            '\n' if one_line => out.push_str(" ⏎ "),
            '\n' | '\t' if !one_line => out.push(c),
            c if c.is_control() || invisible(c) => {
                out.push_str(&c.escape_unicode().to_string());
            }
            c => out.push(c),
        }
    }
    flush(&mut out, &mut run, &mut spaces);
    out
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::{printable, printable_aligned, printable_json};

    #[test]
    fn json_stays_the_same_json() {
        let value = serde_json::json!({
            "text": "csi\u{9b}31m rtl\u{202e} tag\u{e0041} esc\u{1b} nl\n",
            "spaces": "a          b",
        });
        let text = serde_json::to_string_pretty(&value).expect("json");
        let shown = printable_json(&text);
        for hidden in ['\u{9b}', '\u{202e}', '\u{e0041}', '\u{1b}'] {
            assert!(!shown.contains(hidden), "{shown}");
        }
        assert!(
            shown.contains("\\u009b") && shown.contains("\\udb40\\udc41"),
            "{shown}"
        );
        let back: serde_json::Value = serde_json::from_str(&shown).expect("still JSON");
        assert_eq!(back, value);
    }

    #[test]
    fn aligned_output_keeps_its_spaces() {
        assert_eq!(
            printable_aligned("bash          7.2\u{1b}[2K"),
            "bash          7.2\\u{1b}[2K"
        );
    }

    #[test]
    fn untrusted_text_cannot_drive_or_hide_on_the_terminal() {
        let cases = [
            ("plain text", false, "plain text"),
            ("two\nlines", false, "two\nlines"),
            ("two\nlines", true, "two ⏎ lines"),
            ("a\tb", false, "a\tb"),
            ("a\tb", true, "a\\u{9}b"),
            (
                "\u{1b}[8mhidden\u{1b}[0m",
                false,
                "\\u{1b}[8mhidden\\u{1b}[0m",
            ),
            (
                "\u{1b}]52;c;Y3VybCBldmlsfHNo\u{7}",
                false,
                "\\u{1b}]52;c;Y3VybCBldmlsfHNo\\u{7}",
            ),
            ("fake\rprompt", false, "fake\\u{d}prompt"),
            ("del\u{7f}", false, "del\\u{7f}"),
            ("abc\u{202e}txt.exe", false, "abc\\u{202e}txt.exe"),
            ("c1\u{9b}31m", false, "c1\\u{9b}31m"),
            ("zero\u{200b}width", false, "zero\\u{200b}width"),
            ("tag\u{e0041}\u{e0042}", false, "tag\\u{e0041}\\u{e0042}"),
            ("bom\u{feff}", false, "bom\\u{feff}"),
            ("line\u{2028}sep", false, "line\\u{2028}sep"),
            ("filler\u{3164}", false, "filler\\u{3164}"),
            ("eight        spaces", false, "eight        spaces"),
            ("rm -rf ~          ls", false, "rm -rf ~␠×10ls"),
            ("trailing          ", false, "trailing␠×10"),
            ("          leading", false, "␠×10leading"),
            ("          leading", true, "␠×10leading"),
            (
                "em\u{2003}\u{2003}\u{2003}\u{2003}\u{2003}\u{2003}\u{2003}\u{2003}\u{2003}x",
                false,
                "em␠×9x",
            ),
            ("nbsp\u{a0}x", false, "nbsp\u{a0}x"),
            (
                "{\n          \"deep\": 1\n}",
                false,
                "{\n          \"deep\": 1\n}",
            ),
            ("émoji ✓ and 中文", false, "émoji ✓ and 中文"),
        ];
        for (text, one_line, expected) in cases {
            assert_eq!(printable(text, one_line), expected, "{text:?}");
        }
    }
}
