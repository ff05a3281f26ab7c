//! What an answer costs on the wire. Every tool answer travels as one JSON-RPC line, its
//! text twice (content and `structuredContent`), and MCP clients refuse a line over 16 MiB:
//! the caps on answers (`FORGE_FS_MAX_READ_BYTES`) count a text's JSON-escaped size, in which
//! a quote or backslash takes two bytes and a control character up to six (`\u0000`).

/// The bytes `c` takes in a JSON string.
pub fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if u32::from(c) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The bytes `text` takes in a JSON string (without its quotes).
pub fn escaped_size(text: &str) -> usize {
    text.chars().map(escaped_len).sum()
}

/// Which end of a text an answer cut keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    First,
    Last,
}

/// Where to cut `text` so that its JSON-escaped form fits in `max` bytes, keeping `part`
/// (the byte range kept); `None` when it fits whole.
pub fn fit_escaped(text: &str, max: usize, part: Part) -> Option<std::ops::Range<usize>> {
    let mut total = 0usize;
    let mut over = |c: char| {
        total += escaped_len(c);
        total > max
    };
    match part {
        Part::First => text
            .char_indices()
            .find(|(_, c)| over(*c))
            .map(|(at, _)| 0..at),
        Part::Last => text
            .char_indices()
            .rev()
            .find(|(_, c)| over(*c))
            .map(|(at, c)| at + c.len_utf8()..text.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_serde_json() {
        for text in [
            "plain",
            "qu\"ote",
            "back\\slash",
            "\n\r\t",
            "\u{0}\u{1f}\u{7f}",
            "é漢🙂",
        ] {
            let json = serde_json::to_string(text).expect("json");
            assert_eq!(escaped_size(text), json.len() - 2, "{text:?}");
        }
    }
}
