//! The BERT tokenizer of a sentence-transformers folder, read from its
//! `tokenizer.json`: `BertNormalizer` (clean text, spaces around CJK
//! characters, accents stripped, lowercase), `BertPreTokenizer` (split on
//! whitespace and punctuation) and the `WordPiece` model (greedy
//! longest-match-first with a continuing-subword prefix), then
//! `[CLS] … [SEP]`.
//!
//! Only this pipeline is understood; a `tokenizer.json` describing another
//! one is refused at load time instead of being tokenised wrongly.

use std::collections::HashMap;

use serde::Deserialize;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

/// Why a `tokenizer.json` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenizerError {
    #[error("not JSON in the expected shape: {0}")]
    Json(String),
    #[error("unsupported {part} {kind:?}: only BERT WordPiece tokenizers are understood")]
    Unsupported { part: &'static str, kind: String },
    #[error("the vocabulary has no {0} token")]
    MissingToken(String),
}

#[derive(Deserialize)]
struct TokenizerFile {
    normalizer: Option<NormalizerSpec>,
    pre_tokenizer: Option<TypeOnly>,
    model: ModelSpec,
}

#[derive(Deserialize)]
struct TypeOnly {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct NormalizerSpec {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default = "yes")]
    clean_text: bool,
    #[serde(default = "yes")]
    handle_chinese_chars: bool,
    strip_accents: Option<bool>,
    #[serde(default = "yes")]
    lowercase: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct ModelSpec {
    #[serde(rename = "type")]
    kind: String,
    unk_token: String,
    #[serde(default = "default_prefix")]
    continuing_subword_prefix: String,
    #[serde(default = "default_max_chars")]
    max_input_chars_per_word: usize,
    vocab: HashMap<String, u32>,
}

fn default_prefix() -> String {
    "##".into()
}

fn default_max_chars() -> usize {
    100
}

/// A loaded WordPiece tokenizer.
#[derive(Debug)]
pub struct WordPiece {
    vocab: HashMap<String, u32>,
    prefix: String,
    max_chars: usize,
    unk: u32,
    cls: u32,
    sep: u32,
    clean_text: bool,
    chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
}

impl WordPiece {
    /// Parse a `tokenizer.json`.
    pub fn from_json(text: &str) -> Result<Self, TokenizerError> {
        let file: TokenizerFile =
            serde_json::from_str(text).map_err(|e| TokenizerError::Json(e.to_string()))?;
        if file.model.kind != "WordPiece" {
            return Err(TokenizerError::Unsupported {
                part: "model",
                kind: file.model.kind,
            });
        }
        if let Some(pre) = &file.pre_tokenizer
            && pre.kind != "BertPreTokenizer"
        {
            return Err(TokenizerError::Unsupported {
                part: "pre_tokenizer",
                kind: pre.kind.clone(),
            });
        }
        let normalizer = match file.normalizer {
            Some(n) if n.kind == "BertNormalizer" => n,
            Some(n) => {
                return Err(TokenizerError::Unsupported {
                    part: "normalizer",
                    kind: n.kind,
                });
            }
            None => NormalizerSpec {
                kind: "BertNormalizer".into(),
                clean_text: false,
                handle_chinese_chars: false,
                strip_accents: Some(false),
                lowercase: false,
            },
        };
        let vocab = file.model.vocab;
        let id = |token: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| TokenizerError::MissingToken(token.to_owned()))
        };
        let unk = id(&file.model.unk_token)?;
        let cls = id("[CLS]")?;
        let sep = id("[SEP]")?;
        Ok(Self {
            unk,
            cls,
            sep,
            prefix: file.model.continuing_subword_prefix,
            max_chars: file.model.max_input_chars_per_word,
            clean_text: normalizer.clean_text,
            chinese_chars: normalizer.handle_chinese_chars,
            // HF: `strip_accents: null` follows `lowercase`.
            strip_accents: normalizer.strip_accents.unwrap_or(normalizer.lowercase),
            lowercase: normalizer.lowercase,
            vocab,
        })
    }

    /// Token ids of `text` as `[CLS] … [SEP]`, at most `max_len` ids (the
    /// text is cut, the special tokens kept). Only the first
    /// [`CHARS_PER_TOKEN_READ`] × `max_len` characters are read: every word
    /// gives at least one id, so a text of ordinary words is cut long before;
    /// a text of megabytes (a hostile tool description) costs what that prefix
    /// costs, not a string per word of the whole text.
    pub fn encode(&self, text: &str, max_len: usize) -> Vec<u32> {
        let budget = max_len.saturating_sub(2);
        let mut ids = Vec::with_capacity(budget.min(64) + 2);
        ids.push(self.cls);
        let read = max_len.saturating_mul(CHARS_PER_TOKEN_READ);
        let text = text
            .char_indices()
            .nth(read)
            .map_or(text, |(end, _)| &text[..end]);
        'words: for word in pre_tokenize(&self.normalize(text)) {
            for id in self.word_ids(&word) {
                if ids.len() > budget {
                    break 'words;
                }
                ids.push(id);
            }
        }
        ids.push(self.sep);
        ids
    }

    fn normalize(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if self.clean_text {
                if c == '\0' || c == '\u{fffd}' || is_control(c) {
                    continue;
                }
                if is_whitespace(c) {
                    out.push(' ');
                    continue;
                }
            }
            if self.chinese_chars && is_cjk(c) {
                out.push(' ');
                out.push(c);
                out.push(' ');
            } else {
                out.push(c);
            }
        }
        let out = if self.strip_accents {
            out.nfd()
                .filter(|c| get_general_category(*c) != GeneralCategory::NonspacingMark)
                .collect()
        } else {
            out
        };
        if self.lowercase {
            out.to_lowercase()
        } else {
            out
        }
    }

    /// WordPiece of one pre-token: greedy longest match first; a word with
    /// no full cover (or too long) is one `[UNK]`.
    fn word_ids(&self, word: &str) -> Vec<u32> {
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        if chars.len() > self.max_chars {
            return vec![self.unk];
        }
        let mut ids = Vec::new();
        let mut start = 0;
        let mut piece = String::new();
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while start < end {
                let from = chars[start].0;
                let to = chars.get(end).map_or(word.len(), |(at, _)| *at);
                piece.clear();
                if start > 0 {
                    piece.push_str(&self.prefix);
                }
                piece.push_str(&word[from..to]);
                if let Some(&id) = self.vocab.get(&piece) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => ids.push(id),
                None => return vec![self.unk],
            }
            start = end;
        }
        ids
    }
}

