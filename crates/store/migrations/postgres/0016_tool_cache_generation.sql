-- A captured tool list raises the store's generation too (migration 15 raised it for
-- servers, bots and bindings only): a replica that missed the capture's announcement drops
-- its caches at its next read of the generation, so a tool list it never listed itself
-- (a never-started server's, captured elsewhere) is read from the store again.
CREATE TRIGGER "McpToolCache_generation" AFTER INSERT OR UPDATE OR DELETE ON "McpToolCache"
    FOR EACH STATEMENT EXECUTE FUNCTION "botcraft_raise_generation"();
