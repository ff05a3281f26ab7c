//! [`KeyTable`]: a segment's table of words (its terms, its tools' name keys), hashed with
//! one key for the whole process, so that a search hashes each query word once
//! ([`key_hash`]) and looks it up in every segment with that hash. The hash is std's
//! SipHash-1-3 with a random key, as `HashMap`'s: a catalog cannot choose words that
//! collide.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::OnceLock;

use hashbrown::HashTable;

/// The hash of `key` in every [`KeyTable`] of this process.
pub(crate) fn key_hash(key: &str) -> u64 {
    static STATE: OnceLock<RandomState> = OnceLock::new();
    STATE.get_or_init(RandomState::new).hash_one(key)
}

/// Words and a value for each.
#[derive(Debug, Default)]
pub(crate) struct KeyTable<V> {
    table: HashTable<(String, V)>,
}

impl<V> KeyTable<V> {
    /// The value of `key`, whose [`key_hash`] is `hash`.
    pub(crate) fn get(&self, key: &str, hash: u64) -> Option<&V> {
        self.table
            .find(hash, |(k, _)| k == key)
            .map(|(_, value)| value)
    }

    /// The value of `key`, made by `make` if it has none yet.
    pub(crate) fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> V) -> &mut V {
        let hash = key_hash(key);
        let entry = self
            .table
            .entry(hash, |(k, _)| k == key, |(k, _)| key_hash(k));
        &mut entry
            .or_insert_with(|| (key.to_owned(), make()))
            .into_mut()
            .1
    }

    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.table.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_by_their_hash_only() {
        let mut table = KeyTable::default();
        for (i, word) in ["read", "file", "trash", "restor"].iter().enumerate() {
            *table.get_or_insert_with(word, || 0) += i;
        }
        *table.get_or_insert_with("file", || 0) += 10;
        assert_eq!(table.len(), 4);
        assert_eq!(table.get("file", key_hash("file")), Some(&11));
        assert_eq!(table.get("trash", key_hash("trash")), Some(&2));
        assert_eq!(table.get("missing", key_hash("missing")), None);
        let mut all: Vec<(&str, usize)> = table.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        all.sort();
        assert_eq!(
            all,
            vec![("file", 11), ("read", 0), ("restor", 3), ("trash", 2)]
        );
    }
}
