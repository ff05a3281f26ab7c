//! `"ApprovalUse"`: the approval ids whose calls have run, so each approval runs its call
//! once, on every replica. A row is kept until the id's own expiry, after which the id's TTL
//! refuses it anyway, and is then forgotten.

use crate::database::Store;
use crate::error::StoreError;

impl Store {
    /// Record `approval_id` (bot `bot_id`'s, valid until `expires_at_ms`) as used.
    /// `Ok(true)`: it was not used before, and now is; `Ok(false)`: it was used already, so its
    /// call must not run again. Atomic on both backends: of two replicas consuming the same id
    /// at once, exactly one gets `true`. Rows past their expiry are forgotten on the way.
    pub async fn consume_approval(
        &self,
        approval_id: &str,
        bot_id: &str,
        expires_at_ms: i64,
    ) -> Result<bool, StoreError> {
        let now = self.now_ms();
        sqlx::query(r#"DELETE FROM "ApprovalUse" WHERE "expiresAt" < $1"#)
            .bind(now)
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
