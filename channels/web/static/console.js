// The taskhook console: lists the signed-in principal's sessions and tasks,
// follows one task's events live and answers open questions. Everything it
// shows comes from the API with the bearer token pasted at sign-in, which is
// kept in this tab's sessionStorage and sent only in the Authorization header.
"use strict";

(function () {
  const TOKEN_KEY = "taskhook.token";
  const REFRESH_MS = 3000;
  const MAX_TIMELINE = 200;

  const $ = (id) => document.getElementById(id);

  const state = {
    token: "",
    session: "",      // the session the task list is narrowed to
    task: "",         // the task followed live
    stream: null,     // AbortController of the live stream
    revision: 0,      // the revision of the task shown
    lastEventId: "",  // where the live stream resumes
    timer: 0,
    asked: new Map(), // the shown task's requests by id, answered ones included
  };

  // --- API -----------------------------------------------------------------

  class APIError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(method, path, body, extra) {
    const headers = Object.assign({ Authorization: "Bearer " + state.token, Accept: "application/json" }, extra);
    const init = { method, headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(path, init);
    const data = await resp.json().catch(() => null);
    if (!resp.ok) {
      const err = (data && data.error) || {};
      if (resp.status === 401) {
        signOut("The token was refused: " + (err.message || "unauthorized") + ".");
      }
      throw new APIError(resp.status, err.code || "", err.message || resp.statusText);
    }
    return data;
  }

  const query = (params) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      if (v) q.set(k, v);
    }
    const s = q.toString();
    return s ? "?" + s : "";
  };

  // --- small DOM helpers ----------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") node.textContent = v;
      else if (k === "class") node.className = v;
      else if (k.startsWith("data-")) node.setAttribute(k, v);
      else node[k] = v;
    }
    for (const c of children) {
      if (c) node.append(c);
    }
    return node;
  }

  const show = (node, on) => node.classList.toggle("hidden", !on);

  const badge = (status) => el("span", { class: "badge badge-" + status, text: status.replace("_", " ") });

  const taskName = (t) => t.label || t.kind || t.taskId;

  const when = (at) => {
    const d = new Date(at);
    return isNaN(d) ? "" : d.toLocaleTimeString();
  };

  // --- sign in --------------------------------------------------------------

  function subjectOf(token) {
    try {
      const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      return JSON.parse(atob(part)).sub || "";
    } catch (e) {
      return "";
    }
  }

  async function signIn(token) {
    state.token = token;
    try {
      await api("GET", "/v1/sessions?limit=1");
    } catch (e) {
      state.token = "";
      sessionStorage.removeItem(TOKEN_KEY);
      $("signin-error").textContent = e.status === 401 ? "The service refused this token." : "Could not reach the service: " + e.message;
      show($("signin-error"), true);
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, token);
    $("token").value = "";
    show($("signin-error"), false);
    show($("signin"), false);
    show($("app"), true);
    const who = subjectOf(token);
    $("who").textContent = who ? "signed in as " + who : "signed in";
    show($("who"), true);
    show($("signout"), true);
    refresh();
    state.timer = setInterval(() => {
      if (!document.hidden) refresh();
    }, REFRESH_MS);
  }

  function signOut(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = "";
    clearInterval(state.timer);
    stopStream();
    state.task = "";
    state.session = "";
    show($("app"), false);
    show($("who"), false);
    show($("signout"), false);
    show($("signin"), true);
    $("signin-error").textContent = message || "";
    show($("signin-error"), Boolean(message));
  }

  // --- lists ----------------------------------------------------------------

  let refreshing = false;

  async function refresh() {
    if (refreshing || !state.token) return;
    refreshing = true;
    try {
      const [sessions, tasks, waiting] = await Promise.all([
        api("GET", "/v1/sessions" + query({ status: $("session-status").value, limit: "50" })),
        api("GET", "/v1/tasks" + query({ sessionId: state.session, status: $("task-status").value, limit: "50" })),
        api("GET", "/v1/tasks" + query({ status: "input_required", limit: "50" })),
      ]);
      renderSessions(sessions.items);
      renderTasks(tasks.items);
      renderInbox(waiting.items);
    } catch (e) {
      // A failed refresh leaves the lists as they were; the next one retries.
    } finally {
      refreshing = false;
    }
  }

  // unchanged reports whether a list would show what it shows already, so a
  // refresh leaves its rows alone (a click is never split between an old row
  // and its replacement).
  function unchanged(list, items, fields) {
    const sig = JSON.stringify([state.session, state.task, items.map((it) => fields.map((f) => it[f]))]);
    if (list.dataset.sig === sig) return true;
    list.dataset.sig = sig;
    return false;
  }

  function renderSessions(items) {
    const list = $("sessions");
    if (unchanged(list, items, ["sessionId", "status", "createdAt"])) return;
    list.replaceChildren();
    if (!items.length) list.append(el("li", { class: "empty", text: "No sessions." }));
    for (const s of items) {
      const meta = s.metadata && Object.keys(s.metadata).length ? JSON.stringify(s.metadata) : "";
      const row = el("button", { type: "button", class: "row", "data-session-id": s.sessionId },
        el("span", { class: "name" }, document.createTextNode(s.sessionId),
          el("span", { class: "sub", text: meta || when(s.createdAt) })),
        badge(s.status));
      if (s.sessionId === state.session) row.setAttribute("aria-current", "true");
      row.addEventListener("click", () => {
        state.session = state.session === s.sessionId ? "" : s.sessionId;
        show($("session-clear"), Boolean(state.session));
        refresh();
      });
      list.append(el("li", {}, row));
    }
  }

  function renderTasks(items) {
    const list = $("tasks");
    if (unchanged(list, items, ["taskId", "status", "revision", "label", "kind", "statusMessage"])) return;
    list.replaceChildren();
    if (!items.length) list.append(el("li", { class: "empty", text: "No tasks." }));
    for (const t of items) {
      const row = el("button", { type: "button", class: "row", "data-task-id": t.taskId },
        el("span", { class: "name" }, document.createTextNode(taskName(t)),
          el("span", { class: "sub", text: t.statusMessage || t.taskId })),
        badge(t.status));
      if (t.taskId === state.task) row.setAttribute("aria-current", "true");
      row.addEventListener("click", () => openTask(t.taskId));
      list.append(el("li", {}, row));
    }
  }

  // renderInbox shows a card per open question of every waiting task,
  // keeping the cards already shown (and whatever was typed into them).
  function renderInbox(items) {
    const box = $("inbox");
    const wanted = new Map();
    for (const t of items) {
      for (const r of t.inputRequests || []) {
        if (r.kind === "ask") wanted.set(t.taskId + "\n" + r.requestId, [t, r]);
      }
    }
    for (const card of Array.from(box.children)) {
      if (!wanted.has(card.dataset.key)) card.remove();
    }
    const have = new Set(Array.from(box.children, (c) => c.dataset.key));
    for (const [key, [t, r]] of wanted) {
      if (!have.has(key)) box.append(questionCard(t, r, true));
    }
    show($("inbox-empty"), wanted.size === 0);
  }

  // --- answering ------------------------------------------------------------

  // questionCard is an open request as a card: a button per option and a
  // text box when the request takes text. Answers go to the task's input
  // route as the signed-in principal, saying it is the console, so the task
  // records the answer as given here (via "console").
  function questionCard(task, req, withTask) {
    const card = el("article", {
      class: "card", "data-key": task.taskId + "\n" + req.requestId,
      "data-task-id": task.taskId, "data-request-id": req.requestId,
    });
    const promptId = "q-" + (withTask ? "i-" : "d-") + task.taskId + "-" + req.requestId;
    if (withTask) {
      const open = el("button", { type: "button", class: "btn btn-link btn-small", text: taskName(task) });
      open.addEventListener("click", () => openTask(task.taskId));
      card.append(el("p", { class: "task-name" }, open));
    }
    card.append(el("p", { class: "prompt", id: promptId, text: req.prompt }));
    const error = el("p", { class: "card-error hidden", role: "alert" });

    const send = async (answer, buttons) => {
      buttons.forEach((b) => { b.disabled = true; });
      show(error, false);
      try {
        await api("POST", "/v1/tasks/" + encodeURIComponent(task.taskId) + "/input",
          { responses: [Object.assign({ requestId: req.requestId }, answer)] }, { "X-Taskhook-Via": "console" });
        card.replaceChildren(el("p", { class: "prompt", text: req.prompt }),
          el("p", { class: "answered", text: "Answered." }));
        refresh();
      } catch (e) {
        error.textContent = e.code === "input_conflict" || e.code === "not_input_required" || e.code === "unknown_request"
          ? "This question was answered already." : "Not answered: " + e.message;
        show(error, true);
        buttons.forEach((b) => { b.disabled = false; });
      }
    };

    const options = req.options || [];
    if (options.length) {
      const group = el("div", { class: "options", role: "group" });
      group.setAttribute("aria-labelledby", promptId);
      const buttons = [];
      for (const o of options) {
        const cls = o.style === "primary" || o.style === "danger" ? "btn btn-" + o.style : "btn";
        const b = el("button", { type: "button", class: cls, "data-option-id": o.id },
          el("span", { class: "btn-label", text: o.label }),
          o.description ? el("span", { class: "btn-desc", text: o.description }) : null);
        b.addEventListener("click", () => send({ optionId: o.id }, buttons));
        buttons.push(b);
        group.append(b);
      }
      card.append(group);
    }
    if (req.allowFreeform || req.display === "text") {
      const textId = promptId + "-text";
      const area = el("textarea", { id: textId, rows: 2, required: true });
      const submit = el("button", { type: "submit", class: "btn btn-primary btn-small", text: "Send" });
      const form = el("form", { class: "freeform" },
        el("label", { htmlFor: textId, text: options.length ? "Or in your own words" : "Your answer" }), area, submit);
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        if (area.value.trim()) send({ text: area.value }, [submit]);
      });
      card.append(form);
    }
    card.append(error);
    return card;
  }

  // --- one task, live -------------------------------------------------------

  async function openTask(id) {
    stopStream();
    state.task = id;
    state.revision = 0;
    state.lastEventId = "";
    state.asked = new Map();
    $("timeline").replaceChildren();
    $("detail-answers").replaceChildren();
    show($("detail-empty"), false);
    show($("detail-body"), true);
    for (const row of document.querySelectorAll("#tasks .row")) {
      if (row.dataset.taskId === id) row.setAttribute("aria-current", "true");
      else row.removeAttribute("aria-current");
    }
    try {
      renderTask(await api("GET", "/v1/tasks/" + encodeURIComponent(id)));
    } catch (e) {
      $("detail-title").textContent = "Task not found";
      return;
    }
    follow(id);
  }

  // renderTask shows a task snapshot, unless one as new or newer is shown
  // already: a stream that starts replays the task's older snapshots.
  function renderTask(t) {
    if (t.taskId !== state.task || t.revision < state.revision) return;
    state.revision = t.revision;
    $("detail-title").textContent = taskName(t);
    const status = $("detail-status");
    status.className = "badge badge-" + t.status;
    status.textContent = t.status.replace("_", " ");
    status.dataset.status = t.status;
    $("detail-meta").textContent = t.taskId + " · revision " + t.revision + (t.kind ? " · " + t.kind : "");
    const pct = t.progress && typeof t.progress.percent === "number" ? t.progress.percent : null;
    $("detail-message").textContent = t.statusMessage || "";
    show($("detail-progress"), Boolean(t.statusMessage) || pct !== null);
    show($("detail-bar"), pct !== null);
    if (pct !== null) $("detail-bar").value = Math.max(0, Math.min(100, pct));

    const cards = $("detail-cards");
    const open = (t.inputRequests || []).filter((r) => r.kind === "ask");
    const keys = new Set(open.map((r) => t.taskId + "\n" + r.requestId));
    for (const card of Array.from(cards.children)) {
      if (!keys.has(card.dataset.key)) card.remove();
    }
    const have = new Set(Array.from(cards.children, (c) => c.dataset.key));
    for (const r of open) {
      if (!have.has(t.taskId + "\n" + r.requestId)) cards.append(questionCard(t, r, false));
    }
    for (const r of t.inputRequests || []) state.asked.set(r.requestId, r);
    renderAnswers(t.inputResponses || []);
  }

  // renderAnswers lists each answered question with who answered it,
  // through what and when, as the task records it.
  const channels = { api: "API", console: "console", answer_link: "answer link", slack: "Slack", mcp: "MCP", a2a: "A2A", sign_in: "sign-in" };

  function renderAnswers(answers) {
    const list = $("detail-answers");
    list.replaceChildren();
    for (const a of answers) {
      const req = state.asked.get(a.requestId);
      const option = req && (req.options || []).find((o) => o.id === a.optionId);
      let said = [option ? option.label : a.optionId, a.text].filter(Boolean).join(": ");
      if (a.action === "decline") said = "declined";
      if (a.action === "cancel") said = "dismissed";
      let by = a.answeredBy === "answer-link" ? "through an answer link" : (a.answeredBy ? "by " + a.answeredBy : "");
      if (a.slackUserId) by += " (Slack " + a.slackUserId + ")";
      if (a.via && a.via !== "answer_link") by += " via " + (channels[a.via] || a.via);
      const at = a.answeredAt ? new Date(a.answeredAt) : null;
      if (at && !isNaN(at)) by += " at " + at.toLocaleString();
      list.append(el("li", { "data-request-id": a.requestId },
        el("span", { class: "a-prompt", text: (req && req.prompt ? req.prompt : a.requestId) + " → " + said }),
        el("span", { class: "a-by", text: by.trim(), title: a.answeredAt || "" })));
    }
    show(list, answers.length > 0);
  }

  function describe(ev) {
    const d = ev.data || {};
    switch (ev.type) {
      case "task.message": return d.text || "";
      case "task.progress": return (d.task && d.task.statusMessage) || "";
      case "task.status": return d.task ? "status: " + d.task.status : "";
      case "task.terminal": return d.task ? d.task.status + (d.task.error ? ": " + d.task.error.message : "") : "";
      case "input.requested": return (d.requests || []).map((r) => r.prompt).join("\n");
      case "input.resolved": return (d.responses || []).map((r) => r.optionId || r.text).join(", ");
      default: return "";
    }
  }

  function addEvent(ev) {
    const line = el("li", { class: "ev-" + ev.type.replace(".", "-"), "data-type": ev.type },
      el("span", { class: "t-type", text: ev.type }),
      el("span", { class: "t-at", text: when(ev.at) }));
    const text = describe(ev);
    if (text) line.append(el("p", { class: "t-text", text }));
    const list = $("timeline");
    list.prepend(line);
    while (list.children.length > MAX_TIMELINE) list.lastChild.remove();
  }

  function stopStream() {
    if (state.stream) state.stream.abort();
    state.stream = null;
  }

  // follow reads the task's events as server-sent events through fetch (an
  // EventSource cannot send the Authorization header) and resumes after the
  // last event seen (Last-Event-ID) when the stream ends or fails.
  async function follow(id) {
    const ctl = new AbortController();
    state.stream = ctl;
    let pause = 500;
    const live = $("detail-live");
    while (!ctl.signal.aborted && state.task === id) {
      try {
        const headers = { Authorization: "Bearer " + state.token, Accept: "text/event-stream" };
        if (state.lastEventId) headers["Last-Event-ID"] = state.lastEventId;
        const resp = await fetch("/v1/tasks/" + encodeURIComponent(id) + "/events", {
          headers, signal: ctl.signal, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
        });
        if (resp.status === 401) {
          signOut("The token was refused.");
          return;
        }
        if (!resp.ok || !resp.body) throw new Error("status " + resp.status);
        live.textContent = "live";
        live.classList.add("live-on");
        pause = 500;
        await readEvents(resp.body, ctl.signal);
      } catch (e) {
        if (ctl.signal.aborted) return;
      }
      live.textContent = "reconnecting…";
      live.classList.remove("live-on");
      await new Promise((done) => setTimeout(done, pause));
      pause = Math.min(pause * 2, 10000);
    }
  }

  async function readEvents(body, signal) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || signal.aborted) return;
        buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          handleBlock(block);
        }
      }
    } finally {
      reader.releaseLock();
    }
  }

  function handleBlock(block) {
    let id = "";
    const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "id") id = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return;
    let ev;
    try {
      ev = JSON.parse(data.join("\n"));
    } catch (e) {
      return;
    }
    if (id) state.lastEventId = id;
    if (ev.type === "input.requested" && ev.taskId === state.task) {
      for (const r of (ev.data && ev.data.requests) || []) state.asked.set(r.requestId, r);
    }
    addEvent(ev);
    if (ev.data && ev.data.task) {
      renderTask(ev.data.task);
    } else if (ev.type === "input.resolved" && ev.taskId === state.task) {
      // An answer that leaves other questions open carries no snapshot:
      // read the task again.
      api("GET", "/v1/tasks/" + encodeURIComponent(ev.taskId)).then(renderTask, () => {});
    }
  }

  // --- wiring ---------------------------------------------------------------

  document.addEventListener("DOMContentLoaded", () => {
    $("signin-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const token = $("token").value.trim().replace(/^Bearer\s+/i, "");
      if (token) signIn(token);
    });
    $("signout").addEventListener("click", () => signOut(""));
    $("session-status").addEventListener("change", refresh);
    $("task-status").addEventListener("change", refresh);
    $("session-clear").addEventListener("click", () => {
      state.session = "";
      show($("session-clear"), false);
      refresh();
    });
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) signIn(saved);
  });
})();
