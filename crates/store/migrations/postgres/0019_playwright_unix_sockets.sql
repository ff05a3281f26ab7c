-- A sandboxed server may no longer make Unix sockets unless its policy says
-- "unixSockets": true (Landlock has no rule for a socket file, so a seccomp filter refuses
-- them). Chromium binds one (its profile's SingletonSocket) and fails without it: on a store
-- seeded before this, the stdio server named `playwright` is given it, unless its policy
-- already says either way. Every other server gets the new default.
UPDATE "McpServer" SET "sandbox" = '{"unixSockets":true}'
WHERE "name" = 'playwright' AND "transport" = 'stdio' AND "sandbox" IS NULL;
UPDATE "McpServer" SET "sandbox" = ("sandbox"::jsonb || '{"unixSockets":true}'::jsonb)::text
WHERE "name" = 'playwright' AND "transport" = 'stdio'
  AND "sandbox" LIKE '{%'
  AND NOT ("sandbox"::jsonb ? 'unixSockets');
