-- Approvals are single-use (issue 32): an approval id is recorded here when its call runs, so
-- the same id sent again (a replayed message, a duplicated part, another replica) runs
-- nothing. A row may be forgotten once "expiresAt" has passed: the id's own TTL refuses it
-- from then on.
CREATE TABLE "ApprovalUse" (
    "approvalId" TEXT NOT NULL PRIMARY KEY,
    "botId"      TEXT NOT NULL,
    "usedAt"     BIGINT NOT NULL,
    "expiresAt"  BIGINT NOT NULL
);
CREATE INDEX "ApprovalUse_expiresAt_idx" ON "ApprovalUse" ("expiresAt");
