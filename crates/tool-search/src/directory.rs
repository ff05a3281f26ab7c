//! [`Directory`]: a large index's own table of where each word is, so a query word is looked
//! up once for the whole index instead of once in each of its segments.
//!
//! An index is one segment per server, and each segment has its own tables of terms and
//! name keys ([`crate::keys::KeyTable`]). At 100,000 tools there are thousands of segments,
//! and a query of eight words made tens of thousands of lookups, most of them misses. The
//! directory lists, for each term, the segments that have it (with the term's number there),
//! and for each name key the segments that have it; a search reads those lists and touches
//! no other segment. It costs a pass over every segment's words when the index is made, so
//! only large indexes have one ([`crate::index`]'s `LARGE_INDEX`).

use std::sync::Arc;

use crate::keys::KeyTable;
use crate::segment::Segment;

/// Where each word of an index's segments is.
#[derive(Debug, Default)]
pub(crate) struct Directory {
    /// Each term: (segment, the term's number in that segment), in segment order.
    terms: KeyTable<Vec<(u32, u32)>>,
    /// Each name key: the segments that have it, in order.
    names: KeyTable<Vec<u32>>,
}

impl Directory {
    pub(crate) fn build(segments: &[Arc<Segment>]) -> Self {
        let mut directory = Self::default();
        for (at, segment) in segments.iter().enumerate() {
            let at = at as u32;
            for (term, &number) in segment.terms.iter() {
                directory
                    .terms
                    .get_or_insert_with(term, Vec::new)
                    .push((at, number));
            }
            for (key, _) in segment.name_keys.iter() {
                directory.names.get_or_insert_with(key, Vec::new).push(at);
            }
        }
        directory
    }

    /// The (segment, term number) pairs of `term`, whose [`crate::keys::key_hash`] is `hash`.
    pub(crate) fn term(&self, term: &str, hash: u64) -> &[(u32, u32)] {
        self.terms.get(term, hash).map_or(&[], Vec::as_slice)
    }

    /// The segments with name key `key`, whose hash is `hash`.
    pub(crate) fn name(&self, key: &str, hash: u64) -> &[u32] {
        self.names.get(key, hash).map_or(&[], Vec::as_slice)
    }

    /// Bytes held on the heap, about: the words and the lists.
    pub(crate) fn heap_bytes(&self) -> usize {
        let terms: usize = self
            .terms
            .iter()
            .map(|(term, list)| term.capacity() + list.capacity() * 8 + 48)
            .sum();
        let names: usize = self
            .names
            .iter()
            .map(|(key, list)| key.capacity() + list.capacity() * 4 + 48)
            .sum();
        terms + names
    }
}
