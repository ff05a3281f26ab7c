-- BotCraft store, first schema (PostgreSQL).
-- Names follow the Prisma models: quoted PascalCase tables, quoted camelCase columns.
-- Flags are BIGINT 0/1, JSON is TEXT, times are BIGINT milliseconds since the Unix epoch.

CREATE TABLE "McpServer" (
    "id"            TEXT PRIMARY KEY NOT NULL,
    "name"          TEXT NOT NULL,
    "command"       TEXT NOT NULL,
    "args"          TEXT NOT NULL DEFAULT '[]',
    "env"           TEXT,
    "timeout"       BIGINT NOT NULL DEFAULT 30000,
    "initTimeout"   BIGINT NOT NULL DEFAULT 30000,
    "alwaysOn"      BIGINT NOT NULL DEFAULT 0,
    "idleTimeoutMs" BIGINT NOT NULL DEFAULT 60000,
    "instructions"  TEXT,
    "createdAt"     BIGINT NOT NULL,
    "updatedAt"     BIGINT NOT NULL
);
CREATE UNIQUE INDEX "McpServer_name_key" ON "McpServer" ("name");

CREATE TABLE "Bot" (
    "id"              TEXT PRIMARY KEY NOT NULL,
    "name"            TEXT NOT NULL,
    "model"           TEXT NOT NULL,
    "systemPrompt"    TEXT NOT NULL DEFAULT '',
    "stepLimit"       BIGINT NOT NULL DEFAULT 10,
    "toolLoadingMode" TEXT NOT NULL DEFAULT 'auto',
    "createdAt"       BIGINT NOT NULL,
    "updatedAt"       BIGINT NOT NULL
);
CREATE UNIQUE INDEX "Bot_name_key" ON "Bot" ("name");

CREATE TABLE "BotMcpServer" (
    "id"          TEXT PRIMARY KEY NOT NULL,
    "botId"       TEXT NOT NULL REFERENCES "Bot" ("id") ON DELETE CASCADE,
    "mcpServerId" TEXT NOT NULL REFERENCES "McpServer" ("id") ON DELETE CASCADE,
    "enabled"     BIGINT NOT NULL DEFAULT 1,
    "toolFilter"  TEXT NOT NULL DEFAULT '[]',
    "pinnedTools" TEXT NOT NULL DEFAULT '[]'
);
CREATE UNIQUE INDEX "BotMcpServer_botId_mcpServerId_key" ON "BotMcpServer" ("botId", "mcpServerId");

CREATE TABLE "McpToolCache" (
    "mcpServerId" TEXT PRIMARY KEY NOT NULL REFERENCES "McpServer" ("id") ON DELETE CASCADE,
    "tools"       TEXT NOT NULL,
    "hash"        TEXT NOT NULL,
    "capturedAt"  BIGINT NOT NULL
);
