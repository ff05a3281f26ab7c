// BotCraft dashboard chat: talks to a bot through POST /api/ai/chat exactly as an AI SDK
// client does (the UI message stream protocol, parsed here by hand), with no framework.
//
// - The conversation is a list of AI SDK UIMessages, kept in sessionStorage per bot (this
//   tab only) and sent whole with every request, as `useChat` sends it.
// - Chunks fold into the assistant message as the SDK folds them: text, reasoning, tool
//   calls (`dynamic-tool` parts with their input, output, error or denial) and `file` parts
//   (images from tool results, shown as images).
// - A call that asks (`tool-approval-request`) shows Approve and Deny buttons. The answer
//   is written on the part (`approval-responded`), and once every asked call of the message
//   is answered the conversation goes back by itself, as `useChat` with
//   `lastAssistantMessageIsCompleteWithApprovalResponses` does.
// - Server-provided text is written with textContent; an image is shown only from a
//   `data:image/…` URL.
"use strict";

(() => {
  const KEY_NAME = "botcraft.apiKey";
  const STORE_PREFIX = "botcraft.chat.";
  const $ = (id) => document.getElementById(id);

  let bots = [];
  let messages = [];
  let busy = null; // the AbortController of the request in flight

  const key = () => sessionStorage.getItem(KEY_NAME);
  const botId = () => $("chat-bot").value;
  const storeKey = () => STORE_PREFIX + botId();

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

  function announce(text, isError) {
    const status = $("chat-status");
    status.textContent = text;
    status.classList.toggle("error", Boolean(isError));
  }

  function save() {
    if (botId()) sessionStorage.setItem(storeKey(), JSON.stringify(messages));
  }

  function load() {
    try {
      messages = JSON.parse(sessionStorage.getItem(storeKey()) || "[]");
    } catch (_) {
      messages = [];
    }
    render();
  }

  function newId(prefix) {
    const bytes = crypto.getRandomValues(new Uint8Array(8));
    return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // ---- folding the stream into the assistant message (the SDK's rules) ----

  function toolPart(message, id) {
    return message.parts.find((part) => part.type === "dynamic-tool" && part.toolCallId === id);
  }

  /// Applies one chunk to `message`; returns an error text for an `error` chunk.
  function fold(message, chunk, open) {
    switch (chunk.type) {
      case "start":
        if (chunk.messageId) message.id = chunk.messageId;
        break;
      case "start-step":
        message.parts.push({ type: "step-start" });
        break;
      case "text-start":
      case "reasoning-start": {
        const part = { type: chunk.type === "text-start" ? "text" : "reasoning", text: "", state: "streaming" };
        open.set(chunk.id, part);
        message.parts.push(part);
        break;
      }
      case "text-delta":
      case "reasoning-delta": {
        const part = open.get(chunk.id);
        if (part) part.text += chunk.delta;
        break;
      }
      case "text-end":
      case "reasoning-end": {
        const part = open.get(chunk.id);
        if (part) part.state = "done";
        open.delete(chunk.id);
        break;
      }
      case "tool-input-start":
        message.parts.push({
          type: "dynamic-tool", toolName: chunk.toolName, toolCallId: chunk.toolCallId,
          state: "input-streaming", input: undefined,
        });
        break;
      case "tool-input-available": {
        let part = toolPart(message, chunk.toolCallId);
        if (!part) {
          part = { type: "dynamic-tool", toolName: chunk.toolName, toolCallId: chunk.toolCallId };
          message.parts.push(part);
        }
        Object.assign(part, { state: "input-available", input: chunk.input });
        break;
      }
      case "tool-approval-request": {
        const part = toolPart(message, chunk.toolCallId);
        if (part) Object.assign(part, { state: "approval-requested", approval: { id: chunk.approvalId } });
        break;
      }
      case "tool-output-available": {
        const part = toolPart(message, chunk.toolCallId);
        if (part) Object.assign(part, { state: "output-available", output: chunk.output });
        break;
      }
      case "tool-output-error": {
        const part = toolPart(message, chunk.toolCallId);
        if (part) Object.assign(part, { state: "output-error", errorText: chunk.errorText });
        break;
      }
      case "tool-output-denied": {
        const part = toolPart(message, chunk.toolCallId);
        if (part) part.state = "output-denied";
        break;
      }
      case "file":
        message.parts.push({ type: "file", mediaType: chunk.mediaType, url: chunk.url });
        break;
      case "finish":
        if (chunk.messageMetadata) message.metadata = chunk.messageMetadata;
        break;
      case "error":
        return chunk.errorText || "the chat failed";
      default:
        break; // finish-step, message-metadata, abort, data parts: nothing to show
    }
    return null;
  }

  /// The `data:` payloads of an SSE body, as they arrive.
  async function* events(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = frame.split("\n").filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).trimStart()).join("\n");
        if (data && data !== "[DONE]") yield JSON.parse(data);
      }
    }
  }

  // ---- sending ----

  async function send() {
    const controller = new AbortController();
    busy = controller;
    setBusy(true);
    announce("The bot is answering…");
    const last = messages[messages.length - 1];
    // An answer to approvals continues the last assistant message, as the SDK does.
    const continuing = last && last.role === "assistant";
    const message = continuing ? last : { id: newId("msg-"), role: "assistant", parts: [] };
    if (!continuing) messages.push(message);
    let failure = null;
    try {
      const response = await fetch("/api/ai/chat", {
        method: "POST",
        headers: { Authorization: "Bearer " + key(), "Content-Type": "application/json" },
        body: JSON.stringify({
          botId: botId(), id: "dashboard-" + botId(), trigger: "submit-message",
          messages: messages.filter((m) => m !== message || continuing),
        }),
        signal: controller.signal,
        cache: "no-store",
      });
      if (!response.ok) {
        const body = await response.json().catch(() => null);
        throw new Error((body && body.error && body.error.message) || `HTTP ${response.status}`);
      }
      const open = new Map();
      for await (const chunk of events(response.body)) {
        failure = fold(message, chunk, open) || failure;
        render();
      }
    } catch (error) {
      failure = error.name === "AbortError" ? "Stopped." : error.message;
    } finally {
      busy = null;
      if (!message.parts.length) messages.splice(messages.indexOf(message), 1);
      save();
      render();
      setBusy(false);
    }
    const asked = pendingApprovals();
    if (failure) announce(failure, true);
    else if (asked.length) {
      announce(`The bot asks before running ${asked.map((p) => p.toolName).join(", ")}: approve or deny.`);
      const first = document.querySelector("#chat-log button[data-decision]");
      if (first) first.focus();
    } else {
      announce("Answered.");
      $("chat-input").focus();
    }
  }

  function pendingApprovals() {
    const last = messages[messages.length - 1];
    if (!last || last.role !== "assistant") return [];
    return last.parts.filter((part) => part.state === "approval-requested");
  }

  function answer(part, approved) {
    part.state = "approval-responded";
    part.approval = approved
      ? { id: part.approval.id, approved: true }
      : { id: part.approval.id, approved: false, reason: "The person denied this call in the dashboard." };
    save();
    render();
    if (pendingApprovals().length === 0 && !busy) send();
  }

  function setBusy(on) {
    $("chat-send").disabled = on || !botId();
    $("chat-stop").hidden = !on;
    $("chat-log").setAttribute("aria-busy", String(on));
  }

  // ---- rendering ----

  function json(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  function renderTool(part) {
    const state = part.state || "input-streaming";
    const box = el("div", { class: "tool", "data-tool-call": part.toolCallId, "data-state": state },
      el("p", {}, el("strong", {}, part.toolName), " ", el("span", { class: "muted" }, state.replace(/-/g, " "))));
    if (part.input !== undefined) {
      box.append(el("p", { class: "muted" }, "Input"), el("pre", { "aria-label": `input of ${part.toolName}` }, json(part.input)));
    }
    if (state === "output-available") {
      box.append(el("p", { class: "muted" }, "Output"), el("pre", { "aria-label": `output of ${part.toolName}` }, json(part.output)));
    } else if (state === "output-error") {
      box.append(el("p", { class: "error" }, part.errorText || "the call failed"));
    } else if (state === "output-denied" || (part.approval && part.approval.approved === false)) {
      box.append(el("p", { class: "error" }, "Denied: the tool did not run."));
    } else if (state === "approval-requested") {
      const actions = el("p", { class: "actions" });
      for (const [label, approved] of [["Approve", true], ["Deny", false]]) {
        const button = el("button", { type: "button", "data-decision": label.toLowerCase(),
          "aria-label": `${label.toLowerCase()} ${part.toolName}` }, label);
        button.addEventListener("click", () => answer(part, approved));
        actions.append(button);
      }
      box.append(el("p", {}, "This tool asks before it runs."), actions);
    } else if (state === "approval-responded") {
      box.append(el("p", { class: "muted" }, "Approved; running…"));
    }
    return box;
  }

  function renderPart(part) {
    switch (part.type) {
      case "text":
        return el("p", { class: "text" }, part.text);
      case "reasoning":
        return el("details", {}, el("summary", {}, "Reasoning"), el("p", { class: "text muted" }, part.text));
      case "dynamic-tool":
        return renderTool(part);
      case "file":
        if (typeof part.url === "string" && /^data:image\/[a-z0-9.+-]+[;,]/i.test(part.url)) {
          return el("img", { src: part.url, alt: `image (${part.mediaType}) from a tool result`, class: "tool-image" });
        }
        return el("p", { class: "muted" }, `file (${part.mediaType})`);
      default:
        return null;
    }
  }

  function render() {
    const log = $("chat-log");
    const items = messages.map((message) => {
      const parts = message.parts.map(renderPart).filter(Boolean);
      return el("li", { class: "message " + message.role, "data-role": message.role },
        el("p", { class: "who" }, message.role === "user" ? "You" : "Bot"), ...parts);
    });
    log.replaceChildren(...items);
    log.hidden = items.length === 0;
    log.scrollTop = log.scrollHeight;
    $("chat-empty").hidden = items.length > 0;
  }

  // ---- the form ----

  async function loadBots() {
    const response = await fetch("/api/bots", {
      headers: { Authorization: "Bearer " + key(), Accept: "application/json" }, cache: "no-store",
    });
    if (!response.ok) return;
    bots = await response.json();
    const select = $("chat-bot");
    const chosen = select.value || sessionStorage.getItem(STORE_PREFIX + "bot") || "";
    select.replaceChildren(el("option", { value: "" }, "choose a bot"),
      ...bots.map((bot) => el("option", { value: bot.id }, `${bot.name} (${bot.model})`)));
    select.value = bots.some((bot) => bot.id === chosen) ? chosen : "";
    load();
    setBusy(false);
  }

  function submit(event) {
    event.preventDefault();
    const input = $("chat-input");
    const text = input.value.trim();
    if (!text || busy || !botId()) return;
    if (pendingApprovals().length) {
      announce("Approve or deny the waiting tool call first.", true);
      return;
    }
    messages.push({ id: newId("user-"), role: "user", parts: [{ type: "text", text }] });
    input.value = "";
    save();
    render();
    send();
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("chat-form").addEventListener("submit", submit);
    $("chat-input").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) submit(event);
    });
    $("chat-bot").addEventListener("change", () => {
      sessionStorage.setItem(STORE_PREFIX + "bot", botId());
      announce("");
      load();
      setBusy(false);
    });
    $("chat-stop").addEventListener("click", () => busy && busy.abort());
    $("chat-clear").addEventListener("click", () => {
      messages = [];
      save();
      render();
      announce("New conversation.");
      $("chat-input").focus();
    });
  });
  document.addEventListener("botcraft:signed-in", () => loadBots().catch(() => {}));
  document.addEventListener("botcraft:signed-out", () => {
    if (busy) busy.abort();
    for (const name of Object.keys(sessionStorage)) {
      if (name.startsWith(STORE_PREFIX)) sessionStorage.removeItem(name);
    }
    messages = [];
    render();
  });
})();
