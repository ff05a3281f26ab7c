// BotCraft dashboard: plain DOM, no framework. The key lives in sessionStorage (this tab
// only) and travels in the Authorization header, never in a URL. All server-provided text is
// written with textContent. With a chat key (GET /api/whoami says the role) the page is
// read-only and says so: server states come from the public /api/health, with no controls,
// no logs and no bindings. A remote server that needs OAuth shows a "Connect" button: it asks
// POST /api/servers/{name}/oauth/start for the authorization URL and goes there in this tab;
// the authorization server sends the browser back through /oauth/callback to
// /?connected=NAME, which the page announces. A stdio server shows its sandbox in a few words;
// each bot lists, on request, which of its tools ask before they run. Each binding's approval policy can be changed
// in place (PUT /api/bots/{bot}/servers/{server}). A binding to a server that may use OAuth
// shows whose account the bot uses there (GET /api/servers/{server}/oauth): the server's, or
// one of the bot's own, connected with POST /api/servers/{server}/oauth/start?bot=ID (the same
// round trip as Connect) and dropped with DELETE /api/servers/{server}/oauth?bot=ID. The chat lives in chat.js; this script
// tells it when a key is used or forgotten (botcraft:signed-in, botcraft:signed-out).
"use strict";

const KEY_NAME = "botcraft.apiKey";
const POLL_MS = 2000;
const BOTS_EVERY = 5; // refresh bots and bindings every 5th poll (10 s)

const $ = (id) => document.getElementById(id);
let pollTimer = null;
let polls = 0;
const openLogs = new Set();
const rows = new Map();
let readOnly = false;

function key() {
  return sessionStorage.getItem(KEY_NAME);
}

function say(text, isError) {
  const status = $("status");
  status.textContent = text;
  status.classList.toggle("error", Boolean(isError));
}

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, payload) {
  const headers = { Authorization: "Bearer " + key(), Accept: "application/json" };
  if (payload !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: payload === undefined ? undefined : JSON.stringify(payload),
    cache: "no-store",
  });
  if (response.status === 401) {
    signOut("The key was refused. Enter a valid API key.");
    throw new ApiError(401, "unauthorized", "unauthorized");
  }
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch (_) {
    body = null;
  }
  if (!response.ok) {
    const error = body && body.error ? body.error : {};
    throw new ApiError(response.status, error.code || "", error.message || response.statusText);
  }
  return body;
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "class") node.className = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return h ? `${h}h ${m}m` : m ? `${m}m ${s}s` : `${s}s`;
}

// ---- servers ----

function serverRow(name) {
  if (rows.has(name)) return rows.get(name);
  const cells = {
    endpoint: el("td", { class: "endpoint" }),
    state: el("td", { class: "state" }),
    uptime: el("td", { class: "num" }),
    restarts: el("td", { class: "num" }),
    tools: el("td", { class: "num tools" }),
    error: el("td", { class: "error" }),
  };
  const actions = el("td", { class: "actions" });
  const buttons = (readOnly ? [] : ["start", "stop", "restart"]).map((action) => {
    const button = el("button", { type: "button", "aria-label": `${action} ${name}`, "data-action": action },
      action[0].toUpperCase() + action.slice(1));
    button.addEventListener("click", () => act(name, action));
    actions.append(button);
    return button;
  });
  const connect = el("button", { type: "button", "aria-label": `connect ${name}`, "data-action": "connect" }, "Connect");
  connect.hidden = true;
  connect.addEventListener("click", () => startOAuth(name, connect));
  if (!readOnly) actions.append(connect);
  const row = el("tr", { "data-server": name },
    el("th", { scope: "row" }, name), cells.endpoint, cells.state, cells.uptime, cells.restarts, cells.tools, cells.error, actions);
  const pre = el("pre", { "aria-label": `stderr of ${name}` });
  const details = el("details", {}, el("summary", {}, `stderr tail of ${name}`), pre);
  details.addEventListener("toggle", () => {
    if (details.open) {
      openLogs.add(name);
      loadLogs(name);
    } else {
      openLogs.delete(name);
    }
  });
  if (readOnly) actions.textContent = "needs an admin key";
  const logRow = el("tr", { class: "logs", "data-logs": name }, el("td", { colspan: "8" }, details));
  logRow.hidden = readOnly;
  const entry = { row, logRow, cells, buttons, connect, pre };
  rows.set(name, entry);
  return entry;
}

