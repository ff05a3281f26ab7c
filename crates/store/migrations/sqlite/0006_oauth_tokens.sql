-- OAuth credentials of remote MCP servers: one sealed record per server (the client
-- registration and the tokens, encrypted by the host before they reach the database; the
-- store never sees them in the clear). Deleted with the server.
CREATE TABLE "McpOAuthToken" (
    "mcpServerId" TEXT PRIMARY KEY NOT NULL REFERENCES "McpServer" ("id") ON DELETE CASCADE,
    "sealed"      TEXT NOT NULL,
    "updatedAt"   BIGINT NOT NULL
);
