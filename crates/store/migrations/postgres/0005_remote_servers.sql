-- Remote MCP servers: "transport" is 'stdio' (a child process, as before), 'streamable-http'
-- or 'sse'; a remote server has a "url" and optional "headers" (a JSON object of strings whose
-- values may hold ${VAR} references) and an empty "command".
ALTER TABLE "McpServer" ADD COLUMN "transport" TEXT NOT NULL DEFAULT 'stdio';
ALTER TABLE "McpServer" ADD COLUMN "url" TEXT;
ALTER TABLE "McpServer" ADD COLUMN "headers" TEXT;