/// How many characters of a text [`WordPiece::encode`] reads per id it may give.
pub const CHARS_PER_TOKEN_READ: usize = 64;

/// BERT's pre-tokenizer: whitespace separates words, and every punctuation
/// character is a word of its own.
fn pre_tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
        } else if is_punctuation(c) {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            words.push(c.to_string());
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
        || get_general_category(c) == GeneralCategory::SpaceSeparator
}

fn is_control(c: char) -> bool {
    if matches!(c, '\t' | '\n' | '\r') {
        return false;
    }
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
            | GeneralCategory::Surrogate
    )
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(
            get_general_category(c),
            GeneralCategory::ConnectorPunctuation
                | GeneralCategory::DashPunctuation
                | GeneralCategory::OpenPunctuation
                | GeneralCategory::ClosePunctuation
                | GeneralCategory::InitialPunctuation
                | GeneralCategory::FinalPunctuation
                | GeneralCategory::OtherPunctuation
        )
}

/// The CJK Unified Ideographs blocks BERT puts spaces around.
fn is_cjk(c: char) -> bool {
    matches!(
        u32::from(c),
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B820..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn tiny() -> WordPiece {
        let vocab = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "read", "##ing", "file", "s", "##s", "un", "##aff",
            "##able", ",", "cafe", "中", "!",
        ];
        let vocab: serde_json::Map<String, serde_json::Value> = vocab
            .iter()
            .enumerate()
            .map(|(i, t)| ((*t).to_owned(), serde_json::json!(i)))
            .collect();
        let json = serde_json::json!({
            "normalizer": {"type": "BertNormalizer", "clean_text": true,
                "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]",
                "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                "vocab": vocab}
        });
        WordPiece::from_json(&json.to_string()).expect("tokenizer")
    }

    #[test]
    fn encodes_like_bert() {
        let t = tiny();
        let cases: &[(&str, &[u32])] = &[
            ("", &[2, 3]),
            ("Reading files", &[2, 4, 5, 6, 8, 3]),
            ("unaffable, café!", &[2, 9, 10, 11, 12, 13, 15, 3]),
            ("zzz", &[2, 1, 3]),
            ("中文", &[2, 14, 1, 3]),
            ("read\u{0}\tfile", &[2, 4, 6, 3]),
        ];
        for (text, ids) in cases {
            assert_eq!(t.encode(text, 128), ids.to_vec(), "{text:?}");
        }
    }

    #[test]
    fn cuts_to_the_length_keeping_special_tokens() {
        let t = tiny();
        assert_eq!(t.encode("read read read read", 4), vec![2, 4, 4, 3]);
    }

    /// A text of millions of one-character words is read only as far as its
    /// ids can go: the same ids as its first words alone.
    #[test]
    fn a_huge_text_is_read_only_as_far_as_its_ids_go() {
        let t = tiny();
        let huge = "! ".repeat(4_000_000);
        assert_eq!(t.encode(&huge, 8), t.encode("! ! ! ! ! ! !", 8));
        assert_eq!(t.encode(&huge, 8), vec![2, 15, 15, 15, 15, 15, 15, 3]);
    }

    #[test]
    fn refuses_other_pipelines() {
        let json = serde_json::json!({"model": {"type": "BPE", "unk_token": "x", "vocab": {}}});
        assert!(matches!(
            WordPiece::from_json(&json.to_string()),
            Err(TokenizerError::Unsupported { part: "model", .. })
        ));
    }
}
