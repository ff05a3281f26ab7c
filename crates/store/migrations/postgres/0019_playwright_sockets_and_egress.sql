-- On a store seeded before this, the stdio server named `playwright` that still runs
-- Playwright MCP is moved along in two ways; anything an operator already set is kept.
-- 1. A sandboxed server may no longer make Unix sockets unless its policy says
--    "unixSockets": true (Landlock has no rule for a socket file, so a seccomp filter refuses
--    them). Chromium binds one (its profile's SingletonSocket) and fails without it: the
--    policy gains it unless it says either way already (or is not a JSON object).
-- 2. Its browser's traffic goes through the host's egress proxy, which reaches the public
--    internet only: its environment gains PLAYWRIGHT_MCP_PROXY_SERVER=${BROWSER_EGRESS_PROXY}
--    unless it names a proxy already.
-- Text that is not JSON is left as it is (the cast is tried per row), so nothing stored can
-- stop the store from opening.
DO $$
DECLARE
  server RECORD;
  stored_policy JSONB;
  stored_env JSONB;
BEGIN
  FOR server IN
    SELECT "id", "sandbox", "env" FROM "McpServer"
    WHERE "name" = 'playwright' AND "transport" = 'stdio'
      AND ("command" LIKE '%playwright%' OR "args" LIKE '%playwright%')
  LOOP
    BEGIN
      stored_policy := COALESCE(server."sandbox", '{}')::jsonb;
    EXCEPTION WHEN OTHERS THEN
      stored_policy := NULL;
    END;
    IF jsonb_typeof(stored_policy) = 'object' AND NOT (stored_policy ? 'unixSockets') THEN
      UPDATE "McpServer" SET "sandbox" = (stored_policy || '{"unixSockets":true}'::jsonb)::text
      WHERE "id" = server."id";
    END IF;
    BEGIN
      stored_env := COALESCE(server."env", '{}')::jsonb;
    EXCEPTION WHEN OTHERS THEN
      stored_env := NULL;
    END;
    IF jsonb_typeof(stored_env) = 'object' AND NOT (stored_env ? 'PLAYWRIGHT_MCP_PROXY_SERVER') THEN
      UPDATE "McpServer"
      SET "env" = (stored_env || '{"PLAYWRIGHT_MCP_PROXY_SERVER":"${BROWSER_EGRESS_PROXY}"}'::jsonb)::text
      WHERE "id" = server."id";
    END IF;
  END LOOP;
END $$;
