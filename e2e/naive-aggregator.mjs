// A naive MCP aggregator on the official TypeScript SDK, the peer of BotCraft's faces in
// crates/bench (scripts/bench-faces.sh): stdio in, stdio out. It spawns each backend given as
// NAME=COMMAND, lists their tools under NAME__TOOL, and forwards each call to its backend.
// usage: node naive-aggregator.mjs NAME=COMMAND [NAME=COMMAND …]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const backends = new Map();
for (const spec of process.argv.slice(2)) {
  const at = spec.indexOf("=");
  const name = spec.slice(0, at);
  const client = new Client({ name: "naive-aggregator", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({ command: spec.slice(at + 1), args: [], stderr: "ignore" }),
  );
  backends.set(name, client);
}

const server = new Server(
  { name: "naive-aggregator", version: "1.0.0" },
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
await server.connect(new StdioServerTransport());
