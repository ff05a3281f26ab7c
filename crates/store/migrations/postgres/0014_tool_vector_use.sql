-- When each stored tool vector (and vector set) was last in use: written with the row and
-- touched while a live index holds it, so rows no index has used for the retention are
-- deleted instead of kept forever (every changed tool text and every changed server left
-- its old rows behind). Rows already stored count as used when this runs, so an upgrade
-- deletes nothing before the indexes that use them had a retention's time to say so.
ALTER TABLE "ToolVector" ADD COLUMN "usedAt" BIGINT NOT NULL DEFAULT 0;
UPDATE "ToolVector" SET "usedAt" = CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT);
CREATE INDEX "ToolVector_usedAt_idx" ON "ToolVector" ("usedAt");
ALTER TABLE "ToolVectorSet" ADD COLUMN "usedAt" BIGINT NOT NULL DEFAULT 0;
UPDATE "ToolVectorSet" SET "usedAt" = CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT);
CREATE INDEX "ToolVectorSet_usedAt_idx" ON "ToolVectorSet" ("usedAt");
