-- The store's share of BotCraft's key (issue 32): a random secret, made once, that the key
-- of BOTCRAFT_SECRET_KEY(_FILE) or secret.key is bound to before it seals OAuth tokens or
-- signs approvals. A copy of the key file alone, or of the database alone, is not enough.
CREATE TABLE "KeyShare" (
    "id"        TEXT NOT NULL PRIMARY KEY,
    "share"     TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL
);
