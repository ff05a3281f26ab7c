// The official TypeScript SDK's own streamable-HTTP server as an aggregator, the HTTP peer of
// BotCraft's /mcp in crates/bench (scripts/bench-faces.sh). Like naive-aggregator.mjs it
// spawns each backend given as NAME=COMMAND (one stdio client each, shared by every session),
// lists their tools under NAME__TOOL and forwards each call; it serves them at /mcp with the
// SDK's StreamableHTTPServerTransport as its documentation sets it up: one transport and one
// Server per session (`Mcp-Session-Id`), the SDK's defaults otherwise (answers as SSE).
// Prints "listening on http://127.0.0.1:PORT" once ready.
// usage: node ts-http-aggregator.mjs PORT NAME=COMMAND [NAME=COMMAND …]   (PORT 0: any)
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  isInitializeRequest,
} from "@modelcontextprotocol/sdk/types.js";

const [port, ...specs] = process.argv.slice(2);
const backends = new Map();
for (const spec of specs) {
  const at = spec.indexOf("=");
  const client = new Client({ name: "ts-http-aggregator", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({ command: spec.slice(at + 1), args: [], stderr: "ignore" }),
  );
  backends.set(spec.slice(0, at), client);
}

function aggregator() {
  const server = new Server(
    { name: "ts-http-aggregator", version: "1.0.0" },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = [];
    for (const [name, client] of backends) {
      for (const tool of (await client.listTools()).tools) {
        tools.push({ ...tool, name: `${name}__${tool.name}` });
      }
    }
    return { tools };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const at = request.params.name.indexOf("__");
    const client = backends.get(request.params.name.slice(0, at));
    if (!client) {
      return { content: [{ type: "text", text: "unknown tool" }], isError: true };
    }
    return client.callTool({
      name: request.params.name.slice(at + 2),
      arguments: request.params.arguments,
    });
  });
  return server;
}

const sessions = new Map();

async function body(request) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

const http = createServer(async (request, response) => {
  try {
    if (new URL(request.url, "http://localhost").pathname !== "/mcp") {
      response.writeHead(404).end();
      return;
    }
    const parsed = request.method === "POST" ? await body(request) : undefined;
    const id = request.headers["mcp-session-id"];
    let transport = id ? sessions.get(id) : undefined;
    if (!transport) {
      if (id || request.method !== "POST" || !isInitializeRequest(parsed)) {
        response.writeHead(400, { "content-type": "application/json" });
        response.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "no session" }, id: null }));
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (session) => sessions.set(session, transport),
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await aggregator().connect(transport);
    }
    await transport.handleRequest(request, response, parsed);
  } catch (error) {
    if (!response.headersSent) response.writeHead(500);
    response.end(String(error));
  }
});
http.listen(Number(port), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${http.address().port}`);
});
