-- When each stored tool vector (and vector set) was last in use: written with the row and
-- touched, at most once a day, while a live index holds it, so rows no index has used for
-- the retention are deleted instead of kept forever (every changed tool text and every
-- changed server left its old rows behind). Rows already stored count as used when made.
ALTER TABLE "ToolVector" ADD COLUMN "usedAt" BIGINT NOT NULL DEFAULT 0;
UPDATE "ToolVector" SET "usedAt" = "createdAt";
ALTER TABLE "ToolVectorSet" ADD COLUMN "usedAt" BIGINT NOT NULL DEFAULT 0;
UPDATE "ToolVectorSet" SET "usedAt" = "createdAt";
