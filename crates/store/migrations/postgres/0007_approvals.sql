-- Tools that ask first: a binding's approval policy for its server's tools, and a bot's for
-- its native tools. JSON text: "never", "always", "writes" or a list of tool-name globs.
ALTER TABLE "BotMcpServer" ADD COLUMN "approval" TEXT NOT NULL DEFAULT '"never"';
ALTER TABLE "Bot" ADD COLUMN "nativeToolApproval" TEXT NOT NULL DEFAULT '"never"';
