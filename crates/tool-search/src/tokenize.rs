//! Tokenisation shared by documents and queries: identifiers split on
//! camelCase, snake_case, kebab-case and dots; lowercased; English stop words
//! dropped; Snowball-stemmed, so `listing`, `lists` and `list` meet.

use rust_stemmers::{Algorithm, Stemmer};

/// Words too common in tool descriptions and queries to carry meaning.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "so", "that", "the",
    "then", "this", "to", "use", "using", "want", "was", "we", "what", "when", "which", "with",
    "you", "your", "tool", "tools", "please", "some", "all", "any",
];

/// Words agents use for the same action or thing in tool catalogs. A query
/// word in a group also searches the group's other words, at
/// [`SYNONYM_WEIGHT`]. Kept to plain developer-tool vocabulary: no
/// server- or tool-specific entries.
const SYNONYMS: &[&[&str]] = &[
    &["folder", "directory", "dir", "mkdir"],
    &["delete", "remove", "rm", "erase", "trash"],
    &["restore", "untrash", "recover", "undelete"],
    &["run", "execute", "exec", "shell", "command"],
    &["open", "navigate", "visit", "go"],
    &["url", "website", "site", "webpage", "page", "web"],
    &["image", "picture", "screenshot", "capture", "png"],
    &["create", "make", "new", "add"],
    &["find", "search", "locate", "lookup"],
    &["edit", "modify", "change", "replace", "patch"],
    &["write", "save", "store"],
    &["rename", "move"],
    &["download", "fetch", "retrieve"],
    &["history", "log"],
    &["timezone", "zone", "clock", "date"],
    &["summary", "summarise", "summarize", "about", "overview"],
    &["stage", "phase", "status"],
    &["size", "biggest", "largest", "bytes"],
];

/// Weight of a synonym relative to the query word it stands for.
pub const SYNONYM_WEIGHT: f32 = 0.4;

/// A reusable tokenizer (the stemmer and synonym table are built once).
pub struct Tokenizer {
    stemmer: Stemmer,
    synonyms: std::collections::HashMap<String, Vec<String>>,
}

impl Default for Tokenizer {
    fn default() -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut synonyms: std::collections::HashMap<String, Vec<String>> =
            std::collections::HashMap::new();
        for group in SYNONYMS {
            let stems: Vec<String> = group.iter().map(|w| stemmer.stem(w).into_owned()).collect();
            for stem in &stems {
                let entry = synonyms.entry(stem.clone()).or_default();
                for other in &stems {
                    if other != stem && !entry.contains(other) {
                        entry.push(other.clone());
                    }
                }
            }
        }
        Self { stemmer, synonyms }
    }
}

impl Tokenizer {
    /// Tokens of `text`, in order, stop words removed, stemmed.
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for word in split_words(text) {
            if STOP_WORDS.contains(&word.as_str()) {
                continue;
            }
            out.push(self.stemmer.stem(&word).into_owned());
        }
        out
    }

    /// Query tokens with their weights: each token at 1.0, then the
    /// synonyms of the tokens (not already present) at [`SYNONYM_WEIGHT`].
    pub fn query_tokens(&self, text: &str) -> Vec<(String, f32)> {
        let tokens = self.tokens(text);
        let mut out: Vec<(String, f32)> = Vec::new();
        for token in &tokens {
            if !out.iter().any(|(t, _)| t == token) {
                out.push((token.clone(), 1.0));
            }
        }
        for token in &tokens {
            for synonym in self.synonyms.get(token).into_iter().flatten() {
                if !out.iter().any(|(t, _)| t == synonym) {
                    out.push((synonym.clone(), SYNONYM_WEIGHT));
                }
            }
        }
        out
    }
}

/// Split into lowercase words: on anything not alphanumeric, and inside
/// identifiers at lower→Upper, letter↔digit and `HTMLParser`-style
/// boundaries.
pub fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        if chunk.is_empty() {
            continue;
        }
        let chars: Vec<char> = chunk.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next_is_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            let boundary = (prev.is_lowercase() && cur.is_uppercase())
                || (prev.is_alphabetic() && cur.is_numeric())
                || (prev.is_numeric() && cur.is_alphabetic())
                || (prev.is_uppercase() && cur.is_uppercase() && next_is_lower);
            if boundary {
                words.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        words.push(chars[start..].iter().collect::<String>().to_lowercase());
    }
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
    fn query_tokens_add_weighted_synonyms() {
        let tokenizer = Tokenizer::default();
        assert_eq!(
            tokenizer.query_tokens("new folder"),
            [
                ("new".to_owned(), 1.0),
                ("folder".to_owned(), 1.0),
                ("creat".to_owned(), SYNONYM_WEIGHT),
                ("make".to_owned(), SYNONYM_WEIGHT),
                ("add".to_owned(), SYNONYM_WEIGHT),
                ("directori".to_owned(), SYNONYM_WEIGHT),
                ("dir".to_owned(), SYNONYM_WEIGHT),
                ("mkdir".to_owned(), SYNONYM_WEIGHT),
            ]
        );
    }

    #[test]
    fn name_keys_ignore_style() {
        assert_eq!(name_key("read_text_file"), name_key("readTextFile"));
        assert_eq!(name_key("Read-Text-File"), "readtextfile");
    }
}
