-- On a store seeded before this, the stdio server named `playwright` that still runs
-- Playwright MCP as an installed program (not through `npx`, which must reach its registry,
-- often a mirror the proxy refuses) through the host's egress proxy (its
-- PLAYWRIGHT_MCP_PROXY_SERVER is the seeded ${BROWSER_EGRESS_PROXY}) may connect over TCP
-- to that proxy's port alone, where its policy let it reach every port ("network" absent or
-- "all"): code its code-running tools run in Node (`fetch`, a socket, a child process) can
-- no longer go around the proxy to this host's services or its networks. Its environment
-- gains HTTPS_PROXY, HTTP_PROXY, https_proxy and http_proxy (the same proxy, for `npx`,
-- curl and the other programs that read them) unless it names them already. A policy or
-- environment that says otherwise, or is not a JSON object, is kept (the cast is tried per
-- row, so nothing stored can stop the store from opening).
DO $$
DECLARE
  server RECORD;
  stored_policy JSONB;
  stored_env JSONB;
  proxied JSONB := '["${PLAYWRIGHT_MCP_PROXY_SERVER}"]'::jsonb;
BEGIN
  FOR server IN
    SELECT "id", "sandbox", "env" FROM "McpServer"
    WHERE "name" = 'playwright' AND "transport" = 'stdio'
      AND ("command" LIKE '%playwright%' OR "args" LIKE '%playwright%')
      AND "command" <> 'npx' AND "command" NOT LIKE '%/npx'
  LOOP
    BEGIN
      stored_policy := server."sandbox"::jsonb;
      stored_env := server."env"::jsonb;
    EXCEPTION WHEN OTHERS THEN
      stored_policy := NULL;
      stored_env := NULL;
    END;
    CONTINUE WHEN jsonb_typeof(stored_policy) IS DISTINCT FROM 'object'
      OR jsonb_typeof(stored_env) IS DISTINCT FROM 'object'
      OR stored_env -> 'PLAYWRIGHT_MCP_PROXY_SERVER' IS DISTINCT FROM '"${BROWSER_EGRESS_PROXY}"'::jsonb;
    IF NOT (stored_policy ? 'network') OR stored_policy -> 'network' = '"all"'::jsonb THEN
      stored_policy := stored_policy || jsonb_build_object('network', proxied);
      UPDATE "McpServer" SET "sandbox" = stored_policy::text WHERE "id" = server."id";
    END IF;
    IF stored_policy -> 'network' = proxied THEN
      stored_env := jsonb_build_object(
          'HTTPS_PROXY', '${BROWSER_EGRESS_PROXY}',
          'HTTP_PROXY', '${BROWSER_EGRESS_PROXY}',
          'https_proxy', '${BROWSER_EGRESS_PROXY}',
          'http_proxy', '${BROWSER_EGRESS_PROXY}') || stored_env;
      UPDATE "McpServer" SET "env" = stored_env::text WHERE "id" = server."id";
    END IF;
  END LOOP;
END $$;
