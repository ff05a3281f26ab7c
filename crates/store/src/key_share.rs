//! `"KeyShare"`: the store's share of BotCraft's key, a random secret made once and then the
//! same for every replica over this store. BotCraft binds its key (`secrets`) to it, so a
//! copy of the key file alone, or of the database alone, neither unseals a token nor signs an
//! approval.

use sqlx::Row;

use crate::database::Store;
use crate::error::StoreError;

const SHARE_ID: &str = "default";

impl Store {
    /// The share, made (32 random bytes, hex) the first time it is asked for. Of two replicas
    /// asking at once, both get the one that was written first.
    pub async fn key_share(&self) -> Result<String, StoreError> {
        let made = hex::encode(rand::random::<[u8; 32]>());
        sqlx::query(
            r#"INSERT INTO "KeyShare" ("id", "share", "createdAt") VALUES ($1, $2, $3)
               ON CONFLICT ("id") DO NOTHING"#,
        )
        .bind(SHARE_ID)
        .bind(&made)
        .bind(self.now_ms())
        .execute(self.pool())
        .await?;
        let row = sqlx::query(r#"SELECT "share" FROM "KeyShare" WHERE "id" = $1"#)
            .bind(SHARE_ID)
            .fetch_one(self.pool())
            .await?;
        Ok(row.try_get("share")?)
    }
}
