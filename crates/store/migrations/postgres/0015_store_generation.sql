-- A counter raised by every write of servers, bots and bindings, in the write's own
-- transaction. Replicas hear each other's writes by NOTIFY, sent after the write: a NOTIFY
-- that failed (no connection to be had) or never went (a crash in between) would leave
-- another replica's caches (a bot's bindings, its approval policy) stale until some later
-- write. Each replica also reads this counter every while and drops its caches when it moved.
CREATE TABLE "StoreGeneration" (
    "id"    INTEGER PRIMARY KEY,
    "value" BIGINT NOT NULL
);
INSERT INTO "StoreGeneration" ("id", "value") VALUES (1, 0);

CREATE FUNCTION "botcraft_raise_generation"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE "StoreGeneration" SET "value" = "value" + 1 WHERE "id" = 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER "McpServer_generation" AFTER INSERT OR UPDATE OR DELETE ON "McpServer"
    FOR EACH STATEMENT EXECUTE FUNCTION "botcraft_raise_generation"();
CREATE TRIGGER "Bot_generation" AFTER INSERT OR UPDATE OR DELETE ON "Bot"
    FOR EACH STATEMENT EXECUTE FUNCTION "botcraft_raise_generation"();
CREATE TRIGGER "BotMcpServer_generation" AFTER INSERT OR UPDATE OR DELETE ON "BotMcpServer"
    FOR EACH STATEMENT EXECUTE FUNCTION "botcraft_raise_generation"();