// The servers as last listed, by name (the bots' tables read their transports).
const knownServers = new Map();

function renderServers(servers) {
  knownServers.clear();
  for (const server of servers) knownServers.set(server.name, server);
  const body = $("servers").tBodies[0];
  const seen = new Set();
  for (const server of servers) {
    const status = server.status || { state: "stopped", uptime: null, restarts: 0, toolCount: null, lastError: null };
    const entry = serverRow(server.name);
    seen.add(server.name);
    entry.cells.state.textContent = status.state;
    entry.cells.state.dataset.state = status.state;
    entry.cells.state.className = "state state-" + status.state;
    entry.cells.uptime.textContent = duration(status.uptime);
    entry.cells.restarts.textContent = status.restarts === null ? "—" : String(status.restarts ?? 0);
    entry.cells.tools.textContent = status.toolCount === null || status.toolCount === undefined ? "—" : String(status.toolCount);
    entry.cells.error.textContent = status.lastError || "";
    // stdio, or a remote server's transport and URL (its query cut by the API) and the names
    // of its headers (values are never shown).
    const transport = status.transport || server.transport || "stdio";
    const url = status.url || (transport === "stdio" ? "" : server.url || "");
    const headers = Object.keys(server.headers || {});
    entry.cells.endpoint.textContent = transport === "stdio" ? `stdio · ${sandboxText(server.sandbox)}`
      : `${transport} ${url}` + (headers.length ? ` (headers: ${headers.join(", ")})` : "");
    entry.connect.hidden = readOnly || status.state !== "needs-auth";
    if (entry.row.parentNode !== body) body.append(entry.row, entry.logRow);
  }
  // BotCraft lists every server's tools once per config, in the background: say which wait.
  const unlisted = servers.filter((server) => server.status && server.status.toolsListed !== undefined
    && server.status.toolsListed !== true).map((server) => server.name);
  $("listing").textContent = unlisted.length
    ? `Tools not yet listed: ${unlisted.length} (${unlisted.join(", ")})` : "";
  for (const [name, entry] of rows) {
    if (!seen.has(name)) {
      entry.row.remove();
      entry.logRow.remove();
      rows.delete(name);
      openLogs.delete(name);
    }
  }
}

async function loadLogs(name) {
  const entry = rows.get(name);
  if (!entry) return;
  try {
    const logs = await api("GET", `/api/servers/${encodeURIComponent(name)}/logs`);
    entry.pre.textContent = logs.lines.length ? logs.lines.join("\n") : "(nothing on stderr)";
  } catch (error) {
    entry.pre.textContent = `stderr unavailable: ${error.message}`;
  }
}

async function act(name, action) {
  const entry = rows.get(name);
  entry.buttons.forEach((b) => (b.disabled = true));
  say(`${action} ${name}…`);
  try {
    const result = await api("POST", `/api/servers/${encodeURIComponent(name)}/${action}`);
    const state = result && result.status ? result.status.state : "?";
    say(`${action} ${name}: now ${state}`);
  } catch (error) {
    if (error.status !== 401) say(`${action} ${name} failed: ${error.message}`, true);
  } finally {
    entry.buttons.forEach((b) => (b.disabled = false));
    refresh();
  }
}

