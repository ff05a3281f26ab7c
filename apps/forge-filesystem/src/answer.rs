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
