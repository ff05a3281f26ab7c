//! [`Fingerprint`]: how BotCraft tells whether something changed. A SHA-256, in hex, of a
//! JSON array written straight into the hash: each item either a value in canonical form or
//! a JSON text the caller already has (for types whose serialization is fixed, such as a
//! struct's, which is cheaper than building a `Value` to sort). Every "did it change" hash
//! goes through it: a server's tool list (`store::tools_hash`, stored with the tool cache),
//! a bot's toolset (`toolset`), a search catalog (`tool_search::catalog_hash`).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// See the module's header.
#[derive(Debug, Clone)]
pub struct Fingerprint {
    hasher: Sha256,
    items: usize,
    /// Reused for each item's canonical text.
    scratch: String,
}

impl Default for Fingerprint {
    fn default() -> Self {
        Self::new()
    }
}

impl Fingerprint {
    /// An empty array so far.
    pub fn new() -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"[");
        Self {
            hasher,
            items: 0,
            scratch: String::new(),
        }
    }

    fn separate(&mut self) {
        if self.items > 0 {
            self.hasher.update(b",");
        }
        self.items += 1;
    }

    /// The next item: `value` in canonical form.
    pub fn value(&mut self, value: &Value) -> &mut Self {
        self.separate();
        self.scratch.clear();
        crate::write(value, &mut self.scratch);
        self.hasher.update(self.scratch.as_bytes());
        self
    }

    /// The next item: `json`, a JSON text whose form the caller keeps fixed (the serialization
    /// of a struct, say). Not re-parsed: two texts of one value that differ in form differ.
    pub fn json_text(&mut self, json: &str) -> &mut Self {
        self.separate();
        self.hasher.update(json.as_bytes());
        self
    }

    /// The hex SHA-256 of the array written.
    pub fn finish(mut self) -> String {
        self.hasher.update(b"]");
        hex::encode(self.hasher.finalize())
    }
}

/// The [`Fingerprint`] of `values`, each in canonical form: the hash of the canonical text of
/// the array they make.
pub fn fingerprint<'a>(values: impl IntoIterator<Item = &'a Value>) -> String {
    let mut fingerprint = Fingerprint::new();
    for value in values {
        fingerprint.value(value);
    }
    fingerprint.finish()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn sha_hex(text: &str) -> String {
        hex::encode(Sha256::digest(text.as_bytes()))
    }

    #[test]
    fn a_fingerprint_is_the_hash_of_the_canonical_array() {
        let items = [json!({"b": 1, "a": 2.0}), json!("x"), json!([])];
        assert_eq!(
            fingerprint(&items),
            sha_hex(&crate::to_string(&Value::Array(items.to_vec())))
        );
        assert_eq!(fingerprint(&[]), sha_hex("[]"));
    }

    #[test]
    fn json_texts_and_values_mix_as_items_of_one_array() {
        let mut mixed = Fingerprint::new();
        mixed
            .json_text(r#"{"z":1,"a":2}"#)
            .value(&json!({"z": 1, "a": 2}));
        assert_eq!(mixed.finish(), sha_hex(r#"[{"z":1,"a":2},{"a":2,"z":1}]"#));
    }

    #[test]
    fn order_and_content_change_the_fingerprint_and_key_order_does_not() {
        let a = json!({"name": "a", "n": 1});
        let b = json!({"name": "b"});
        let a_reordered: Value = serde_json::from_str(r#"{"n": 1, "name": "a"}"#).expect("JSON");
        assert_eq!(fingerprint([&a, &b]), fingerprint([&a_reordered, &b]));
        assert_ne!(fingerprint([&a, &b]), fingerprint([&b, &a]));
        assert_ne!(fingerprint([&a]), fingerprint([&b]));
    }
}