// Go to the authorization server for `name` (this tab; the key stays in sessionStorage), for
// the server's own account or, with `bot`, for that bot's own.
async function startOAuth(name, button, bot) {
  button.disabled = true;
  say(`connecting ${name}…`);
  try {
    const query = bot ? `?bot=${encodeURIComponent(bot.id)}` : "";
    const started = await api("POST", `/api/servers/${encodeURIComponent(name)}/oauth/start${query}`);
    // Only an http(s) URL is followed (BotCraft checks it too): a javascript: or data: URL
    // from a server's metadata would run in this page.
    const target = new URL(started.authorizationUrl);
    if (target.protocol !== "https:" && target.protocol !== "http:") {
      throw new ApiError(502, "oauth_failed", `refused authorization URL scheme ${target.protocol}`);
    }
    window.location.assign(target.href);
  } catch (error) {
    button.disabled = false;
    if (error.status !== 401) say(`connect ${name} failed: ${error.message}`, true);
  }
}

// ---- bots ----

// A stdio server's sandbox policy in a few words (the whole policy is in the API's server).
function sandboxText(policy) {
  if (!policy) return "sandbox: default";
  if (policy.enabled === false) return "unconfined";
  const network = Array.isArray(policy.network) ? `network: ports ${policy.network.join(", ")}`
    : `network: ${policy.network ?? "all"}`;
  const extra = (policy.readWrite || []).length ? ` · writes ${policy.readWrite.join(", ")}` : "";
  const sockets = policy.unixSockets ? " · unix sockets" : "";
  return `sandboxed · ${network}${extra}${sockets}`;
}

// A bot's tools and whether each asks for approval before it runs.
function toolAsks(bot) {
  const list = el("ul", { "data-tool-asks": bot.name });
  const details = el("details", {}, el("summary", {}, `Tools of ${bot.name}: which ask before they run in chat`),
    el("p", {}, "Approvals guard chat turns only: an MCP client on /mcp asks its own person."), list);
  details.addEventListener("toggle", async () => {
    if (!details.open) return;
    try {
      const tools = await api("GET", `/api/bots/${encodeURIComponent(bot.id)}/tools`);
      const items = [...tools.native, ...tools.mcp].map((tool) =>
        el("li", { "data-tool": tool.name }, `${tool.name}: ${tool.asksApproval ? "asks" : "runs without asking"}`));
      list.replaceChildren(...(items.length ? items : [el("li", {}, "no tools known yet")]));
    } catch (error) {
      if (error.status !== 401) list.replaceChildren(el("li", {}, `could not list the tools: ${error.message}`));
    }
  });
  return details;
}

// An approval policy as the API writes it ("never", "always", "writes" or a list of globs),
// in words.
function approvalText(policy) {
  if (Array.isArray(policy)) return policy.length ? `asks for ${policy.join(", ")}` : "never asks";
  return { never: "never asks", always: "always asks", writes: "asks unless read-only" }[policy] || String(policy);
}

// An approval policy editor: a choice, the globs when the choice is a list, and Save, which
// hands the policy to `store` (a PUT) and says what was saved. `what` names it for labels.
function approvalEditor(what, policy, store) {
  const choice = el("select", { "aria-label": `approval for ${what}` },
    ...[["never", "never asks"], ["always", "always asks"], ["writes", "asks unless read-only"],
      ["tools", "asks for these tools"]].map(([value, label]) => el("option", { value }, label)));
  choice.value = Array.isArray(policy) ? "tools" : policy;
  const globs = el("input", { type: "text", "aria-label": `tools that ask, for ${what} (comma-separated globs)`,
    placeholder: "run, *_trash" });
  globs.value = Array.isArray(policy) ? policy.join(", ") : "";
  globs.hidden = choice.value !== "tools";
  choice.addEventListener("change", () => { globs.hidden = choice.value !== "tools"; });
  const save = el("button", { type: "button", "aria-label": `save approval for ${what}` }, "Save");
  save.addEventListener("click", async () => {
    const approval = choice.value === "tools"
      ? globs.value.split(",").map((glob) => glob.trim()).filter(Boolean)
      : choice.value;
    save.disabled = true;
    try {
      await store(approval);
      say(`${what}: ${approvalText(approval)}`);
    } catch (error) {
      if (error.status !== 401) say(`saving the approval for ${what} failed: ${error.message}`, true);
    } finally {
      save.disabled = false;
    }
  });
  return el("span", { class: "actions", "data-approval": Array.isArray(policy) ? "tools" : policy }, choice, globs, save);
}

