//! Bearer keys as BotCraft keeps them: a SHA-256 digest, never the key, compared in constant
//! time ([`KeyRing::find`] compares every key whatever matches, and the digests have one
//! length, so neither a key's length nor its first wrong byte shows in the timing).

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The digest of one key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyDigest([u8; 32]);

impl std::fmt::Debug for KeyDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyDigest(…)")
    }
}

impl KeyDigest {
    pub fn of(key: &str) -> Self {
        Self(Sha256::digest(key.as_bytes()).into())
    }

    /// The digest as hex (what a store row holds).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// Keys, each with what it grants (`T`).
#[derive(Clone)]
pub struct KeyRing<T> {
    entries: Vec<(KeyDigest, T)>,
}

impl<T> Default for KeyRing<T> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
        }
    }
}

impl<T> std::fmt::Debug for KeyRing<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyRing({} keys)", self.entries.len())
    }
}

impl<T> KeyRing<T> {
    /// Add `key` granting `grant`; an empty key is ignored.
    pub fn insert(&mut self, key: &str, grant: T) {
        if !key.is_empty() {
            self.entries.push((KeyDigest::of(key), grant));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// What `presented` grants. Every key is compared, whichever matches.
    pub fn find(&self, presented: &str) -> Option<&T> {
        let presented = KeyDigest::of(presented);
        let mut found = None;
        for (digest, grant) in &self.entries {
            if bool::from(digest.0.ct_eq(&presented.0)) {
                found = Some(grant);
            }
        }
        found
    }

    /// Every grant, in insertion order.
    pub fn grants(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().map(|(_, grant)| grant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn keys_are_found_by_their_digest_only() {
        let mut ring = KeyRing::default();
        ring.insert("alpha", "a");
        ring.insert("", "empty");
        ring.insert("beta", "b");
        assert_eq!(ring.len(), 2);
        assert_eq!(ring.find("alpha"), Some(&"a"));
        assert_eq!(ring.find("beta"), Some(&"b"));
        assert_eq!(ring.find("alph"), None);
        assert_eq!(ring.find(""), None);
        assert_eq!(format!("{:?}", KeyDigest::of("alpha")), "KeyDigest(…)");
        assert_eq!(KeyDigest::of("x").to_hex().len(), 64);
    }
}
