-- The seeded bot's Playwright binding asks before the tools that run the model's code
-- (issue 32): a store seeded before this asked `never`. Only that binding, and only while it
-- still says `never`; any other choice an operator made is kept.
UPDATE "BotMcpServer" SET "approval" = '["browser_run_code*","browser_evaluate*","browser_file_upload*"]'
WHERE "approval" = '"never"'
  AND "mcpServerId" IN (SELECT "id" FROM "McpServer" WHERE "name" = 'playwright')
  AND "botId" IN (SELECT "id" FROM "Bot" WHERE "name" = 'forge');