// A binding's policy. The binding is read again just before it is written, so a change made
// meanwhile elsewhere (its filter, pins) is kept, and a binding removed meanwhile is not
// brought back.
function bindingApproval(bot, binding) {
  const botPath = `/api/bots/${encodeURIComponent(bot.id)}`;
  return approvalEditor(`${binding.server.name} in ${bot.name}`, binding.approval, async (approval) => {
    const current = (await api("GET", `${botPath}/servers`)).find((b) => b.server.id === binding.server.id);
    if (!current) throw new ApiError(404, "not_found", `${bot.name} is no longer bound to ${binding.server.name}`);
    return api("PUT", `${botPath}/servers/${encodeURIComponent(binding.server.id)}`, {
      enabled: current.enabled, toolFilter: current.toolFilter, pinnedTools: current.pinnedTools, approval,
    });
  });
}

// The bot's native tools' policy (tool_search never asks). The bot is read again just before
// it is written, with its other fields as they are then.
function nativeApproval(bot) {
  const path = `/api/bots/${encodeURIComponent(bot.id)}`;
  return approvalEditor(`native tools of ${bot.name}`, bot.nativeToolApproval ?? "never", async (approval) => {
    const current = await api("GET", path);
    return api("PUT", path, {
      name: current.name, model: current.model, systemPrompt: current.systemPrompt, stepLimit: current.stepLimit,
      toolLoadingMode: current.toolLoadingMode, vision: current.vision,
      maxToolResultChars: current.maxToolResultChars, nativeToolApproval: approval,
    });
  });
}

// Whether a server may use OAuth: streamable HTTP without an Authorization header of its own.
function oauthCapable(server) {
  return server.transport === "streamable-http"
    && !Object.keys(server.headers || {}).some((name) => name.toLowerCase() === "authorization");
}

// Whose account `bot` uses at `server` (an OAuth server), with the buttons to change it.
function accountCell(bot, server, accounts) {
  const cell = el("td", { class: "account" });
  if (!oauthCapable(server)) {
    cell.textContent = "—";
    return cell;
  }
  const own = accounts && accounts.bots.find((entry) => entry.botId === bot.id);
  const label = el("span", { "data-account": own ? "own" : "server" },
    own ? `own account (${own.authorized ? own.state : "needs-auth"})` : "the server's account");
  cell.append(label);
  if (!own || !own.authorized) {
    const connect = el("button", { type: "button", "aria-label": `connect ${bot.name}'s own account to ${server.name}` },
      "Connect own account");
    connect.addEventListener("click", () => startOAuth(server.name, connect, bot));
    cell.append(" ", connect);
  }
  if (own) {
    const drop = el("button", { type: "button", "aria-label": `use the server's account for ${bot.name} on ${server.name}` },
      "Use the server's");
    drop.addEventListener("click", async () => {
      drop.disabled = true;
      try {
        await api("DELETE", `/api/servers/${encodeURIComponent(server.name)}/oauth?bot=${encodeURIComponent(bot.id)}`);
        say(`${bot.name} uses the server's account on ${server.name} now.`);
      } catch (error) {
        if (error.status !== 401) say(`could not change ${bot.name}'s account: ${error.message}`, true);
      }
      await loadBots(true);
    });
    cell.append(" ", drop);
  }
  return cell;
}

