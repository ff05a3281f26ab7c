-- An OAuth record written or deleted raises the store's generation too: a replica that
-- missed the write's announcement reads its records again at its next read of the
-- generation, so a sign-out through one replica is not undone by another's tokens kept in
-- memory.
CREATE TRIGGER "McpOAuthToken_generation" AFTER INSERT OR UPDATE OR DELETE ON "McpOAuthToken"
    FOR EACH STATEMENT EXECUTE FUNCTION "botcraft_raise_generation"();
CREATE TRIGGER "McpOAuthBotToken_generation" AFTER INSERT OR UPDATE OR DELETE ON "McpOAuthBotToken"
    FOR EACH STATEMENT EXECUTE FUNCTION "botcraft_raise_generation"();
