//! `"ToolVector"`: embeddings of tool texts, keyed by (model id, text hash), so a vector is
//! computed once per model and text, whatever server or bot the text belongs to; and
//! `"ToolVectorSet"`: one server's vectors as one value, keyed by (model id, hash of its
//! texts' hashes in order), so a restart reads each server's vectors in one row. Each row
//! says when it was last used ([`Store::touch_tool_vectors`]); rows unused for a retention
//! are deleted ([`Store::prune_tool_vectors`]).

use std::collections::HashMap;
use std::time::Duration;

use sqlx::Row;

use crate::database::Store;
use crate::error::StoreError;

/// Keys looked up (or rows written) per statement.
const CHUNK: usize = 400;

fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `rows` by key, each key once (its first row): a statement's `ON CONFLICT DO UPDATE` may
/// not touch one row twice (PostgreSQL refuses the statement), and writers that lock rows in
/// one order cannot deadlock each other.
fn once_each_in_order<T>(rows: &[(String, T)]) -> Vec<&(String, T)> {
    let mut sorted: Vec<&(String, T)> = rows.iter().collect();
    // Stable: of equal keys, the first row stays first.
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted.dedup_by(|later, earlier| later.0 == earlier.0);
    sorted
}

/// Rows deleted per statement by [`Store::prune_tool_vectors`].
const PRUNE_BATCH: u64 = 500;

/// Sets written per statement (each may hold a server's hundreds of vectors).
const SET_CHUNK: usize = 32;

fn decode(bytes: &[u8], dimensions: i64, key: &str) -> Result<Vec<f32>, StoreError> {
    let mut rows = decode_rows(bytes, 1, dimensions, ("ToolVector", "vector"), key)?;
    Ok(rows.pop().unwrap_or_default())
}

