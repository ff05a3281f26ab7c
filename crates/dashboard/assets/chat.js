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
// - A request that fails can be sent again (Retry): approval ids are signed, not stored, so
//   an approved call that did not run yet runs on the retry, within the approval's TTL.
"use strict";

(() => {
  const KEY_NAME = "botcraft.apiKey";
  const STORE_PREFIX = "botcraft.chat.";
  // `$` and `el` are app.js's (loaded first; classic scripts share their top-level names).

  let bots = [];
  let messages = []; // the shown bot's conversation
  let busy = null; // the AbortController of the request in flight
  let answeredWhileBusy = false; // an approval answered while a stream was still open

  const key = () => sessionStorage.getItem(KEY_NAME);
  const botId = () => $("chat-bot").value;
  const storeKey = () => STORE_PREFIX + botId();

  function announce(text, isError) {
    const status = $("chat-status");
    status.textContent = text;
    status.classList.toggle("error", Boolean(isError));
  }

  /// Keeps `convo` as bot `bot`'s conversation. When the tab's storage is full (screenshots
  /// add up), the images' data is left out of what is kept, and the page says so.
  function save(bot = botId(), convo = messages) {
    if (!bot) return;
    try {
      sessionStorage.setItem(STORE_PREFIX + bot, JSON.stringify(convo));
    } catch (_) {
      const light = convo.map((m) => ({
        ...m, parts: m.parts.map((p) => (p.type === "file" ? { ...p, url: "", omitted: true } : p)),
      }));
      try {
        sessionStorage.setItem(STORE_PREFIX + bot, JSON.stringify(light));
        announce("This tab's storage is full: images are not kept after a reload.", true);
      } catch (_) {
        announce("This tab's storage is full: the conversation is not kept after a reload.", true);
      }
    }
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
      case "abort":
        return "The turn was cancelled.";
      default:
        break; // finish-step, message-metadata, data parts: nothing to show
    }
    return null;
  }

  /// The JSON `data:` payloads of an SSE body, as they arrive (lines end in LF, CRLF or
  /// CR; an event ends at a blank line or at the end of the body). Leaving early (an error,
  /// Stop) cancels the body, which ends the turn on the server.
  async function* events(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let data = [];
    const dispatch = function* () {
      const payload = data.join("\n");
      data = [];
      if (payload && payload !== "[DONE]") yield JSON.parse(payload);
    };
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let match;
        // A CR at the very end may be the first half of a CRLF: wait for the next read.
        while ((match = /\r\n|\r(?!$)|\n/.exec(buffer))) {
          const line = buffer.slice(0, match.index);
          buffer = buffer.slice(match.index + match[0].length);
          if (line === "") yield* dispatch();
          else if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
        }
      }
      const last = buffer.replace(/\r$/, "");
      if (last.startsWith("data:")) data.push(last.slice(last.startsWith("data: ") ? 6 : 5));
      yield* dispatch();
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  // ---- sending ----

  /// The conversation as a request carries it: images stay in the page (the server reads
  /// no file part of an assistant message, and a screenshot would weigh on every request).
  function outgoing(convo) {
    return convo.map((m) => ({ ...m, parts: m.parts.filter((p) => p.type !== "file") }));
  }

  /// Sends the shown bot's conversation and streams the answer into it. The bot and its
  /// conversation are fixed here: switching bots mid-answer cannot mix two conversations.
  async function send() {
    const bot = botId();
    const convo = messages;
    if (!bot || busy) return;
    const controller = new AbortController();
    busy = controller;
    answeredWhileBusy = false;
    setBusy(true);
    $("chat-retry").hidden = true;
    announce("The bot is answering…");
    const last = convo[convo.length - 1];
    // An answer to approvals continues the last assistant message, as the SDK does.
    const continuing = Boolean(last && last.role === "assistant");
    const message = continuing ? last : { id: newId("msg-"), role: "assistant", parts: [] };
    const sent = outgoing(convo);
    if (!continuing) convo.push(message);
    const shown = () => convo === messages;
    let failure = null;
    let finished = false;
    try {
      const response = await fetch("/api/ai/chat", {
        method: "POST",
        headers: { Authorization: "Bearer " + key(), "Content-Type": "application/json" },
        body: JSON.stringify({ botId: bot, id: "dashboard-" + bot, trigger: "submit-message", messages: sent }),
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
        if (chunk.type === "finish") finished = true;
        if (shown()) render();
      }
      if (!finished && !failure) failure = "The answer stopped before it was finished.";
    } catch (error) {
      failure = error.name === "AbortError" ? "Stopped." : `The chat failed: ${error.message}`;
    } finally {
      busy = null;
      const at = convo.indexOf(message);
      if (!message.parts.length && at >= 0) convo.splice(at, 1);
      save(bot, convo);
      setBusy(false);
    }
    if (!shown()) return;
    render();
    const asked = pendingApprovals();
    if (failure) {
      announce(failure, true);
      $("chat-retry").hidden = false;
    } else if (asked.length) {
      announce(`The bot asks before running ${asked.map((p) => p.toolName).join(", ")}: approve or deny.`);
      // The first Approve takes the focus only from a person who is not typing: a space or
      // an Enter meant for a message being written must never approve a call.
      const first = document.querySelector("#chat-log button[data-decision]");
      if (first && !typing()) first.focus();
    } else if (answeredWhileBusy && answersToSend()) {
      send(); // answers given while the stream was open go back now
    } else {
      announce("Answered.");
      $("chat-input").focus();
    }
  }

  /// Whether the person may be writing: the focus is on a field of the page (the message
  /// box, empty or not: the next key may come before they see the request), not on nothing
  /// or a button. The box keeps its focus, and its text, while a call asks.
  function typing() {
    const active = document.activeElement;
    return Boolean(active && active !== document.body && active.tagName !== "BUTTON");
  }

  function pendingApprovals() {
    const last = messages[messages.length - 1];
    if (!last || last.role !== "assistant") return [];
    return last.parts.filter((part) => part.state === "approval-requested");
  }

  /// Whether the last message holds answers the server has not read yet.
  function answersToSend() {
    const last = messages[messages.length - 1];
    return Boolean(last && last.role === "assistant" &&
      last.parts.some((part) => part.state === "approval-responded"));
  }

  function answer(part, approved) {
    if (part.state !== "approval-requested") return;
    part.state = "approval-responded";
    part.approval = approved
      ? { id: part.approval.id, approved: true }
      : { id: part.approval.id, approved: false, reason: "The person denied this call in the dashboard." };
    save();
    render();
    if (pendingApprovals().length > 0) {
      const next = document.querySelector("#chat-log button[data-decision]");
      if (next) next.focus();
    } else if (busy) {
      answeredWhileBusy = true;
    } else {
      // The focus stays off the message box while the answer goes on: a further call's
      // Approve may take it; the box gets it back once the bot has answered.
      send();
    }
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

  // Characters that show as nothing, or move what follows them (a model's tool input may
  // hide a command behind them): Unicode's default-ignorable characters (zero-width, bidi
  // controls, variation selectors, tags, Hangul fillers) but the joiner and the
  // presentation selectors right after an emoji (as 👩‍💻 and ❤️ hold them), controls other
  // than tab and line ends, the line and paragraph separators, and the blank Braille
  // pattern. Spaces of other widths show as spaces and are left alone.
  const HIDDEN = /(?!(?<=\p{Extended_Pictographic}[\u{1F3FB}-\u{1F3FF}]?)[\u200D\uFE0E\uFE0F])[\p{Default_Ignorable_Code_Point}\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u2028\u2029\u2800]/gu;

  /** `text` with every hidden character written `\u{…}`, and how many there were. */
  function visible(text) {
    let hidden = 0;
    const shown = text.replace(HIDDEN, (c) => {
      hidden += 1;
      return "\\u{" + c.codePointAt(0).toString(16) + "}";
    });
    return { shown, hidden };
  }

  function renderTool(part) {
    const state = part.state || "input-streaming";
    const box = el("div", { class: "tool", "data-tool-call": part.toolCallId, "data-state": state },
      el("p", {}, el("strong", {}, part.toolName), " ", el("span", { class: "muted" }, state.replace(/-/g, " "))));
    const inputId = "input-" + String(part.toolCallId).replace(/[^A-Za-z0-9_-]/g, "_");
    let input = { shown: "", hidden: 0 };
    if (part.input !== undefined) {
      input = visible(json(part.input));
      // A call that asks shows its whole input: nothing of it below a scrolled fold.
      const whole = state === "approval-requested" ? { class: "whole" } : {};
      box.append(el("p", { class: "muted" }, "Input"),
        el("pre", { id: inputId, "aria-label": `input of ${part.toolName}`, ...whole }, input.shown));
    }
    if (state === "output-available") {
      box.append(el("p", { class: "muted" }, "Output"),
        el("pre", { "aria-label": `output of ${part.toolName}` }, visible(json(part.output)).shown));
    } else if (state === "output-error") {
      box.append(el("p", { class: "error" }, part.errorText || "the call failed"));
    } else if (state === "output-denied" || (part.approval && part.approval.approved === false)) {
      box.append(el("p", { class: "error" }, "Denied: the tool did not run."));
    } else if (state === "approval-requested") {
      const actions = el("p", { class: "actions" });
      for (const [label, approved] of [["Approve", true], ["Deny", false]]) {
        const button = el("button", { type: "button", "data-decision": label.toLowerCase(),
          "aria-label": `${label.toLowerCase()} ${part.toolName}`, "aria-describedby": inputId }, label);
        button.addEventListener("click", () => answer(part, approved));
        // A key held down answers once: its repeats, landing on the next call's Approve as the
        // focus moves there, answer nothing.
        button.addEventListener("keydown", (event) => {
          if (event.repeat) event.preventDefault();
        });
        actions.append(button);
      }
      const length = [...json(part.input === undefined ? "" : part.input)].length;
      const warning = input.hidden
        ? ` Careful: ${input.hidden} of its characters are invisible or change the text's direction; each is shown as \\u{…}.`
        : "";
      box.append(el("p", { class: input.hidden ? "error" : "" },
        `This tool asks before it runs. Its input, above, has ${length} characters.${warning}`), actions);
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
        if (part.omitted) return el("p", { class: "muted" }, `image (${part.mediaType}), not kept in this tab`);
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
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) submit(event);
    });
    $("chat-bot").addEventListener("change", () => {
      if (busy) busy.abort(); // the answer so far is kept in its own bot's conversation
      sessionStorage.setItem(STORE_PREFIX + "bot", botId());
      announce("");
      $("chat-retry").hidden = true;
      load();
      setBusy(false);
    });
    $("chat-stop").addEventListener("click", () => busy && busy.abort());
    $("chat-retry").addEventListener("click", () => {
      // As the SDK's regenerate: a broken answer is dropped and asked again, unless it holds
      // approvals the server has not read yet (those go back with it).
      const last = messages[messages.length - 1];
      if (last && last.role === "assistant" && !answersToSend()) {
        messages.pop();
        save();
        render();
      }
      send();
    });
    $("chat-clear").addEventListener("click", () => {
      if (busy) busy.abort();
      $("chat-retry").hidden = true;
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
