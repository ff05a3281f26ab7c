//! `empty_trash`'s two steps: a preview hands out a one-time token bound to
//! the trash it described; only that token, within its lifetime and while
//! the trash is unchanged, lets the deletion happen.
//!
//! Tokens are 128 random bits from the kernel (`/dev/urandom`), held in this
//! process only. One token is live at a time: a new preview replaces the
//! previous token. A token is spent by the first attempt that presents it,
//! whether that attempt then succeeds or finds it expired or stale.

use std::io::Read;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a token stays valid.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// Why a token was refused. Nothing was deleted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfirmError {
    #[error(
        "The confirmation token is unknown or was already used. Nothing was deleted. Call empty_trash without confirm to get a new token."
    )]
    Unknown,
    #[error(
        "The confirmation token has expired (tokens last 5 minutes). Nothing was deleted. Call empty_trash without confirm to get a new token."
    )]
    Expired,
    #[error(
        "The trash has changed since the token was issued. Nothing was deleted. Call empty_trash without confirm to review it again and get a new token."
    )]
    Changed,
}

struct Pending {
    token: String,
    fingerprint: [u8; 32],
    issued: Instant,
}

/// The live confirmation token, if any.
#[derive(Default)]
pub struct Confirmations {
    pending: Mutex<Option<Pending>>,
}

impl std::fmt::Debug for Confirmations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confirmations").finish_non_exhaustive()
    }
}

impl Confirmations {
    /// Issue `token` for a trash whose fingerprint is `fingerprint`,
    /// replacing any earlier token.
    pub fn issue(&self, token: String, fingerprint: [u8; 32], now: Instant) {
        let pending = Pending {
            token,
            fingerprint,
            issued: now,
        };
        if let Ok(mut slot) = self.pending.lock() {
            *slot = Some(pending);
        }
    }

    /// Spend `token`: it must be the live one, younger than
    /// [`TOKEN_LIFETIME`], and the trash must still have `fingerprint`.
    pub fn redeem(
        &self,
        token: &str,
        fingerprint: [u8; 32],
        now: Instant,
    ) -> Result<(), ConfirmError> {
        let pending = {
            let mut slot = self.pending.lock().map_err(|_| ConfirmError::Unknown)?;
            match slot.as_ref() {
                Some(pending) if pending.token == token => slot.take(),
                _ => None,
            }
        };
        let pending = pending.ok_or(ConfirmError::Unknown)?;
        if now.saturating_duration_since(pending.issued) > TOKEN_LIFETIME {
            return Err(ConfirmError::Expired);
        }
        if pending.fingerprint != fingerprint {
            return Err(ConfirmError::Changed);
        }
        Ok(())
    }
}

/// A fresh random token: 32 hex digits.
pub fn fresh_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const PRINT: [u8; 32] = [7; 32];

    #[test]
    fn a_token_works_once() {
        let confirmations = Confirmations::default();
        let now = Instant::now();
        confirmations.issue("t1".into(), PRINT, now);
        assert_eq!(confirmations.redeem("t1", PRINT, now), Ok(()));
        assert_eq!(
            confirmations.redeem("t1", PRINT, now),
            Err(ConfirmError::Unknown)
        );
    }

    #[test]
    fn refusals() {
        let now = Instant::now();
        let cases = [
            ("wrong token", "nope", PRINT, now, ConfirmError::Unknown),
            (
                "expired",
                "t1",
                PRINT,
                now + TOKEN_LIFETIME + Duration::from_secs(1),
                ConfirmError::Expired,
            ),
            ("trash changed", "t1", [8; 32], now, ConfirmError::Changed),
        ];
        for (name, token, fingerprint, at, expected) in cases {
            let confirmations = Confirmations::default();
            confirmations.issue("t1".into(), PRINT, now);
            assert_eq!(
                confirmations.redeem(token, fingerprint, at),
                Err(expected),
                "{name}"
            );
        }
    }

    #[test]
    fn a_new_preview_replaces_the_old_token() {
        let confirmations = Confirmations::default();
        let now = Instant::now();
        confirmations.issue("t1".into(), PRINT, now);
        confirmations.issue("t2".into(), PRINT, now);
        assert_eq!(
            confirmations.redeem("t1", PRINT, now),
            Err(ConfirmError::Unknown)
        );
        assert_eq!(confirmations.redeem("t2", PRINT, now), Ok(()));
    }

    #[test]
    fn fresh_tokens_differ() {
        let a = fresh_token().expect("token");
        let b = fresh_token().expect("token");
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
