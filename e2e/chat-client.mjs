// A BotCraft chat driven by the real AI SDK client, as `useChat` drives it: the package's
// `AbstractChat` (what `useChat` is built on) with its `DefaultChatTransport` sends the
// request and folds the UI message stream into messages, the package's own chunk schema
// validating every chunk. When the answer asks for approval, the person's answer is given
// with `addToolApprovalResponse`, and `lastAssistantMessageIsCompleteWithApprovalResponses`
// sends the conversation back by itself, as a `useChat` page configured for approvals does.
//
// usage: BOTCRAFT_API_KEY=… [AI_PACKAGE=ai|ai6|ai7] node chat-client.mjs BASE_URL BOT_ID "message" [approve|deny]
// prints {"package", "version", "messages": [UIMessage], "requests": [body], "errors": [...]}
// on stdout; exits 1 on failure. AI_PACKAGE names the pinned package (e2e/package.json):
// `ai` (5.x), `ai6` (the seed's 6.0.141) or `ai7` (the newest).
import { createRequire } from 'node:module';

const [baseUrl, botId, text, decision] = process.argv.slice(2);
if (!baseUrl || !botId || !text || (decision && !['approve', 'deny'].includes(decision))) {
  console.error('usage: node chat-client.mjs BASE_URL BOT_ID "message" [approve|deny]');
  process.exit(2);
}
const name = process.env.AI_PACKAGE || 'ai';
const ai = await import(name);
const { version } = createRequire(import.meta.url)(`${name}/package.json`);

/// The chat state `useChat` keeps in React, kept in plain fields.
class State {
  status = 'ready';
  error = undefined;
  messages = [];
  pushMessage = (message) => { this.messages = this.messages.concat(message); };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (index, message) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = (thing) => structuredClone(thing);
}

class Chat extends ai.AbstractChat {
  constructor(init) {
    super({ ...init, state: new State() });
  }
  get messages() {
    return this.state.messages;
  }
}

const errors = [];
const requests = [];
let finished = () => {};
const transport = new ai.DefaultChatTransport({
  api: `${baseUrl}/api/ai/chat`,
  headers: { Authorization: `Bearer ${process.env.BOTCRAFT_API_KEY ?? ''}` },
  body: { botId },
  fetch: async (url, init) => {
    requests.push(JSON.parse(init.body));
    return fetch(url, init);
  },
});
const chat = new Chat({
  id: 'chat-client',
  transport,
  onError: (error) => errors.push(String(error?.stack ?? error)),
  onFinish: () => finished(),
  sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithApprovalResponses,
});

try {
  await chat.sendMessage({ text });
  const asked = (chat.messages.at(-1)?.parts ?? []).filter((part) => part.state === 'approval-requested');
  if (decision && asked.length > 0) {
    const resumed = new Promise((resolve) => { finished = resolve; });
    for (const part of asked) {
      await chat.addToolApprovalResponse({
        id: part.approval.id,
        approved: decision === 'approve',
        reason: decision === 'deny' ? 'the person said no' : undefined,
      });
    }
    await resumed;
  }
  console.log(JSON.stringify({ package: name, version, messages: chat.messages, requests, errors }));
  process.exit(errors.length === 0 && chat.status === 'ready' ? 0 : 1);
} catch (error) {
  console.error(error?.stack ?? String(error));
  process.exit(1);
}
