//! `"ToolVector"`: embeddings of tool texts, keyed by (model id, text hash), so a vector is
//! computed once per model and text, whatever server or bot the text belongs to.

use std::collections::HashMap;

use sqlx::Row;

use crate::database::Store;
use crate::error::StoreError;

/// Keys looked up (or rows written) per statement.
const CHUNK: usize = 400;

fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(bytes: &[u8], dimensions: i64, key: &str) -> Result<Vec<f32>, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        table: "ToolVector",
        column: "vector",
        id: key.to_owned(),
        reason,
    };
    let dims = usize::try_from(dimensions).map_err(|_| corrupt("negative dimensions".into()))?;
    if bytes.len() != dims * 4 {
        return Err(corrupt(format!(
            "{} bytes for {dims} dimensions",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

impl Store {
    /// The stored vectors of `model` for those of `keys` that have one.
    pub async fn tool_vectors(
        &self,
        model: &str,
        keys: &[String],
    ) -> Result<HashMap<String, Vec<f32>>, StoreError> {
        let mut found = HashMap::with_capacity(keys.len());
        for chunk in keys.chunks(CHUNK) {
            let placeholders: Vec<String> =
                (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
            let sql = format!(
                r#"SELECT "textHash", "dimensions", "vector" FROM "ToolVector" WHERE "model" = $1 AND "textHash" IN ({})"#,
                placeholders.join(", ")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(model);
            for key in chunk {
                query = query.bind(key);
            }
            for row in query.fetch_all(self.pool()).await? {
                let key: String = row.try_get("textHash")?;
                let dimensions: i64 = row.try_get("dimensions")?;
                let bytes: Vec<u8> = row.try_get("vector")?;
                let vector = decode(&bytes, dimensions, &key)?;
                found.insert(key, vector);
            }
        }
        Ok(found)
    }

    /// Store `vectors` of `model` by text hash; a key already stored is kept as it is.
    pub async fn put_tool_vectors(
        &self,
        model: &str,
        vectors: &[(String, Vec<f32>)],
    ) -> Result<(), StoreError> {
        let now = self.now_ms();
        let mut tx = self.pool().begin().await?;
        for chunk in vectors.chunks(CHUNK) {
            let rows: Vec<String> = (0..chunk.len())
                .map(|i| {
                    let b = i * 5;
                    format!(
                        "(${}, ${}, ${}, ${}, ${})",
                        b + 1,
                        b + 2,
                        b + 3,
                        b + 4,
                        b + 5
                    )
                })
                .collect();
            let sql = format!(
                r#"INSERT INTO "ToolVector" ("model", "textHash", "dimensions", "vector", "createdAt") VALUES {}
                   ON CONFLICT ("model", "textHash") DO NOTHING"#,
                rows.join(", ")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (key, vector) in chunk {
                query = query
                    .bind(model)
                    .bind(key)
                    .bind(vector.len() as i64)
                    .bind(encode(vector))
                    .bind(now);
            }
            query.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
