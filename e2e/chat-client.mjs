// A BotCraft chat read by the real AI SDK client, as `useChat` reads it:
// DefaultChatTransport sends the request and parses the UI message stream
// (the SDK's own uiMessageChunkSchema validates each chunk), and
// readUIMessageStream folds the chunks into the final UIMessage.
//
// usage: BOTCRAFT_API_KEY=… node chat-client.mjs BASE_URL BOT_ID "message"
// prints {"message": UIMessage, "errors": [...]} on stdout; exits 1 on failure.
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const [baseUrl, botId, text] = process.argv.slice(2);
if (!baseUrl || !botId || !text) {
  console.error('usage: node chat-client.mjs BASE_URL BOT_ID "message"');
  process.exit(2);
}

const transport = new DefaultChatTransport({
  api: `${baseUrl}/api/ai/chat`,
  headers: { Authorization: `Bearer ${process.env.BOTCRAFT_API_KEY ?? ''}` },
  body: { botId },
});

const errors = [];
try {
  const stream = await transport.sendMessages({
    chatId: 'chat-client',
    messageId: undefined,
    trigger: 'submit-message',
    abortSignal: undefined,
    messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text }] }],
  });
  let message;
  for await (const state of readUIMessageStream({
    stream,
    onError: (error) => errors.push(String(error)),
    terminateOnError: true,
  })) {
    message = state;
  }
  console.log(JSON.stringify({ message, errors }));
  process.exit(message && errors.length === 0 ? 0 : 1);
} catch (error) {
  console.error(error?.stack ?? String(error));
  process.exit(1);
}
