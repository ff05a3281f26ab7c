-- Playwright MCP 0.0.83 lets a page register tools (WebMCP), which then become tools of every
-- bot bound to Playwright, and its `browser_drop` sends a workspace file to a page. On a store
-- seeded before this: the `playwright` server's arguments gain `--no-webmcp` (only while they
-- still hold the seed's `--isolated` and no `--no-webmcp`), and the forge bot's Playwright
-- binding, while it still asks for exactly the globs migration 12 wrote, asks before
-- `browser_drop*` too. Any other choice an operator made is kept.
UPDATE "McpServer" SET "args" = REPLACE("args", '"--isolated",', '"--isolated","--no-webmcp",')
WHERE "name" = 'playwright'
  AND "args" LIKE '%"--isolated",%'
  AND "args" NOT LIKE '%"--no-webmcp"%';
UPDATE "BotMcpServer" SET "approval" = '["browser_run_code*","browser_evaluate*","browser_file_upload*","browser_drop*"]'
WHERE "approval" = '["browser_run_code*","browser_evaluate*","browser_file_upload*"]'
  AND "mcpServerId" IN (SELECT "id" FROM "McpServer" WHERE "name" = 'playwright')
  AND "botId" IN (SELECT "id" FROM "Bot" WHERE "name" = 'forge');
