-- Embeddings of tool texts for tool_search's dense signal, one per (model, text hash),
-- so neither a restart nor a server's restart re-embeds an unchanged tool.
-- "vector" is the f32 components, little-endian.
CREATE TABLE "ToolVector" (
    "model"      TEXT NOT NULL,
    "textHash"   TEXT NOT NULL,
    "dimensions" BIGINT NOT NULL,
    "vector"     BYTEA NOT NULL,
    "createdAt"  BIGINT NOT NULL,
    PRIMARY KEY ("model", "textHash")
);
