-- Every stdio server runs sandboxed (issue 32): "sandbox" holds its policy as JSON
-- (`{"enabled", "readWrite", "readOnly", "network"}`, every field optional); NULL is the
-- default policy (confined, network open). The seeded servers that need no network get none,
-- forge-typesense its Typesense only.
ALTER TABLE "McpServer" ADD COLUMN "sandbox" TEXT;
UPDATE "McpServer" SET "sandbox" = '{"network":"none"}' WHERE "name" IN ('forge-filesystem', 'forge-discovery');
UPDATE "McpServer" SET "sandbox" = '{"network":["${TYPESENSE_URL}"]}' WHERE "name" = 'forge-typesense';