// `force`: after a change made in the bots section itself (its button still has the focus).
async function loadBots(force = false) {
  const container = $("bots");
  // Not while someone is editing in it: the next refresh picks the change up.
  if (!force && container.contains(document.activeElement)) return;
  const bots = await api("GET", "/api/bots");
  // The accounts at each OAuth server, asked once per refresh.
  const accounts = new Map();
  const accountsOf = (server) => {
    if (!accounts.has(server.name)) {
      accounts.set(server.name, api("GET", `/api/servers/${encodeURIComponent(server.name)}/oauth`).catch(() => null));
    }
    return accounts.get(server.name);
  };
  const sections = [];
  for (const bot of bots) {
    const summary = el("p", { class: "muted" },
      `model ${bot.model} · tools ${bot.toolLoadingMode} · step limit ${bot.stepLimit}${bot.vision ? ' · vision' : ''} · tool results up to ${bot.maxToolResultChars} characters · native tools ${approvalText(bot.nativeToolApproval ?? "never")}`);
    if (readOnly) {
      sections.push(el("article", {}, el("h3", {}, bot.name), summary,
        el("p", { class: "muted" }, "Bindings need an admin key.")));
      continue;
    }
    const bindings = await api("GET", `/api/bots/${encodeURIComponent(bot.id)}/servers`);
    const table = el("table", { "data-bot": bot.name },
      el("caption", { class: "visually-hidden" }, `Servers bound to ${bot.name}`),
      el("thead", {}, el("tr", {},
        el("th", { scope: "col" }, "Server"), el("th", { scope: "col" }, "Enabled"),
        el("th", { scope: "col" }, "Tool filter"), el("th", { scope: "col" }, "Pinned tools"),
        el("th", { scope: "col" }, "Approval"), el("th", { scope: "col" }, "Account"))));
    const body = el("tbody");
    for (const binding of bindings) {
      const server = { ...binding.server, ...(knownServers.get(binding.server.name) || {}) };
      body.append(el("tr", { "data-binding": server.name },
        el("th", { scope: "row" }, server.name),
        el("td", {}, binding.enabled ? "yes" : "no"),
        el("td", {}, binding.toolFilter.length ? binding.toolFilter.join(", ") : "all tools"),
        el("td", {}, binding.pinnedTools.length ? binding.pinnedTools.join(", ") : "—"),
        el("td", {}, bindingApproval(bot, binding)),
        accountCell(bot, server, oauthCapable(server) ? await accountsOf(server) : null)));
    }
    if (!bindings.length) body.append(el("tr", {}, el("td", { colspan: "6" }, "no servers bound")));
    table.append(body);
    const native = el("p", {}, "Native tools: ", nativeApproval(bot));
    sections.push(el("article", {}, el("h3", {}, bot.name), summary, native, table, toolAsks(bot)));
  }
  // Looked at again: someone may have started editing while the bots were fetched.
  if (!force && container.contains(document.activeElement)) return;
  container.replaceChildren(...(sections.length ? sections : [el("p", {}, "No bots yet.")]));
}

// ---- tool search ----

async function search(event) {
  event.preventDefault();
  const query = $("search-input").value.trim();
  const list = $("search-results");
  const status = $("search-status");
  if (!query) return;
  status.textContent = "Searching…";
  list.replaceChildren();
  try {
    const params = new URLSearchParams({ q: query, limit: "10" });
    const found = await api("GET", `/api/tools/search?${params}`);
    const results = found.results || [];
    status.textContent = `${results.length} result${results.length === 1 ? "" : "s"} for “${query}”` +
      (found.truncated ? " (query cut at 512 characters)" : "");
    for (const result of results) {
      list.append(el("li", { "data-tool": `${result.server}/${result.tool}` },
        el("strong", {}, `${result.server} / ${result.tool}`), " ",
        el("span", { class: "score" }, `score ${Number(result.score).toFixed(3)}` + (result.tier ? ` · ${result.tier}` : "")),
        el("br"),
        el("span", {}, result.description || "")));
    }
  } catch (error) {
    if (error.status === 404 && error.code === "no_route") {
      status.textContent = "Tool search is not available: this BotCraft has no GET /api/tools/search.";
    } else if (error.status !== 401) {
      status.textContent = `Search failed: ${error.message}`;
    }
  }
}

