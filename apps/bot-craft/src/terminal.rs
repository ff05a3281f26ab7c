//! Untrusted text made safe to print on a terminal.
//!
//! What the CLI prints often comes from elsewhere: a model's text (steered, perhaps, by a
//! prompt injection in a page or a file), a tool's input shown for approval, tool results,
//! a third-party server's tool names, descriptions, errors and stderr. Written raw, escape
//! sequences in it could move the cursor and rewrite what was shown (an approval showing
//! `ls` for `rm -rf ~`), fake a prompt, set the clipboard (OSC 52) or hide links (OSC 8);
//! bidirectional overrides and invisible characters could reorder or hide text; a long run
//! of spaces could push the part that matters off the screen.

/// How many spaces in a row are printed as they are; a longer run is written `␠×N`.
const MAX_SPACE_RUN: usize = 8;

/// Characters that change how text reads without showing themselves: Unicode's format
/// characters (bidirectional controls, zero-width characters, the byte-order mark, tags),
/// the line and paragraph separators, and the fillers that print as blanks.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{08E2}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{2800}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// `text` safe to print on a terminal: control characters (C0 but newline and tab, DEL, C1)
/// and invisible ones ([`invisible`]) are written as `\u{…}`, a run of more than eight
/// spaces as `␠×N` (but a line's indentation); a newline stays one unless `one_line` (then
/// ` ⏎ `, and a tab is escaped too).
pub fn printable(text: &str, one_line: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut spaces = 0usize;
    // Indentation (spaces at a line's start) is kept: pretty JSON nests by it.
    let flush = |out: &mut String, spaces: &mut usize| {
        let indent = out.is_empty() || out.ends_with('\n');
        if *spaces > MAX_SPACE_RUN && !indent {
            out.push_str(&format!("␠×{spaces}"));
        } else {
            out.extend(std::iter::repeat_n(' ', *spaces));
        }
        *spaces = 0;
    };
    for c in text.chars() {
        if c == ' ' {
            spaces += 1;
            continue;
        }
        flush(&mut out, &mut spaces);
        match c {
            '\n' if one_line => out.push_str(" ⏎ "),
            '\n' | '\t' if !one_line => out.push(c),
            c if c.is_control() || invisible(c) => {
                out.push_str(&c.escape_unicode().to_string());
            }
            c => out.push(c),
        }
    }
    flush(&mut out, &mut spaces);
    out
}

/// `println!` of untrusted `text` ([`printable`], lines kept).
pub fn print_lines(text: &str) {
    println!("{}", printable(text, false));
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::printable;

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
