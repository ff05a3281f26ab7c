-- A server's tool vectors as one value: every vector of one list of tool texts, in order,
-- keyed by (model, hash of the texts' hashes in order), so a restart reads a server's
-- vectors in one row instead of one row per tool. "vectors" is "count" × "dimensions" f32
-- components, little-endian. "ToolVector" (one row per text) stays the source a changed
-- server's unchanged tools are found in.
CREATE TABLE "ToolVectorSet" (
    "model"      TEXT NOT NULL,
    "setHash"    TEXT NOT NULL,
    "count"      BIGINT NOT NULL,
    "dimensions" BIGINT NOT NULL,
    "vectors"    BLOB NOT NULL,
    "createdAt"  BIGINT NOT NULL,
    PRIMARY KEY ("model", "setHash")
);
