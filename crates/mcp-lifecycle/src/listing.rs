//! What a background listing keeps per server ([`Listing`]) and how listings run
//! ([`ListingSettings`]); the listing itself is the manager's (`manager/listing.rs`).

/// How background listings run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListingSettings {
    /// Whether [`McpServerManager::list_unlisted`] lists at all (off in tests about other
    /// things, which then see servers start only when they ask).
    pub enabled: bool,
    /// Servers listed at once.
    pub concurrency: usize,
    /// Tries per server before it is left for the next listing run.
    pub attempts: u32,
}

impl Default for ListingSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            concurrency: 2,
            attempts: 4,
        }
    }
}

/// What is known of a server's tool list for a config version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Listing {
    /// Not looked at yet.
    #[default]
    Unknown,
    /// Listed (by a start of that version, or a cache captured after it was written).
    Listed { version: i64 },
    /// Not listed for that version.
    Missing { version: i64 },
}