// ---- polling and the key ----

// The public health report's servers (state only), shaped like /api/servers rows.
function healthServers(health) {
  return Object.entries(health.mcpServers || {}).map(([name, server]) => ({
    name,
    status: { state: server.state, transport: server.transport, url: server.url, uptime: null, restarts: null, toolCount: null, lastError: null },
  }));
}

// Ask who the key is; anything but an admin key makes the page read-only.
async function loadRole() {
  const caller = await api("GET", "/api/whoami");
  readOnly = caller.role !== "admin";
  const mode = $("mode");
  mode.hidden = !readOnly;
  mode.textContent = readOnly
    ? `Read-only: this is a ${caller.role} key (${caller.name}). It can read bots and search tools; ` +
      "server controls, logs and bindings need an admin key."
    : "";
  document.body.classList.toggle("read-only", readOnly);
}

async function refresh() {
  if (!key()) return;
  try {
    const health = await api("GET", "/api/health");
    renderServers(readOnly ? healthServers(health) : await api("GET", "/api/servers"));
    renderSearchBuild(health.toolSearch);
    for (const name of openLogs) loadLogs(name);
    if (polls % BOTS_EVERY === 0) await loadBots();
    polls += 1;
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (error) {
    if (error.status !== 401) say(`Refresh failed: ${error.message}`, true);
  }
}

// A tool_search index being built says how many tool texts the model has embedded (a cold
// build takes tens of milliseconds per tool).
function renderSearchBuild(search) {
  const building = search && search.building;
  $("search-build").textContent = building
    ? `tool_search is embedding tool texts: ${building.embedded.toLocaleString("en")} of ` +
      `${building.total.toLocaleString("en")} (${Math.floor((100 * building.embedded) / building.total)}%)`
    : "";
}

function schedule() {
  clearTimeout(pollTimer);
  pollTimer = setTimeout(async () => {
    await refresh();
    if (key()) schedule();
  }, POLL_MS);
}

async function signIn() {
  try {
    await loadRole();
  } catch (error) {
    if (error.status === 403) signOut("This key cannot use the dashboard (a bot key is for /mcp).");
    else if (error.status !== 401) say(`Cannot check the key: ${error.message}`, true);
    return;
  }
  for (const entry of rows.values()) {
    entry.row.remove();
    entry.logRow.remove();
  }
  rows.clear();
  openLogs.clear();
  $("key-section").hidden = true;
  $("app").hidden = false;
  polls = 0;
  refresh().then(schedule);
  document.dispatchEvent(new Event("botcraft:signed-in"));
}

function signOut(message) {
  sessionStorage.removeItem(KEY_NAME);
  document.dispatchEvent(new Event("botcraft:signed-out"));
  clearTimeout(pollTimer);
  $("app").hidden = true;
  $("key-section").hidden = false;
  $("key-input").value = "";
  $("key-input").focus();
  say(message || "", Boolean(message));
}

document.addEventListener("DOMContentLoaded", () => {
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = $("key-input").value.trim();
    if (!value) return;
    sessionStorage.setItem(KEY_NAME, value);
    $("key-input").value = "";
    say("");
    signIn();
  });
  $("forget-key").addEventListener("click", () => signOut("Key forgotten."));
  $("search-form").addEventListener("submit", search);
  const connected = new URLSearchParams(window.location.search).get("connected");
  if (connected) {
    history.replaceState(null, "", "/");
    // Anyone can link here: only a server's name (its charset, its length) is announced.
    if (/^[A-Za-z0-9_.-]{1,64}$/.test(connected)) say(`${connected} is connected: its tools can be used now.`);
  }
  if (key()) signIn();
});
