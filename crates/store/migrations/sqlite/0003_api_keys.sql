-- Keys of the HTTP API and /mcp, kept as SHA-256 digests (never the key itself).
-- "role" is admin | chat | bot; a bot key names its bot ("botId"), the others do not.
-- A revoked key keeps its row (and its name) with "revokedAt" set.
CREATE TABLE "ApiKey" (
    "id"         TEXT PRIMARY KEY NOT NULL,
    "name"       TEXT NOT NULL,
    "role"       TEXT NOT NULL,
    "botId"      TEXT REFERENCES "Bot" ("id") ON DELETE CASCADE,
    "digest"     TEXT NOT NULL,
    "createdAt"  BIGINT NOT NULL,
    "lastUsedAt" BIGINT,
    "revokedAt"  BIGINT
);
CREATE UNIQUE INDEX "ApiKey_name_key" ON "ApiKey" ("name");
CREATE UNIQUE INDEX "ApiKey_digest_key" ON "ApiKey" ("digest");
