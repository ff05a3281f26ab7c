//! Tokenisation shared by documents and queries: identifiers split on
//! camelCase, snake_case, kebab-case and dots; lowercased; English stop words
//! dropped; Snowball-stemmed, so `listing`, `lists` and `list` meet.
//!
//! There is no synonym table: words that share no stem are matched by the
//! dense signal (an embedding model), not by a hand-made list.

use rust_stemmers::{Algorithm, Stemmer};

/// Words too common in tool descriptions and queries to carry meaning.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "so", "that", "the",
    "then", "this", "to", "use", "using", "want", "was", "we", "what", "when", "which", "with",
    "you", "your", "tool", "tools", "please", "some", "all", "any",
];

/// A reusable tokenizer (the stemmer is built once).
pub struct Tokenizer {
    stemmer: Stemmer,
}

impl Default for Tokenizer {
    fn default() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }
}

impl Tokenizer {
    /// Tokens of `text`, in order, stop words removed, stemmed.
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_token(text, |token| out.push(token.to_owned()));
        out
    }

    /// Call `f` with each token of `text`, as [`Tokenizer::tokens`] would
    /// return them, without allocating a list.
    pub fn for_each_token(&self, text: &str, mut f: impl FnMut(&str)) {
        let mut word = String::new();
        for_each_word(text, &mut word, |word| {
            if !STOP_WORDS.contains(&word) {
                f(&self.stemmer.stem(word));
            }
        });
    }
}

impl Tokenizer {
    /// The token of one lowercase word: `None` for a stop word, else its stem.
    pub(crate) fn token_of(&self, word: &str) -> Option<String> {
        (!STOP_WORDS.contains(&word)).then(|| self.stemmer.stem(word).into_owned())
    }
}

/// Hand each lowercase word of `text` to `f` (the words [`split_words`] returns), through a
/// reused buffer.
pub(crate) fn for_each_lower_word(text: &str, f: impl FnMut(&str)) {
    let mut word = String::new();
    for_each_word(text, &mut word, f);
}

/// Split into lowercase words (see [`split_words`]), handing each to `f`
/// through the reused buffer `word`. ASCII text (nearly every tool's) is
/// split byte by byte; other text char by char, with Unicode's classes.
fn for_each_word(text: &str, word: &mut String, f: impl FnMut(&str)) {
    if text.is_ascii() {
        for_each_ascii_word(text.as_bytes(), word, f);
    } else {
        for_each_unicode_word(text, word, f);
    }
}

/// [`for_each_word`] for ASCII text: the same boundaries, on bytes.
fn for_each_ascii_word(text: &[u8], word: &mut String, mut f: impl FnMut(&str)) {
    let mut emit = |bytes: &[u8]| {
        word.clear();
        word.extend(bytes.iter().map(|b| char::from(b.to_ascii_lowercase())));
        f(word);
    };
    for chunk in text.split(|b| !b.is_ascii_alphanumeric()) {
        if chunk.is_empty() {
            continue;
        }
        let mut start = 0;
        for at in 1..chunk.len() {
            let (prev, cur) = (chunk[at - 1], chunk[at]);
            let next_is_lower = chunk.get(at + 1).is_some_and(u8::is_ascii_lowercase);
            let boundary = (prev.is_ascii_lowercase() && cur.is_ascii_uppercase())
                || (prev.is_ascii_alphabetic() && cur.is_ascii_digit())
                || (prev.is_ascii_digit() && cur.is_ascii_alphabetic())
                || (prev.is_ascii_uppercase() && cur.is_ascii_uppercase() && next_is_lower);
            if boundary {
                emit(&chunk[start..at]);
                start = at;
            }
        }
        emit(&chunk[start..]);
    }
}

/// [`for_each_word`] for any text.
fn for_each_unicode_word(text: &str, word: &mut String, mut f: impl FnMut(&str)) {
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        if chunk.is_empty() {
            continue;
        }
        let mut chars = chunk.char_indices().peekable();
        let mut start = 0;
        let mut prev: Option<char> = None;
        while let Some((at, cur)) = chars.next() {
            if let Some(prev) = prev {
                let next_is_lower = chars.peek().is_some_and(|(_, c)| c.is_lowercase());
                let boundary = (prev.is_lowercase() && cur.is_uppercase())
                    || (prev.is_alphabetic() && cur.is_numeric())
                    || (prev.is_numeric() && cur.is_alphabetic())
                    || (prev.is_uppercase() && cur.is_uppercase() && next_is_lower);
                if boundary {
                    lower_into(&chunk[start..at], word);
                    f(word);
                    start = at;
                }
            }
            prev = Some(cur);
        }
        lower_into(&chunk[start..], word);
        f(word);
    }
}

fn lower_into(text: &str, out: &mut String) {
    out.clear();
    if text.is_ascii() {
        out.push_str(text);
        out.make_ascii_lowercase();
    } else {
        out.extend(text.chars().flat_map(char::to_lowercase));
    }
}

/// Split into lowercase words: on anything not alphanumeric, and inside
/// identifiers at lower→Upper, letter↔digit and `HTMLParser`-style
/// boundaries.
pub fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    for_each_word(text, &mut word, |w| words.push(w.to_owned()));
    words
}

/// The key two names are compared by for an exact-name match: lowercase
/// letters and digits only (`read_text_file`, `readTextFile` and
/// `read-text-file` share `readtextfile`).
pub fn name_key(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The ASCII path splits every ASCII text as the Unicode one does: a fixed
    /// sequence of texts drawn from the characters that decide boundaries.
    #[test]
    fn the_ascii_path_splits_as_the_unicode_one() {
        const ALPHABET: &[u8] = b"aZ9_ -.bQ0zA/xY";
        let mut state = 0x2545_f491_u32;
        for _ in 0..20_000 {
            let length = (state % 12) as usize;
            let text: String = (0..length)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    char::from(ALPHABET[state as usize % ALPHABET.len()])
                })
                .collect();
            let (mut ascii, mut unicode) = (Vec::new(), Vec::new());
            let mut word = String::new();
            for_each_ascii_word(text.as_bytes(), &mut word, |w| ascii.push(w.to_owned()));
            for_each_unicode_word(&text, &mut word, |w| unicode.push(w.to_owned()));
            assert_eq!(ascii, unicode, "{text:?}");
            state = state.wrapping_add(0x9e37_79b9);
        }
    }

    #[test]
    fn splits_identifier_styles() {
        let cases: &[(&str, &[&str])] = &[
            ("read_text_file", &["read", "text", "file"]),
            ("readTextFile", &["read", "text", "file"]),
            ("browser-navigate", &["browser", "navigate"]),
            ("git.log", &["git", "log"]),
            ("HTMLParser", &["html", "parser"]),
            ("get_v2Items", &["get", "v", "2", "items"]),
            ("  Hello, World!  ", &["hello", "world"]),
            ("", &[]),
        ];
        for (input, expected) in cases {
            assert_eq!(split_words(input), *expected, "input {input:?}");
        }
    }

    #[test]
    fn tokens_are_stemmed_without_stop_words() {
        let tokenizer = Tokenizer::default();
        assert_eq!(
            tokenizer.tokens("Lists the files in a directory"),
            ["list", "file", "directori"]
        );
        assert_eq!(tokenizer.tokens("listing"), tokenizer.tokens("lists"));
    }

    #[test]
    fn name_keys_ignore_style() {
        assert_eq!(name_key("read_text_file"), name_key("readTextFile"));
        assert_eq!(name_key("Read-Text-File"), "readtextfile");
    }
}
