-- How a bot's model reads tool results: "vision" (images in results reach the model as
-- images) and "maxToolResultChars" (the longest text one tool result may give it).
ALTER TABLE "Bot" ADD COLUMN "vision" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "Bot" ADD COLUMN "maxToolResultChars" BIGINT NOT NULL DEFAULT 100000;
