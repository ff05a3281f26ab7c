//! The texts the trash tools answer with.
//!
//! `list_trash` gives a header line, then one block per item, sorted by
//! original path and then trashed path (so the older of two trashings of
//! one path comes first):
//!
//! ```text
//! The trash holds 2 items (17 bytes).
//!
//! file Architecture/Old_Doc.md
//!   trashed path: .trash/Architecture/Old_Doc__2026-03-14T18-30-00.md
//!   trashed at:   2026-03-14 18:30:00 UTC
//!   size:         12 bytes
//!
//! dir drafts
//!   trashed path: .trash/drafts__2026-03-14T18-31-07
//!   trashed at:   2026-03-14 18:31:07 UTC
//!   size:         5 bytes
//! ```
//!
//! The trashed path is what `untrash_file` / `untrash_directory` take.

use std::fmt::Write;

use super::TRASH_DIR;
use super::inventory::Inventory;

/// `1 item`, `2 items`.
fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `1 byte`, `12 bytes`.
pub fn bytes(n: u64) -> String {
    if n == 1 {
        "1 byte".to_owned()
    } else {
        format!("{n} bytes")
    }
}

/// The `list_trash` text.
pub fn render_inventory(inventory: &Inventory) -> String {
    if inventory.items.is_empty() {
        return "The trash is empty.".to_owned();
    }
    let mut out = format!(
        "The trash holds {} ({}).\n",
        count(inventory.items.len(), "item"),
        bytes(inventory.total_bytes)
    );
    for item in inventory.items.iter().take(MAX_LISTED_ITEMS) {
        let original = match &item.original {
            Some(original) => original.display().to_string(),
            None => "(original path unknown: the name has no trash suffix)".to_owned(),
        };
        let trashed_at = match &item.trashed_at {
            Some(at) => format!("{} UTC", at.strftime("%Y-%m-%d %H:%M:%S")),
            None => "unknown".to_owned(),
        };
        let _ = write!(
            out,
            "\n{} {original}\n  trashed path: {TRASH_DIR}/{}\n  trashed at:   {trashed_at}\n  size:         {}\n",
            item.kind.as_str(),
            item.trashed.display(),
            bytes(item.size)
        );
    }
    let more = inventory.items.len().saturating_sub(MAX_LISTED_ITEMS);
    if more > 0 {
        let _ = write!(
            out,
            "\n… and {}, not listed (the first {MAX_LISTED_ITEMS} by original path are).\n",
            count(more, "more item")
        );
    }
    out.pop();
    out
}

/// Items `list_trash` lists one by one; the rest are counted.
pub const MAX_LISTED_ITEMS: usize = 500;

/// The first `empty_trash` answer: what would go, and the token.
pub fn render_preview(inventory: &Inventory, token: &str) -> String {
    format!(
        "Emptying the trash would permanently delete {} ({}) from {TRASH_DIR}/. This cannot be undone: deleted items cannot be restored. \
         Review them with list_trash. To confirm, call empty_trash again within 5 minutes with {{\"confirm\": \"{token}\"}}. \
         The token works once, and only while the trash stays as it is now.",
        count(inventory.items.len(), "item"),
        bytes(inventory.total_bytes)
    )
}

/// The answer after the trash was emptied.
pub fn render_emptied(inventory: &Inventory) -> String {
    format!(
        "Permanently deleted {} ({}) from the trash.",
        count(inventory.items.len(), "item"),
        bytes(inventory.total_bytes)
    )
}

/// The answer when there is nothing to delete.
pub const NOTHING_TO_EMPTY: &str = "The trash is empty; nothing to delete.";

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use pretty_assertions::assert_eq;

    use super::super::inventory::TrashItem;
    use super::super::naming::Kind;
    use super::*;

    /// A trash of thousands of items answers with the first 500 and a count of the rest.
    #[test]
    fn a_huge_trash_lists_its_first_items_and_counts_the_rest() {
        let items: Vec<TrashItem> = (0..MAX_LISTED_ITEMS + 2)
            .map(|i| TrashItem {
                trashed: PathBuf::from(format!("f{i:04}")),
                original: None,
                kind: Kind::File,
                size: 1,
                trashed_at: None,
            })
            .collect();
        let inventory = Inventory {
            total_bytes: items.len() as u64,
            entries: items.len() as u64,
            items,
            fingerprint: [0; 32],
        };
        let text = render_inventory(&inventory);
        assert_eq!(text.matches("\nfile ").count(), MAX_LISTED_ITEMS);
        assert!(
            text.starts_with("The trash holds 502 items (502 bytes).\n"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "\n… and 2 more items, not listed (the first 500 by original path are)."
            ),
            "{}",
            text.lines().last().unwrap_or_default()
        );
    }
}
