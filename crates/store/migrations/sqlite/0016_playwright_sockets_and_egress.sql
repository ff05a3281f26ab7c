-- On a store seeded before this, the stdio server named `playwright` that still runs
-- Playwright MCP is moved along in two ways; anything an operator already set is kept.
-- 1. A sandboxed server may no longer make Unix sockets unless its policy says
--    "unixSockets": true (Landlock has no rule for a socket file, so a seccomp filter refuses
--    them). Chromium binds one (its profile's SingletonSocket) and fails without it: the
--    policy gains it unless it says either way already (or is not a JSON object).
-- 2. Its browser's traffic goes through the host's egress proxy, which reaches the public
--    internet only: its environment gains PLAYWRIGHT_MCP_PROXY_SERVER=${BROWSER_EGRESS_PROXY}
--    unless it names a proxy already.
UPDATE "McpServer" SET "sandbox" = '{"unixSockets":true}'
WHERE "name" = 'playwright' AND "transport" = 'stdio'
  AND ("command" LIKE '%playwright%' OR "args" LIKE '%playwright%')
  AND "sandbox" IS NULL;
UPDATE "McpServer" SET "sandbox" = json_set("sandbox", '$.unixSockets', json('true'))
WHERE "name" = 'playwright' AND "transport" = 'stdio'
  AND ("command" LIKE '%playwright%' OR "args" LIKE '%playwright%')
  AND json_valid("sandbox") AND json_type("sandbox") = 'object'
  AND json_type("sandbox", '$.unixSockets') IS NULL;
UPDATE "McpServer" SET "env" = '{"PLAYWRIGHT_MCP_PROXY_SERVER":"${BROWSER_EGRESS_PROXY}"}'
WHERE "name" = 'playwright' AND "transport" = 'stdio'
  AND ("command" LIKE '%playwright%' OR "args" LIKE '%playwright%')
  AND "env" IS NULL;
UPDATE "McpServer"
SET "env" = json_set("env", '$.PLAYWRIGHT_MCP_PROXY_SERVER', '${BROWSER_EGRESS_PROXY}')
WHERE "name" = 'playwright' AND "transport" = 'stdio'
  AND ("command" LIKE '%playwright%' OR "args" LIKE '%playwright%')
  AND json_valid("env") AND json_type("env") = 'object'
  AND json_type("env", '$.PLAYWRIGHT_MCP_PROXY_SERVER') IS NULL;
