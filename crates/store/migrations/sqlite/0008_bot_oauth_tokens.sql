-- A bot's own OAuth credentials for a remote MCP server (issue 17's per-bot override): when a
-- bot has a record here, its calls to that server go on a connection of its own, with its
-- own tokens, instead of the server's shared one. Sealed by the host like "McpOAuthToken";
-- deleted with the server or the bot.
CREATE TABLE "McpOAuthBotToken" (
    "mcpServerId" TEXT NOT NULL REFERENCES "McpServer" ("id") ON DELETE CASCADE,
    "botId"       TEXT NOT NULL REFERENCES "Bot" ("id") ON DELETE CASCADE,
    "sealed"      TEXT NOT NULL,
    "updatedAt"   BIGINT NOT NULL,
    PRIMARY KEY ("mcpServerId", "botId")
);
