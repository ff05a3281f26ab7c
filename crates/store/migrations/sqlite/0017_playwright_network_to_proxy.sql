-- On a store seeded before this, the stdio server named `playwright` that still runs
-- Playwright MCP as an installed program (not through `npx`, which must reach its registry,
-- often a mirror the proxy refuses) through the host's egress proxy (its
-- PLAYWRIGHT_MCP_PROXY_SERVER is the seeded ${BROWSER_EGRESS_PROXY}) may connect over TCP
-- to that proxy's port alone, where its policy let it reach every port ("network" absent or
-- "all"): code its code-running tools run in Node (`fetch`, a socket, a child process) can
-- no longer go around the proxy to this host's services or its networks. Its environment
-- gains HTTPS_PROXY, HTTP_PROXY, https_proxy and http_proxy (the same proxy, for `npx`,
-- curl and the other programs that read them) unless it names them already. A policy or
-- environment that says otherwise, or is not a JSON object, is kept.
UPDATE "McpServer"
SET "sandbox" = json_set("sandbox", '$.network', json('["${PLAYWRIGHT_MCP_PROXY_SERVER}"]'))
WHERE "name" = 'playwright' AND "transport" = 'stdio'
  AND ("command" LIKE '%playwright%' OR "args" LIKE '%playwright%')
  AND "command" <> 'npx' AND "command" NOT LIKE '%/npx'
  AND json_valid("env") AND json_type("env") = 'object'
  AND json_extract("env", '$.PLAYWRIGHT_MCP_PROXY_SERVER') = '${BROWSER_EGRESS_PROXY}'
  AND json_valid("sandbox") AND json_type("sandbox") = 'object'
  AND (json_type("sandbox", '$.network') IS NULL
       OR json_extract("sandbox", '$.network') = 'all');
-- json_insert adds each variable only where it is not set.
UPDATE "McpServer"
SET "env" = json_insert("env",
    '$.HTTPS_PROXY', '${BROWSER_EGRESS_PROXY}', '$.HTTP_PROXY', '${BROWSER_EGRESS_PROXY}',
    '$.https_proxy', '${BROWSER_EGRESS_PROXY}', '$.http_proxy', '${BROWSER_EGRESS_PROXY}')
WHERE "name" = 'playwright' AND "transport" = 'stdio'
  AND ("command" LIKE '%playwright%' OR "args" LIKE '%playwright%')
  AND "command" <> 'npx' AND "command" NOT LIKE '%/npx'
  AND json_valid("env") AND json_type("env") = 'object'
  AND json_extract("env", '$.PLAYWRIGHT_MCP_PROXY_SERVER') = '${BROWSER_EGRESS_PROXY}'
  AND json_valid("sandbox") AND json_type("sandbox") = 'object'
  AND json_extract("sandbox", '$.network') = json('["${PLAYWRIGHT_MCP_PROXY_SERVER}"]');
