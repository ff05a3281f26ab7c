//! `"ApprovalUse"`: the approval ids whose calls have run, so each approval runs its call
//! once, on every replica. A row is kept for a day past the id's own expiry, then forgotten:
//! each replica refuses an expired id by its own clock, so a row forgotten as soon as the
//! fastest clock saw the expiry could let a replica whose clock is behind run the call again.

use crate::database::Store;
use crate::error::StoreError;

/// How long a used approval's row outlives its expiry: the clock skew between replicas this
/// ledger tolerates.
pub const USED_APPROVAL_MARGIN_MS: i64 = 24 * 60 * 60 * 1000;

impl Store {
    /// Record `approval_id` (bot `bot_id`'s, valid until `expires_at_ms`) as used.
    /// `Ok(true)`: it was not used before, and now is; `Ok(false)`: it was used already, so its
    /// call must not run again. Atomic on both backends: of two replicas consuming the same id
    /// at once, exactly one gets `true`. Rows more than [`USED_APPROVAL_MARGIN_MS`] past their
    /// expiry are forgotten on the way.
    pub async fn consume_approval(
        &self,
        approval_id: &str,
        bot_id: &str,
        expires_at_ms: i64,
    ) -> Result<bool, StoreError> {
        let now = self.now_ms();
        sqlx::query(r#"DELETE FROM "ApprovalUse" WHERE "expiresAt" < $1"#)
            .bind(now.saturating_sub(USED_APPROVAL_MARGIN_MS))
            .execute(self.pool())
            .await?;
        let inserted = sqlx::query(
            r#"INSERT INTO "ApprovalUse" ("approvalId", "botId", "usedAt", "expiresAt") VALUES ($1, $2, $3, $4)
               ON CONFLICT ("approvalId") DO NOTHING"#,
        )
        .bind(approval_id)
        .bind(bot_id)
        .bind(now)
        .bind(expires_at_ms)
        .execute(self.pool())
        .await?;
        Ok(inserted.rows_affected() == 1)
    }
}