/// `count` vectors of `dimensions` components from `bytes`, checked to be exactly that.
fn decode_rows(
    bytes: &[u8],
    count: i64,
    dimensions: i64,
    (table, column): (&'static str, &'static str),
    key: &str,
) -> Result<Vec<Vec<f32>>, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        table,
        column,
        id: key.to_owned(),
        reason,
    };
    let dims = usize::try_from(dimensions).map_err(|_| corrupt("negative dimensions".into()))?;
    let count = usize::try_from(count).map_err(|_| corrupt("a negative count".into()))?;
    let expected = count
        .checked_mul(dims)
        .and_then(|n| n.checked_mul(4))
        .ok_or_else(|| corrupt(format!("{count} vectors of {dims} dimensions")))?;
    // With no dimensions the bytes bound nothing: more than one such vector is not a set
    // anything writes, and its count must not decide an allocation.
    if bytes.len() != expected || (dims == 0 && count > 1) {
        return Err(corrupt(format!(
            "{} bytes for {count} vectors of {dims} dimensions",
            bytes.len()
        )));
    }
    if dims == 0 {
        return Ok(vec![Vec::new(); count]);
    }
    Ok(bytes
        .chunks_exact(dims * 4)
        .map(|row| {
            row.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        })
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

    /// Store `vectors` of `model` by text hash; a key already stored keeps its vector (and is
    /// marked used now).
    pub async fn put_tool_vectors(
        &self,
        model: &str,
        vectors: &[(String, Vec<f32>)],
    ) -> Result<(), StoreError> {
        let now = self.now_ms();
        let vectors = once_each_in_order(vectors);
        let mut tx = self.pool().begin().await?;
        for chunk in vectors.chunks(CHUNK) {
            let rows: Vec<String> = (0..chunk.len())
                .map(|i| {
                    let b = i * 5;
                    format!(
                        "(${}, ${}, ${}, ${}, ${}, ${})",
                        b + 1,
                        b + 2,
                        b + 3,
                        b + 4,
                        b + 5,
                        b + 5
                    )
                })
                .collect();
            let sql = format!(
                r#"INSERT INTO "ToolVector" ("model", "textHash", "dimensions", "vector", "createdAt", "usedAt") VALUES {}
                   ON CONFLICT ("model", "textHash") DO UPDATE SET "usedAt" = EXCLUDED."usedAt""#,
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

    /// The stored vector sets of `model` for those of `sets` that have one: each set's
    /// vectors, in order.
    pub async fn tool_vector_sets(
        &self,
        model: &str,
        sets: &[String],
    ) -> Result<HashMap<String, Vec<Vec<f32>>>, StoreError> {
        let mut found = HashMap::with_capacity(sets.len());
        for chunk in sets.chunks(CHUNK) {
            let placeholders: Vec<String> =
                (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
            let sql = format!(
                r#"SELECT "setHash", "count", "dimensions", "vectors" FROM "ToolVectorSet" WHERE "model" = $1 AND "setHash" IN ({})"#,
                placeholders.join(", ")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(model);
            for key in chunk {
                query = query.bind(key);
            }
            for row in query.fetch_all(self.pool()).await? {
                let key: String = row.try_get(0)?;
                let count: i64 = row.try_get(1)?;
                let dimensions: i64 = row.try_get(2)?;
                let bytes: &[u8] = row.try_get(3)?;
                let rows =
                    decode_rows(bytes, count, dimensions, ("ToolVectorSet", "vectors"), &key)?;
                found.insert(key, rows);
            }
        }
        Ok(found)
    }

    /// Store each of `sets` (its key, and its vectors, all of one length) for `model`; a
    /// key already stored keeps its vectors (and is marked used now).
    pub async fn put_tool_vector_sets(
        &self,
        model: &str,
        sets: &[(String, Vec<Vec<f32>>)],
    ) -> Result<(), StoreError> {
        let now = self.now_ms();
        let sets = once_each_in_order(sets);
        let mut tx = self.pool().begin().await?;
        for chunk in sets.chunks(SET_CHUNK) {
            let rows: Vec<String> = (0..chunk.len())
                .map(|i| {
                    let b = i * 6;
                    // createdAt and usedAt: the same parameter.
                    let params: Vec<String> =
                        (1..=6).chain([6]).map(|k| format!("${}", b + k)).collect();
                    format!("({})", params.join(", "))
                })
                .collect();
            let sql = format!(
                r#"INSERT INTO "ToolVectorSet" ("model", "setHash", "count", "dimensions", "vectors", "createdAt", "usedAt") VALUES {}
                   ON CONFLICT ("model", "setHash") DO UPDATE SET "usedAt" = EXCLUDED."usedAt""#,
                rows.join(", ")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (key, vectors) in chunk {
                let dimensions = vectors.first().map_or(0, Vec::len);
                if dimensions == 0 && !vectors.is_empty() {
                    return Err(
                        crate::error::ValidationError::EmptyVectors { set: key.clone() }.into(),
                    );
                }
                if let Some(odd) = vectors.iter().find(|v| v.len() != dimensions) {
                    return Err(crate::error::ValidationError::UnevenVectorSet {
                        set: key.clone(),
                        expected: dimensions,
                        got: odd.len(),
                    }
                    .into());
                }
                let bytes: Vec<u8> = vectors.iter().flat_map(|v| encode(v)).collect();
                query = query
                    .bind(model)
                    .bind(key)
                    .bind(vectors.len() as i64)
                    .bind(dimensions as i64)
                    .bind(bytes)
                    .bind(now);
            }
            query.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

/// Rows deleted by [`Store::prune_tool_vectors`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrunedVectors {
    /// Per-text rows (`"ToolVector"`).
    pub vectors: u64,
    /// Per-server sets (`"ToolVectorSet"`).
    pub sets: u64,
}

impl Store {
    /// Mark `texts` (text hashes) and `sets` (set hashes) of `model` used now, writing only
    /// the rows not marked within `every` (a live index is touched often; its rows are
    /// written about once per `every`). Returns how many rows were written.
    pub async fn touch_tool_vectors(
        &self,
        model: &str,
        texts: &[String],
        sets: &[String],
        every: Duration,
    ) -> Result<u64, StoreError> {
        let now = self.now_ms();
        let stale = now.saturating_sub(i64::try_from(every.as_millis()).unwrap_or(i64::MAX));
        let mut touched = 0;
        for (table, column, keys) in [
            ("ToolVector", "textHash", texts),
            ("ToolVectorSet", "setHash", sets),
        ] {
            for chunk in keys.chunks(CHUNK) {
                let placeholders: Vec<String> =
                    (0..chunk.len()).map(|i| format!("${}", i + 4)).collect();
                let sql = format!(
                    r#"UPDATE "{table}" SET "usedAt" = $1 WHERE "model" = $2 AND "usedAt" < $3 AND "{column}" IN ({})"#,
                    placeholders.join(", ")
                );
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(now)
                    .bind(model)
                    .bind(stale);
                for key in chunk {
                    query = query.bind(key);
                }
                touched += query.execute(self.pool()).await?.rows_affected();
            }
        }
        Ok(touched)
    }

    /// Delete the vectors and vector sets, of every model, neither made nor used within
    /// `unused_for` (a row a BotCraft before migration 0014 wrote has no use time: its making
    /// counts).
    pub async fn prune_tool_vectors(
        &self,
        unused_for: Duration,
    ) -> Result<PrunedVectors, StoreError> {
        let before = self
            .now_ms()
            .saturating_sub(i64::try_from(unused_for.as_millis()).unwrap_or(i64::MAX));
        let mut pruned = PrunedVectors::default();
        for (table, key, count) in [
            ("ToolVector", "textHash", &mut pruned.vectors),
            ("ToolVectorSet", "setHash", &mut pruned.sets),
        ] {
            // A batch per statement, so no statement holds the database's write lock for
            // long (a first prune after a model change may delete every row).
            let sql = format!(
                r#"DELETE FROM "{table}" WHERE ("model", "{key}") IN (
                       SELECT "model", "{key}" FROM "{table}"
                       WHERE "usedAt" < $1 AND "createdAt" < $1 LIMIT {PRUNE_BATCH})"#
            );
            loop {
                let deleted = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                    .bind(before)
                    .execute(self.pool())
                    .await?
                    .rows_affected();
                *count += deleted;
                if deleted < PRUNE_BATCH {
                    break;
                }
            }
        }
        Ok(pruned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored row is believed only as far as its bytes go: a count the bytes do not hold,
    /// or a huge count of vectors with no dimensions, is a corrupt row, not an allocation.
    #[test]
    fn a_row_decodes_only_to_what_its_bytes_hold() {
        let where_ = ("ToolVectorSet", "vectors");
        let two: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(
            decode_rows(&two, 2, 2, where_, "k").ok(),
            Some(vec![vec![1.0, 2.0], vec![3.0, 4.0]])
        );
        for (bytes, count, dims) in [
            (&two[..], 3, 2),
            (&two[..], 1, 2),
            (&two[..0], i64::MAX, 0),
            (&two[..0], 2, 0),
            (&two[..], -1, 2),
            (&two[..], 2, -2),
            (&two[..], i64::MAX, i64::MAX),
        ] {
            assert!(
                matches!(
                    decode_rows(bytes, count, dims, where_, "k"),
                    Err(StoreError::Corrupt { .. })
                ),
                "{count} × {dims}"
            );
        }
        assert_eq!(decode_rows(&[], 0, 0, where_, "k").ok(), Some(Vec::new()));
    }
}
