// The taskhook console: the signed-in principal's open questions, tasks and
// sessions, and one task or session at a time as a page of its own
// (#/tasks/{id}, #/sessions/{id}) that follows the task live. Everything it
// shows comes from the API with the bearer token pasted at sign-in, which is
// kept in this tab's sessionStorage and sent only in the Authorization header.
"use strict";

(function () {
  const TOKEN_KEY = "taskhook.token";
  const REFRESH_MS = 3000;
  const PAGE = 50;
  const INBOX_LIMIT = 100;
  const MAX_TIMELINE = 300;
  const FOLD_LINES = 14;     // longer JSON starts folded
  const PREVIEW_LINES = 6;   // lines of folded JSON shown
  const NARROW = "(max-width: 52rem)";

  const $ = (id) => document.getElementById(id);

  const state = {
    token: "",
    subject: "",        // the signed-in token's sub
    issuer: "",         // and its iss
    timer: 0,
    route: { view: "home", id: "" },
    tasks: newList("taskId"),
    sessions: newList("sessionId"),
    inbox: { items: [], more: false, error: null, loaded: false },
    task: null,         // the task shown and followed live (see openTask)
    session: null,      // the session shown (see openSession)
    labels: new Map(),  // session id -> its readable label
    answeredHere: new Map(), // taskId \n requestId -> who answered it from this tab
    fromList: false,    // the view shown was opened from this page's lists
    listScroll: 0,      // where the lists were scrolled, to come back to
  };

  function newList(idKey) {
    return { idKey, key: "", items: [], cursor: "", beyond: false, loaded: false, error: null };
  }

  // --- API -----------------------------------------------------------------

  class APIError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(method, path, body, extraHeaders) {
    const headers = Object.assign({ Authorization: "Bearer " + state.token, Accept: "application/json" }, extraHeaders);
    const init = { method, headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      throw new APIError(0, "unreachable", "the service could not be reached");
    }
    const data = await resp.json().catch(() => null);
    if (!resp.ok) {
      const err = (data && data.error) || {};
      const e = new APIError(resp.status, err.code || "http_" + resp.status, err.message || resp.statusText || "request failed");
      if (resp.status === 401) refused(e);
      throw e;
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

  const enc = encodeURIComponent;

  // why is a failed call in words: the code and message the service gave.
  const why = (e) => (e.status ? e.status + " " : "") + (e.code || "error") + ": " + e.message;

  // --- small DOM helpers ----------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") node.textContent = v;
      else if (k === "class") node.className = v;
      else if (k.includes("-")) node.setAttribute(k, v);
      else node[k] = v;
    }
    for (const c of children) {
      if (c !== null && c !== undefined && c !== false && c !== "") node.append(c);
    }
    return node;
  }

  const show = (node, on) => node.classList.toggle("hidden", !on);

  // empty clears a node, and what it remembers of what it showed.
  function empty(node) {
    node.replaceChildren();
    delete node.dataset.sig;
  }

  const statusWords = (s) => String(s || "").replace("_", " ");

  function badge(status) {
    return el("span", { class: "badge badge-" + status, text: statusWords(status) });
  }

  const taskName = (t) => t.label || t.kind || "Task " + shortId(t.taskId);

  const terminal = (status) => status === "completed" || status === "failed" || status === "cancelled";

  const shortId = (id) => {
    const cut = id.indexOf("_");
    return id.length > cut + 9 ? id.slice(0, cut + 7) + "…" + id.slice(-4) : id;
  };

  // sessionLabel is how a session is named: its metadata's label (or name
  // or title) when it gives one.
  function sessionLabel(s) {
    const m = s && s.metadata && typeof s.metadata === "object" ? s.metadata : {};
    for (const k of ["label", "name", "title"]) {
      if (typeof m[k] === "string" && m[k].trim()) return m[k].trim();
    }
    return "";
  }

  function labelOfSession(id) {
    return state.labels.get(id) || "Session " + shortId(id);
  }

  // failure shows a failed call in slot: what failed, the code and message
  // the service gave, and a Retry button.
  function failure(slot, what, err, retry) {
    const again = el("button", { type: "button", class: "btn btn-small retry", text: "Retry" });
    again.addEventListener("click", () => {
      again.disabled = true;
      again.textContent = "Retrying…";
      retry();
    });
    slot.replaceChildren(el("div", { class: "failure", role: "alert", "data-code": err.code },
      el("p", { class: "failure-what", text: what }),
      el("p", { class: "failure-why" }, el("code", { text: err.code }), " " + err.message +
        (err.status ? " (HTTP " + err.status + ")" : "")),
      again));
    show(slot, true);
  }

  function clearFailure(slot) {
    if (!slot.classList.contains("hidden")) {
      slot.replaceChildren();
      show(slot, false);
    }
  }

  // --- times ----------------------------------------------------------------

  function duration(ms) {
    ms = Math.max(0, ms);
    if (ms < 1000) return Math.round(ms) + " ms";
    const s = Math.floor(ms / 1000);
    if (s < 60) return s + " s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + " min" + (s % 60 ? " " + (s % 60) + " s" : "");
    const h = Math.floor(m / 60);
    if (h < 48) return h + " h" + (m % 60 ? " " + (m % 60) + " min" : "");
    const d = Math.floor(h / 24);
    return d + " days" + (h % 24 ? " " + (h % 24) + " h" : "");
  }

  function ago(d) {
    const ms = Date.now() - d.getTime();
    if (Math.abs(ms) < 5000) return "just now";
    const words = duration(Math.abs(ms)).replace(/ \d+ (s|min|h)$/, "");
    return ms > 0 ? words + " ago" : "in " + words;
  }

  function absolute(d) {
    const today = new Date().toDateString() === d.toDateString();
    return today ? d.toLocaleTimeString() : d.toLocaleString();
  }

  const dateOf = (at) => {
    const d = new Date(at);
    return at && !isNaN(d) ? d : null;
  };

  function formatTime(d, mode) {
    if (mode === "ago") return ago(d);
    if (mode === "at") return absolute(d);
    return absolute(d) + " (" + ago(d) + ")";
  }

  // timeEl is a <time> that keeps its relative part current (tick): mode
  // "ago" (3 min ago), "at" (14:02:11) or "both".
  function timeEl(at, mode) {
    const d = dateOf(at);
    if (!d) return document.createTextNode("");
    return el("time", { dateTime: d.toISOString(), title: d.toLocaleString(), "data-at": at, "data-mode": mode || "both",
      text: formatTime(d, mode || "both") });
  }

  function tick() {
    for (const t of document.querySelectorAll("time[data-at]")) {
      const d = dateOf(t.dataset.at);
      if (d) t.textContent = formatTime(d, t.dataset.mode);
    }
    for (const n of document.querySelectorAll("[data-since]")) n.textContent = duration(Date.now() - dateOf(n.dataset.since));
    if (state.task && state.task.snapshot && !terminal(state.task.snapshot.status)) renderDurations(state.task);
  }

  // --- JSON -----------------------------------------------------------------

  const tokenRE = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;

  // highlight writes JSON text into pre, its keys, strings, numbers and
  // literals in spans of their own.
  function highlight(pre, text) {
    let last = 0;
    for (const m of text.matchAll(tokenRE)) {
      if (m.index > last) pre.append(text.slice(last, m.index));
      const cls = m[1] ? (m[2] ? "j-key" : "j-str") : m[3] ? "j-lit" : "j-num";
      pre.append(el("span", { class: cls, text: m[1] || m[3] || m[4] }));
      if (m[2]) pre.append(m[2]);
      last = m.index + m[0].length;
    }
    pre.append(text.slice(last));
  }

  // jsonView shows a JSON value pretty-printed, with a copy button, folded
  // to its first lines when it is long.
  function jsonView(value, name) {
    const text = JSON.stringify(value, null, 2);
    const lines = text.split("\n");
    const full = el("pre", { class: "json" });
    highlight(full, text);
    const box = el("div", { class: "json-view", "data-name": name },
      el("div", { class: "json-tools" }, copyButton(text, "Copy the " + name + " as JSON")));
    if (lines.length <= FOLD_LINES) {
      box.append(full);
      return box;
    }
    const preview = el("pre", { class: "json json-preview" });
    highlight(preview, lines.slice(0, PREVIEW_LINES).join("\n") + "\n…");
    const fold = el("details", { class: "json-fold" },
      el("summary", { text: "Show all " + lines.length + " lines" }), full);
    fold.addEventListener("toggle", () => {
      show(preview, !fold.open);
      fold.querySelector("summary").textContent = fold.open ? "Show less" : "Show all " + lines.length + " lines";
    });
    box.append(preview, fold);
    return box;
  }

  function copyText(text) {
    const area = el("textarea", { class: "copy-buffer", value: text, readOnly: true });
    document.body.append(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch (e) {
      ok = false;
    }
    area.remove();
    return ok;
  }

  function copyButton(text, label, word) {
    const b = el("button", { type: "button", class: "btn btn-small btn-copy", text: word || "Copy", title: label, "aria-label": label });
    b.addEventListener("click", async () => {
      let ok = false;
      try {
        await navigator.clipboard.writeText(text);
        ok = true;
      } catch (e) {
        ok = copyText(text);
      }
      b.textContent = ok ? "Copied" : "Copy failed";
      setTimeout(() => { b.textContent = word || "Copy"; }, 1500);
    });
    return b;
  }

  function oneLine(value, max) {
    const s = typeof value === "string" ? value : JSON.stringify(value);
    return s.length > max ? s.slice(0, max - 1) + "…" : s;
  }

  // --- sign in --------------------------------------------------------------

  // claimsOf reads a JWT's claims for display only: the service, not the
  // console, checks the token.
  function claimsOf(token) {
    try {
      const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      const claims = JSON.parse(atob(part));
      return { sub: typeof claims.sub === "string" ? claims.sub : "", iss: typeof claims.iss === "string" ? claims.iss : "" };
    } catch (e) {
      return { sub: "", iss: "" };
    }
  }

  // isMe reports whether a principal id is the signed-in one's: its sub, or
  // its sub namespaced by its issuer as a service with an issuer names it.
  const isMe = (id) => Boolean(id && state.subject) && (id === state.subject || id === state.issuer + "#" + state.subject);

  async function signIn(token) {
    state.token = token;
    try {
      await api("GET", "/v1/sessions?limit=1");
    } catch (e) {
      if (e.status === 401 || e.status === 403) {
        state.token = "";
        sessionStorage.removeItem(TOKEN_KEY);
        showSignin("The service refused this token (" + why(e) + ").");
        return;
      }
      // Any other failure (the store down, say) is the panels' to show,
      // each with a Retry: the token itself was not refused.
    }
    sessionStorage.setItem(TOKEN_KEY, token);
    const claims = claimsOf(token);
    state.subject = claims.sub;
    state.issuer = claims.iss;
    $("token").value = "";
    show($("signin-error"), false);
    show($("signin"), false);
    show($("app"), true);
    $("who").replaceChildren(el("span", { class: "who-pre", text: state.subject ? "signed in as " : "signed in" }), state.subject);
    show($("who"), true);
    show($("signout"), true);
    clearInterval(state.timer);
    state.timer = setInterval(() => {
      if (!document.hidden) {
        refresh();
        tick();
      }
    }, REFRESH_MS);
    route();
    refresh();
  }

  // refused is a call answered 401: the token expired or was revoked. Back
  // to the sign-in, saying so; the address stays, so signing in again
  // returns to the same view.
  function refused(e) {
    if (!state.token) return;
    signOut("Your sign-in ended: the service refused the token (" + why(e) + "). Paste a new token to go on.");
  }

  function showSignin(message) {
    show($("app"), false);
    show($("who"), false);
    show($("signout"), false);
    show($("signin"), true);
    $("signin-error").textContent = message || "";
    show($("signin-error"), Boolean(message));
  }

  function signOut(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = "";
    state.subject = "";
    state.issuer = "";
    clearInterval(state.timer);
    closeTask();
    closeSession();
    state.tasks = newList("taskId");
    state.sessions = newList("sessionId");
    state.inbox = { items: [], more: false, error: null, loaded: false };
    state.answeredHere.clear();
    for (const id of ["inbox", "tasks", "sessions"]) empty($(id));
    for (const id of ["inbox-error", "tasks-error", "sessions-error", "detail-error"]) clearFailure($(id));
    showSignin(message);
  }

  // --- routes ---------------------------------------------------------------

  function parseRoute() {
    const parts = location.hash.replace(/^#\/?/, "").split("/");
    let id = "";
    try {
      id = decodeURIComponent(parts.slice(1).join("/"));
    } catch (e) {
      id = "";
    }
    if (parts[0] === "tasks" && id) return { view: "task", id };
    if (parts[0] === "sessions" && id) return { view: "session", id };
    return { view: "home", id: "" };
  }

  const narrow = () => window.matchMedia(NARROW).matches;

  // route shows what the address names: a task, a session, or the lists
  // alone. On a phone a task or session is a screen of its own with a way
  // back; on a laptop it is brought into view beside the lists.
  function route() {
    if (!state.token) return;
    const r = parseRoute();
    const was = state.route;
    if (was.view === "home" && r.view !== "home") state.listScroll = window.scrollY;
    state.route = r;
    document.body.classList.toggle("view-detail", r.view !== "home");
    clearFailure($("detail-error"));
    if (r.view === "task") {
      closeSession();
      openTask(r.id);
    } else if (r.view === "session") {
      closeTask();
      openSession(r.id);
    } else {
      closeTask();
      closeSession();
      state.fromList = false;
      document.title = "taskhook console";
    }
    show($("detail-empty"), r.view === "home");
    markCurrent();
    if (r.view === "home") {
      if (narrow() && was.view !== "home") window.scrollTo(0, state.listScroll);
    } else if (was.view !== r.view || was.id !== r.id) {
      bringIntoView();
    }
  }

  function bringIntoView() {
    const detail = $("detail");
    if (narrow()) {
      window.scrollTo(0, 0);
      return;
    }
    const box = detail.getBoundingClientRect();
    if (box.top < 0 || box.top > window.innerHeight / 3) detail.scrollIntoView({ block: "start" });
  }

  function goBack() {
    if (state.fromList) {
      state.fromList = false;
      history.back();
    } else {
      location.hash = "#/";
    }
  }

  function markCurrent() {
    const r = state.route;
    for (const row of document.querySelectorAll(".list .row")) {
      const current = (r.view === "task" && row.dataset.taskId === r.id) ||
        (r.view === "session" && row.dataset.sessionId === r.id);
      if (current) row.setAttribute("aria-current", "page");
      else row.removeAttribute("aria-current");
    }
  }

  // --- lists ----------------------------------------------------------------

  let refreshing = false;

  async function refresh() {
    if (refreshing || !state.token) return;
    refreshing = true;
    try {
      const work = [loadInbox(), loadList(state.tasks, false), loadList(state.sessions, false)];
      if (state.session) work.push(loadSessionTasks(state.session, false));
      await Promise.all(work);
    } finally {
      refreshing = false;
    }
  }

  // The filters the API takes; search and the time window are applied here,
  // to what has been loaded (the API has no such filters).
  function listQuery(list) {
    if (list === state.tasks) {
      return { path: "/v1/tasks", params: { status: $("task-status").value, kind: $("task-kind").value.trim() } };
    }
    return { path: "/v1/sessions", params: { status: $("session-status").value } };
  }

  // mergeFirst puts a fresh first page in front of what was loaded beyond
  // it: the lists are newest first, so the items older than the page's
  // last one are kept as they were.
  function mergeFirst(list, page) {
    if (!page.nextCursor || !page.items.length) {
      list.beyond = false;
      return page.items;
    }
    const seen = new Set(page.items.map((it) => it[list.idKey]));
    const last = page.items[page.items.length - 1].createdAt;
    const rest = list.items.filter((it) => !seen.has(it[list.idKey]) && it.createdAt < last);
    if (!rest.length) list.beyond = false;
    return page.items.concat(rest);
  }

  // loadPage reads a page of a list into it: the first page again (merged
  // with what was loaded beyond it) or, with more, the page after the last.
  // It reports whether the list is still the one asked for (still) and
  // keeps a failure in list.error.
  async function loadPage(list, path, params, more, still) {
    try {
      const page = await api("GET", path + query(Object.assign({ limit: String(PAGE) }, params, { cursor: more ? list.cursor : "" })));
      if (!still()) return false;
      if (more) {
        const seen = new Set(list.items.map((it) => it[list.idKey]));
        list.items = list.items.concat(page.items.filter((it) => !seen.has(it[list.idKey])));
        list.beyond = true;
        list.cursor = page.nextCursor || "";
      } else {
        list.items = mergeFirst(list, page);
        if (!list.beyond) list.cursor = page.nextCursor || "";
      }
      list.loaded = true;
      list.error = null;
    } catch (e) {
      if (!still()) return false;
      list.error = e;
    }
    return true;
  }

  async function loadList(list, more) {
    const q = listQuery(list);
    const key = JSON.stringify(q);
    if (list.key !== key) {
      Object.assign(list, newList(list.idKey), { key });
      more = false;
    }
    if (!await loadPage(list, q.path, q.params, more, () => list.key === key && Boolean(state.token))) return;
    if (list === state.tasks) renderTasks();
    else renderSessions();
  }

  function searchText() {
    return $("search").value.trim().toLowerCase();
  }

  function matches(fields, q) {
    return !q || fields.some((f) => typeof f === "string" && f.toLowerCase().includes(q));
  }

  // unchanged reports whether a list would show what it shows already, so a
  // refresh leaves its rows alone (a click is never split between an old row
  // and its replacement).
  function unchanged(node, sig) {
    if (node.dataset.sig === sig) return true;
    node.dataset.sig = sig;
    return false;
  }

  // outcomeLine is a task's state in one line: how it ended, or its latest
  // progress while it runs.
  function outcomeLine(t) {
    switch (t.status) {
      case "completed":
        return t.result === undefined ? "Completed" : "Result: " + oneLine(t.result, 90);
      case "failed":
        return "Failed: " + (t.error && t.error.message ? t.error.message : "no reason given");
      case "cancelled":
        return "Cancelled" + (t.cancelReason ? ": " + t.cancelReason : "");
      case "input_required": {
        const reqs = t.inputRequests || [];
        if (reqs.some((r) => r.kind === "authorization")) return "Waiting for a sign-in";
        return reqs.length ? "Waiting for an answer: " + reqs[0].prompt : t.statusMessage || "Waiting for input";
      }
      default:
        return t.statusMessage || "Working";
    }
  }

  function taskRow(t) {
    const title = el("span", { class: "name", text: taskName(t) });
    if (t.label && t.kind) title.append(el("span", { class: "tag", text: t.kind }));
    return listRow({ href: "#/tasks/" + enc(t.taskId), "data-task-id": t.taskId, "data-status": t.status, title: t.taskId },
      title, el("span", { class: "sub", text: outcomeLine(t) }), t);
  }

  // listRow is one row of a list: a link to the item's own view with its
  // name, a line under it, its status and its age.
  function listRow(attrs, name, sub, item) {
    const row = el("a", Object.assign({ class: "row" }, attrs), el("span", { class: "row-main" }, name, sub),
      el("span", { class: "row-side" }, badge(item.status), timeEl(item.createdAt, "ago")));
    row.addEventListener("click", () => { state.fromList = true; });
    return el("li", {}, row);
  }

  function renderTasks() {
    const list = state.tasks;
    const q = searchText();
    const windowMs = Number($("task-time").value) || 0;
    const since = windowMs ? Date.now() - windowMs : 0;
    const items = list.items.filter((t) => matches([t.taskId, t.label, t.kind], q) &&
      (!since || new Date(t.createdAt).getTime() >= since));
    const kinds = [...new Set(list.items.map((t) => t.kind).filter(Boolean))].sort();
    renderKinds(kinds);

    // A list older than the window has nothing more to offer.
    const oldest = list.items.length ? new Date(list.items[list.items.length - 1].createdAt).getTime() : Infinity;
    const more = Boolean(list.cursor) && (!since || oldest >= since);

    const clientSide = [];
    if (q) clientSide.push("search");
    if (since) clientSide.push("the time filter");
    const note = $("tasks-note");
    const words = clientSide.join(" and ");
    note.textContent = clientSide.length
      ? words[0].toUpperCase() + words.slice(1) + (clientSide.length > 1 ? " look" : " looks") + " at the " + list.items.length +
        " tasks loaded (the API filters by status, kind and session only)" + (more ? "; load more to look further." : ".")
      : "";
    show(note, clientSide.length > 0 && list.loaded);
    drawList("tasks", list, items, { what: "the tasks", more, retry: () => loadList(list, false), row: taskRow,
      fields: ["taskId", "revision", "status", "statusMessage", "label", "kind"], none: "No task matches.", empty: "No tasks." });
  }

  // drawList draws a list's rows (unless it shows them already), or says
  // it is empty or loading, its failure with a Retry, and its Load more:
  // the elements #{id}, #{id}-error and #{id}-more.
  function drawList(id, list, items, o) {
    const err = $(id + "-error");
    if (list.error) failure(err, "Could not load " + o.what, list.error, o.retry);
    else clearFailure(err);
    show($(id + "-more"), o.more && !list.error);
    const node = $(id);
    const sig = JSON.stringify([state.route, list.loaded, Boolean(list.error), items.map((it) => o.fields.map((f) => it[f]))]);
    if (unchanged(node, sig)) return;
    node.replaceChildren();
    if (list.loaded && !items.length) {
      node.append(el("li", { class: "empty", text: list.items.length ? o.none : o.empty }));
    } else if (!list.loaded && !list.error) {
      node.append(el("li", { class: "empty", text: "Loading…" }));
    }
    for (const it of items) node.append(o.row(it));
    markCurrent();
  }

  function renderKinds(kinds) {
    const dl = $("task-kinds");
    if (unchanged(dl, JSON.stringify(kinds))) return;
    dl.replaceChildren(...kinds.map((k) => el("option", { value: k })));
  }

  function sessionRow(s) {
    const label = sessionLabel(s);
    if (label) state.labels.set(s.sessionId, label);
    return listRow({ href: "#/sessions/" + enc(s.sessionId), "data-session-id": s.sessionId, title: s.sessionId },
      el("span", { class: "name", text: label || "Session " + shortId(s.sessionId) }),
      label ? el("span", { class: "sub mono", text: shortId(s.sessionId) }) : null, s);
  }

  function renderSessions() {
    const list = state.sessions;
    const q = searchText();
    const items = list.items.filter((s) => matches([s.sessionId, sessionLabel(s)], q));
    const note = $("sessions-note");
    note.textContent = q ? "Search looks at the " + list.items.length + " sessions loaded." : "";
    show(note, Boolean(q) && list.loaded);
    drawList("sessions", list, items, { what: "the sessions", more: Boolean(list.cursor), retry: () => loadList(list, false),
      row: sessionRow, fields: ["sessionId", "status", "lastUpdatedAt"], none: "No session matches.", empty: "No sessions." });
  }

  // --- waiting for you ------------------------------------------------------

  async function loadInbox() {
    try {
      const page = await api("GET", "/v1/tasks" + query({ status: "input_required", limit: String(INBOX_LIMIT) }));
      if (!state.token) return;
      state.inbox = { items: page.items, more: Boolean(page.nextCursor), error: null, loaded: true };
    } catch (e) {
      if (!state.token) return;
      state.inbox.error = e;
    }
    renderInbox();
  }

  const openRequests = (t) => (t.inputRequests || []).filter((r) => r.kind === "ask" || r.kind === "authorization");

  // renderInbox shows a card per open question or sign-in of every waiting
  // task, keeping the cards already shown (and whatever was typed into
  // them). A failed read says so, with a Retry, and never "no questions".
  function renderInbox() {
    const inbox = state.inbox;
    const err = $("inbox-error");
    if (inbox.error) {
      failure(err, inbox.loaded ? "Could not refresh the questions waiting for you" : "Could not load the questions waiting for you",
        inbox.error, loadInbox);
    } else {
      clearFailure(err);
    }
    const wanted = new Map();
    for (const t of inbox.items) {
      for (const r of openRequests(t)) wanted.set(t.taskId + "\n" + r.requestId, [t, r]);
    }
    keepCards($("inbox"), wanted, true);
    const count = $("inbox-count");
    count.textContent = wanted.size + (inbox.more ? "+" : "");
    show(count, wanted.size > 0);
    show($("inbox-empty"), inbox.loaded && !inbox.error && wanted.size === 0);
    show($("inbox-loading"), !inbox.loaded && !inbox.error);
  }

  function keepCards(box, wanted, withTask) {
    for (const card of Array.from(box.children)) {
      if (!wanted.has(card.dataset.key)) card.remove();
    }
    const have = new Set(Array.from(box.children, (c) => c.dataset.key));
    for (const [key, [t, r]] of wanted) {
      if (!have.has(key)) box.append(r.kind === "authorization" ? signinCard(t, r, withTask) : questionCard(t, r, withTask));
    }
  }

  function cardShell(task, req, withTask, kind) {
    const card = el("article", {
      class: "card card-" + kind, "data-key": task.taskId + "\n" + req.requestId,
      "data-task-id": task.taskId, "data-request-id": req.requestId, "data-kind": req.kind,
    });
    if (withTask) {
      card.append(el("p", { class: "task-name" },
        el("a", { href: "#/tasks/" + enc(task.taskId), text: taskName(task) }),
        task.label && task.kind ? el("span", { class: "tag", text: task.kind }) : null));
    }
    return card;
  }

  // safeLink is url when it is an http(s) address, else "" (a link is only
  // ever followed to a web page).
  function safeLink(url) {
    try {
      const u = new URL(url, location.href);
      return u.protocol === "https:" || u.protocol === "http:" ? u.href : "";
    } catch (e) {
      return "";
    }
  }

  // signinCard is a sign-in the task waits for: a link to the provider's
  // page, opened in a new tab that learns nothing of this one. The task
  // goes on by itself once the provider sends the person back. The link is
  // offered to the task's requester only: the account signed in with is
  // kept as the requester's, so anybody else (the owner, say) signing in
  // would hand the task their own account under the requester's name.
  function signinCard(task, req, withTask) {
    const card = cardShell(task, req, withTask, "signin");
    const promptId = "s-" + (withTask ? "i-" : "d-") + task.taskId + "-" + req.requestId;
    card.append(el("p", { class: "prompt", id: promptId, text: req.prompt || "Sign in so the task can go on" }));
    const href = safeLink(req.authorizationUrl || "");
    if (task.requester && !isMe(task.requester)) {
      card.append(el("p", { class: "hint", "data-waiting-for": task.requester,
        text: "Waiting for " + task.requester + " to sign in: the task acts for them, with the account they sign in with. " +
          "Send them this task's address." }));
    } else if (href) {
      const link = el("a", { class: "btn btn-primary", href, target: "_blank", rel: "noopener noreferrer",
        "data-signin": req.connection || "", "aria-describedby": promptId },
        el("span", { class: "btn-label", text: "Sign in" }),
        req.connection ? el("span", { class: "btn-desc", text: "to " + req.connection }) : null);
      card.append(el("div", { class: "options" }, link),
        el("p", { class: "hint", text: "Opens the provider's page in a new tab; the task goes on once you have signed in there." }));
    } else {
      card.append(el("p", { class: "card-error", text: "This sign-in has no link the console can open." }));
    }
    if (req.expiresAt) card.append(el("p", { class: "hint" }, "The link works until ", timeEl(req.expiresAt, "both"), "."));
    return card;
  }

  // questionCard is an open question as a card: a button per option and a
  // text box when the request takes text. Answers go to the task's input
  // route as the signed-in principal, saying they come from the console.
  function questionCard(task, req, withTask) {
    const card = cardShell(task, req, withTask, "ask");
    const promptId = "q-" + (withTask ? "i-" : "d-") + task.taskId + "-" + req.requestId;
    card.append(el("p", { class: "prompt", id: promptId, text: req.prompt }));
    const error = el("div", { class: "card-error hidden", role: "alert" });

    const send = async (answer, buttons) => {
      buttons.forEach((b) => { b.disabled = true; });
      show(error, false);
      try {
        await api("POST", "/v1/tasks/" + enc(task.taskId) + "/input",
          { responses: [Object.assign({ requestId: req.requestId }, answer)] }, { "X-Taskhook-Via": "console" });
        state.answeredHere.set(task.taskId + "\n" + req.requestId, state.subject);
        card.replaceChildren(el("p", { class: "prompt", text: req.prompt }),
          el("p", { class: "answered", text: "Answered." }));
        refresh();
        if (state.task && state.task.id === task.taskId) renderAnswers(state.task);
      } catch (e) {
        buttons.forEach((b) => { b.disabled = false; });
        if (e.code === "input_conflict" || e.code === "not_input_required" || e.code === "unknown_request" || e.code === "task_terminal") {
          error.replaceChildren(el("p", { text: "This question was answered already, or its task ended." }));
          show(error, true);
          refresh();
        } else if (e.status !== 401) {
          failure(error, "Not answered", e, () => send(answer, buttons));
        }
      }
    };

    const options = req.options || [];
    if (options.length) {
      const group = el("div", { class: "options", role: "group", "aria-labelledby": promptId });
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

  // --- one task -------------------------------------------------------------

  function closeTask() {
    if (!state.task) return;
    if (state.task.stream) state.task.stream.abort();
    state.task = null;
    show($("task-view"), false);
  }

  function openTask(id) {
    if (state.task && state.task.id === id) return;
    closeTask();
    state.task = {
      id, stream: null, revision: 0, lastEventId: "", snapshot: null,
      asked: new Map(),       // requests by id, answered ones included
      resolvedAt: new Map(),  // request id -> when its input.resolved came
      statuses: [],           // [{at, status}] from the log
      createdSeen: false,
      terminalAt: "",
      sigs: {},
    };
    $("timeline").replaceChildren();
    $("detail-cards").replaceChildren();
    $("detail-answers").replaceChildren();
    for (const id of ["detail-outcome", "detail-progress", "detail-durations-block", "detail-answers-block", "detail-payloads"]) {
      show($(id), false);
    }
    $("detail-title").textContent = "Task " + shortId(id);
    $("detail-status").className = "badge";
    $("detail-status").textContent = "";
    $("detail-meta").replaceChildren();
    $("detail-facts").replaceChildren();
    $("detail-actions").replaceChildren();
    $("detail-live").textContent = "connecting…";
    $("detail-live").classList.remove("live-on");
    show($("task-view"), false); // until the task is read
    loadTask(state.task);
  }

  function loadTask(T) {
    loadDetail("task", T.id, "/v1/tasks/" + enc(T.id), () => state.task === T, (t) => {
      renderTask(T, t);
      if (!T.stream) follow(T);
    });
  }

  // loadDetail reads the record a view shows (a task's or a session's, at
  // path) and draws it, or says why it could not, with a Retry.
  async function loadDetail(noun, id, path, current, draw) {
    clearFailure($("detail-error"));
    try {
      const v = await api("GET", path);
      if (current()) draw(v);
    } catch (e) {
      if (!current() || !state.token) return;
      const what = e.status === 404 ? "No " + noun + " " + id + " (it does not exist, has expired, or is not yours to see)"
        : "Could not load " + noun + " " + id;
      failure($("detail-error"), what, e, () => loadDetail(noun, id, path, current, draw));
    }
  }

  // renderTask shows a task snapshot, unless one as new or newer is shown
  // already: a stream that starts replays the task's older snapshots.
  function renderTask(T, t) {
    if (t.taskId !== T.id || t.revision < T.revision) return;
    T.revision = t.revision;
    T.snapshot = t;
    show($("task-view"), true);
    for (const r of t.inputRequests || []) T.asked.set(r.requestId, r);
    const ended = terminal(t.status);

    $("detail-title").textContent = taskName(t);
    const status = $("detail-status");
    status.className = "badge badge-" + t.status;
    status.textContent = statusWords(t.status);
    status.dataset.status = t.status;
    document.title = taskName(t) + " · " + statusWords(t.status) + " · taskhook";

    if (changed(T, "meta", [t.taskId, t.sessionId, t.kind, state.labels.get(t.sessionId)])) renderMeta(t);
    renderActions(T, t);
    renderOutcome(T, t);

    // Progress is of a running task only: an ended task shows its outcome.
    const pct = !ended && t.progress && typeof t.progress.percent === "number" ? t.progress.percent : null;
    $("detail-message").textContent = ended ? "" : t.statusMessage || "";
    show($("detail-progress"), !ended && (Boolean(t.statusMessage) || pct !== null));
    show($("detail-bar"), pct !== null);
    if (pct !== null) $("detail-bar").value = Math.max(0, Math.min(100, pct));

    const wanted = new Map();
    for (const r of openRequests(t)) wanted.set(t.taskId + "\n" + r.requestId, [t, r]);
    keepCards($("detail-cards"), wanted, false);

    renderFacts(T, t);
    renderAnswers(T);
    renderPayloads(T, t);
    renderDurations(T);
  }

  // changed reports whether part of the view would show something new.
  function changed(T, part, value) {
    const sig = JSON.stringify(value);
    if (T.sigs[part] === sig) return false;
    T.sigs[part] = sig;
    return true;
  }

  function renderMeta(t) {
    const meta = $("detail-meta");
    const sessionLink = el("a", { href: "#/sessions/" + enc(t.sessionId), text: labelOfSession(t.sessionId) });
    meta.replaceChildren(el("span", { class: "mono", text: t.taskId }),
      copyButton(t.taskId, "Copy the task id", "Copy id"),
      copyButton(location.href.split("#")[0] + "#/tasks/" + enc(t.taskId), "Copy a link to this task", "Copy link"),
      el("span", { class: "in" }, "in ", sessionLink));
    if (t.kind) meta.append(el("span", { class: "tag", title: "kind", text: t.kind }));
    if (!state.labels.has(t.sessionId)) {
      api("GET", "/v1/sessions/" + enc(t.sessionId)).then((s) => {
        const label = sessionLabel(s);
        if (label) {
          state.labels.set(s.sessionId, label);
          sessionLink.textContent = label;
        }
      }, () => {});
    }
  }

  function renderActions(T, t) {
    const box = $("detail-actions");
    const can = !terminal(t.status) && isMe(t.owner);
    if (!changed(T, "actions", [can])) return;
    box.replaceChildren();
    if (can) box.append(cancelControl("task", (reason) => api("POST", "/v1/tasks/" + enc(t.taskId) + "/cancel", { reason }),
      (done) => renderTask(T, done)));
  }

  // cancelControl is a Cancel button that asks first, with an optional
  // reason, and reports a failed cancel with a Retry.
  function cancelControl(what, cancel, done) {
    const open = el("button", { type: "button", class: "btn btn-small btn-danger", id: what + "-cancel", text: "Cancel " + what + "…" });
    const reason = el("input", { type: "text", id: what + "-cancel-reason", maxLength: 1000, placeholder: "Reason (optional)" });
    const yes = el("button", { type: "submit", class: "btn btn-small btn-danger-solid", id: what + "-cancel-confirm", text: "Cancel " + what });
    const no = el("button", { type: "button", class: "btn btn-small", text: "Keep it" });
    const error = el("div", { class: "failure-slot hidden", role: "alert" });
    const form = el("form", { class: "confirm hidden", "aria-label": "Cancel this " + what },
      el("p", { class: "confirm-q", text: "Cancel this " + what + "? Its executor is told to stop; this cannot be undone." }),
      el("label", { class: "sr-only", htmlFor: what + "-cancel-reason", text: "Reason" }), reason,
      el("div", { class: "confirm-buttons" }, yes, no), error);
    open.addEventListener("click", () => {
      show(form, true);
      show(open, false);
      reason.focus();
    });
    no.addEventListener("click", () => {
      show(form, false);
      show(open, true);
      clearFailure(error);
    });
    const submit = async () => {
      yes.disabled = true;
      clearFailure(error);
      let answer;
      try {
        answer = await cancel(reason.value.trim());
      } catch (e) {
        if (e.status !== 401) failure(error, "Not cancelled", e, submit);
        return;
      } finally {
        yes.disabled = false;
      }
      done(answer);
    };
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      submit();
    });
    return el("div", { class: "cancel" }, open, form);
  }

  function endedAt(T, t) {
    return terminal(t.status) ? T.terminalAt || t.lastUpdatedAt : "";
  }

  // renderOutcome shows how an ended task ended: its result, its error or
  // why it was cancelled, and when.
  function renderOutcome(T, t) {
    const box = $("detail-outcome");
    const at = endedAt(T, t);
    if (!changed(T, "outcome", [t.status, t.result, t.error, t.cancelReason, at, t.releasedAt])) return;
    box.replaceChildren();
    box.className = "outcome outcome-" + t.status;
    if (!terminal(t.status)) {
      show(box, false);
      return;
    }
    const took = dateOf(at) && dateOf(t.createdAt) ? " after " + duration(dateOf(at) - dateOf(t.createdAt)) : "";
    const head = { completed: "Completed", failed: "Failed", cancelled: "Cancelled" }[t.status];
    box.append(el("p", { class: "outcome-head" }, el("strong", { text: head }),
      el("span", { class: "outcome-when" }, " ", timeEl(at, "both"), took)));
    if (t.status === "completed") {
      if (t.result === undefined) box.append(el("p", { class: "outcome-text", text: "No result was given." }));
      else box.append(jsonView(t.result, "result"));
    } else if (t.status === "failed") {
      box.append(el("p", { class: "outcome-text", text: t.error && t.error.message ? t.error.message : "No reason was given." }));
      if (t.error && t.error.data !== undefined) box.append(jsonView(t.error.data, "error data"));
    } else {
      box.append(el("p", { class: "outcome-text", text: t.cancelReason || "No reason was given." }));
    }
    if (t.releasedAt) box.append(el("p", { class: "hint" }, "The executor stopped its work ", timeEl(t.releasedAt, "ago"), "."));
    show(box, true);
  }

  function fact(dl, name, ...value) {
    dl.append(el("div", { class: "fact" }, el("dt", { text: name }), el("dd", {}, ...value)));
  }

  function renderFacts(T, t) {
    const at = endedAt(T, t);
    if (!changed(T, "facts", [t.status, t.createdAt, t.lastUpdatedAt, at, t.owner, t.requester, t.revision, t.expiresAt])) return;
    const dl = $("detail-facts");
    dl.replaceChildren();
    fact(dl, "Created", timeEl(t.createdAt, "both"));
    if (at) {
      fact(dl, "Ended", timeEl(at, "both"));
      fact(dl, "Took", duration(dateOf(at) - dateOf(t.createdAt)));
    } else {
      fact(dl, "Running for", el("span", { class: "running-for", "data-since": t.createdAt, text: duration(Date.now() - dateOf(t.createdAt)) }));
      fact(dl, "Last update", timeEl(t.lastUpdatedAt, "both"));
    }
    fact(dl, "Owner", t.owner);
    if (t.requester && t.requester !== t.owner) fact(dl, "Requester", t.requester);
    fact(dl, "Revision", String(t.revision));
    if (t.expiresAt) fact(dl, "Kept until", timeEl(t.expiresAt, "both"));
  }

  // renderDurations shows how long the task spent in each status, from the
  // status changes of its event log (task.created, task.status,
  // task.terminal).
  function renderDurations(T) {
    const t = T.snapshot;
    if (!t || !T.createdSeen) return;
    const marks = T.statuses;
    const end = terminal(t.status) ? dateOf(endedAt(T, t)) : new Date();
    const spans = [];
    for (let i = 0; i < marks.length; i++) {
      if (terminal(marks[i].status)) break;
      const from = dateOf(marks[i].at);
      const to = i + 1 < marks.length ? dateOf(marks[i + 1].at) : end;
      if (from && to) spans.push({ status: marks[i].status, ms: Math.max(0, to - from) });
    }
    const totals = new Map();
    for (const s of spans) {
      const tot = totals.get(s.status) || { ms: 0, times: 0 };
      tot.ms += s.ms;
      tot.times++;
      totals.set(s.status, tot);
    }
    const all = spans.reduce((n, s) => n + s.ms, 0);
    const box = $("detail-durations");
    const bar = el("div", { class: "spans", role: "img",
      "aria-label": [...totals].map(([s, v]) => statusWords(s) + " " + duration(v.ms)).join(", ") });
    for (const s of spans) {
      const part = el("span", { class: "span span-" + s.status, title: statusWords(s.status) + ": " + duration(s.ms) });
      part.style.flexGrow = String(Math.max(s.ms, all / 200));
      bar.append(part);
    }
    const legend = el("ul", { class: "legend" });
    for (const [s, v] of totals) {
      legend.append(el("li", { "data-status": s }, el("span", { class: "dot span-" + s }),
        el("span", { class: "l-status", text: statusWords(s) }), " ",
        el("span", { class: "l-time", text: duration(v.ms) }), v.times > 1 ? " (" + v.times + " times)" : ""));
    }
    box.replaceChildren(bar, legend);
    show($("detail-durations-block"), spans.length > 0);
  }

  const channels = { api: "API", console: "console", answer_link: "answer link", slack: "Slack", mcp: "MCP", a2a: "A2A", sign_in: "sign-in" };

  // answerWords is what an answer said: the option's label and the text, or
  // that the person declined or dismissed the question.
  function answerWords(a, req) {
    if (a.action === "decline") return "declined";
    if (a.action === "cancel") return "dismissed";
    const option = req && (req.options || []).find((o) => o.id === a.optionId);
    return [option ? option.label : a.optionId, a.text].filter(Boolean).join(": ");
  }

  // renderAnswers lists each answered question with who answered it, with
  // what, through what and when, as the task records it. Where the task
  // does not say who, an answer given from this tab is known to be the
  // signed-in principal's; when falls back to the input.resolved event.
  function renderAnswers(T) {
    const t = T.snapshot;
    if (!t) return;
    const answers = t.inputResponses || [];
    const here = answers.map((a) => state.answeredHere.get(t.taskId + "\n" + a.requestId) || "");
    if (!changed(T, "answers", [answers, here, [...T.asked.keys()], [...T.resolvedAt]])) return;
    const list = $("detail-answers");
    list.replaceChildren();
    answers.forEach((a, i) => {
      const req = T.asked.get(a.requestId);
      const who = a.answeredBy || here[i];
      const via = a.via || (here[i] ? "console" : "");
      let by = a.answeredBy === "answer-link" ? "through an answer link" : who ? "by " + who : "";
      if (a.slackUserId) by += " (Slack user " + a.slackUserId + ")";
      if (via && via !== "answer_link") by += " via " + (channels[via] || via);
      const at = a.answeredAt || T.resolvedAt.get(a.requestId) || "";
      const line = el("span", { class: "a-by" }, (by || "answered") + (at ? " at " : ""), at ? timeEl(at, "both") : null);
      const asked = req && req.prompt ? req.prompt : a.requestId;
      list.append(el("li", { "data-request-id": a.requestId, "data-via": via, "data-by": who || "" },
        el("span", { class: "a-prompt", text: asked + " → " + answerWords(a, req) }), line));
    });
    show($("detail-answers-block"), answers.length > 0);
  }

  function renderPayloads(T, t) {
    if (!changed(T, "payloads", [t.input, t.metadata, t.progress && terminal(t.status) ? null : t.progress])) return;
    const box = $("detail-payloads");
    box.replaceChildren();
    const parts = [["Input", "input", t.input], ["Metadata", "metadata", t.metadata]];
    // A progress payload beyond its percent (which the bar shows) is shown
    // as it is, while the task runs.
    const extra = t.progress && typeof t.progress === "object" && Object.keys(t.progress).some((k) => k !== "percent");
    if (!terminal(t.status) && extra) parts.push(["Progress", "progress", t.progress]);
    for (const [title, name, value] of parts) {
      if (value === undefined || value === null) continue;
      box.append(el("div", { class: "payload", "data-payload": name }, el("h3", { text: title }), jsonView(value, name)));
    }
    show(box, box.children.length > 0);
  }

  // --- the event log ----------------------------------------------------------

  function describe(ev) {
    const d = ev.data || {};
    switch (ev.type) {
      case "task.message": return d.text || "";
      case "task.progress": return (d.task && d.task.statusMessage) || "";
      case "task.status": return d.task ? "status: " + statusWords(d.task.status) : "";
      case "task.terminal": return d.task ? outcomeLine(d.task) : "";
      case "input.requested": return (d.requests || []).map((r) => r.prompt).join("\n");
      case "input.resolved": return (d.responses || []).map((r) => r.optionId || r.text || r.action || "").join(", ");
      case "authorization.required": return d.connection ? "sign-in to " + d.connection : "";
      case "authorization.completed": return d.connection ? d.connection + ": " + d.outcome : "";
      default: return "";
    }
  }

  function addEvent(ev) {
    const line = el("li", { class: "ev-" + ev.type.replace(".", "-"), "data-type": ev.type },
      el("span", { class: "t-type", text: ev.type }), " ",
      el("span", { class: "t-at" }, timeEl(ev.at, "both")));
    const text = describe(ev);
    if (text) line.append(el("p", { class: "t-text", text }));
    const list = $("timeline");
    list.prepend(line);
    while (list.children.length > MAX_TIMELINE) list.lastChild.remove();
  }

  // noteEvent keeps what the view derives from the log: when each status
  // began, the questions asked (answered ones too) and when each was
  // answered.
  function noteEvent(T, ev) {
    const d = ev.data || {};
    if (ev.type === "task.created" || ev.type === "task.status" || ev.type === "task.terminal") {
      const status = d.task ? d.task.status : "";
      if (ev.type === "task.created") T.createdSeen = true;
      const last = T.statuses[T.statuses.length - 1];
      if (status && (!last || last.status !== status)) T.statuses.push({ at: ev.at, status });
      if (ev.type === "task.terminal") T.terminalAt = ev.at;
    } else if (ev.type === "input.requested") {
      for (const r of d.requests || []) T.asked.set(r.requestId, r);
    } else if (ev.type === "input.resolved") {
      for (const r of d.responses || []) T.resolvedAt.set(r.requestId, ev.at);
    }
  }

  // follow reads the task's events as server-sent events through fetch (an
  // EventSource cannot send the Authorization header) and resumes after the
  // last event seen (Last-Event-ID) when the stream ends or fails, saying
  // why it is reconnecting.
  async function follow(T) {
    const ctl = new AbortController();
    T.stream = ctl;
    let pause = 500;
    const live = $("detail-live");
    while (!ctl.signal.aborted && state.task === T) {
      let trouble = "";
      try {
        const headers = { Authorization: "Bearer " + state.token, Accept: "text/event-stream" };
        if (T.lastEventId) headers["Last-Event-ID"] = T.lastEventId;
        const resp = await fetch("/v1/tasks/" + enc(T.id) + "/events", {
          headers, signal: ctl.signal, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer",
        });
        if (!resp.ok || !resp.body) {
          const data = await resp.json().catch(() => null);
          const err = (data && data.error) || {};
          const e = new APIError(resp.status, err.code || "http_" + resp.status, err.message || resp.statusText);
          if (resp.status === 401) {
            refused(e);
            return;
          }
          throw e;
        }
        live.textContent = "live";
        live.classList.add("live-on");
        pause = 500;
        await readEvents(T, resp.body, ctl.signal);
      } catch (e) {
        if (ctl.signal.aborted) return;
        trouble = e instanceof APIError ? " (" + why(e) + ")" : "";
      }
      if (state.task !== T) return;
      live.textContent = "reconnecting…" + trouble;
      live.classList.remove("live-on");
      await new Promise((done) => setTimeout(done, pause));
      pause = Math.min(pause * 2, 10000);
    }
  }

  async function readEvents(T, body, signal) {
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
          handleBlock(T, block);
        }
      }
    } finally {
      reader.releaseLock();
    }
  }

  function handleBlock(T, block) {
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
    if (!data.length || state.task !== T) return;
    let ev;
    try {
      ev = JSON.parse(data.join("\n"));
    } catch (e) {
      return;
    }
    if (id) T.lastEventId = id;
    noteEvent(T, ev);
    addEvent(ev);
    if (ev.data && ev.data.task) {
      renderTask(T, ev.data.task);
    } else if (T.snapshot) {
      renderAnswers(T);
      renderDurations(T);
      if (ev.type === "input.resolved" || ev.type === "authorization.completed") {
        // An answer that leaves other questions open carries no snapshot:
        // read the task again.
        api("GET", "/v1/tasks/" + enc(T.id)).then((t) => { if (state.task === T) renderTask(T, t); }, () => {});
      }
    }
  }

  // --- one session ----------------------------------------------------------

  function closeSession() {
    if (!state.session) return;
    state.session = null;
    show($("session-view"), false);
  }

  function openSession(id) {
    if (state.session && state.session.id === id) return;
    state.session = { id, data: null, tasks: newList("taskId"), sigs: {} };
    $("session-title").textContent = labelOfSession(id);
    $("session-status-badge").className = "badge";
    $("session-status-badge").textContent = "";
    for (const part of ["session-meta", "session-facts", "session-actions", "session-payloads", "session-tasks"]) empty($(part));
    show($("session-payloads"), false);
    show($("session-view"), false); // until the session is read
    document.title = labelOfSession(id) + " · taskhook";
    loadSession(state.session);
    loadSessionTasks(state.session, false);
  }

  function loadSession(S) {
    loadDetail("session", S.id, "/v1/sessions/" + enc(S.id), () => state.session === S, (s) => renderSession(S, s));
  }

  function renderSession(S, s) {
    S.data = s;
    show($("session-view"), true);
    const label = sessionLabel(s);
    if (label) state.labels.set(s.sessionId, label);
    $("session-title").textContent = label || "Session " + shortId(s.sessionId);
    document.title = $("session-title").textContent + " · taskhook";
    const b = $("session-status-badge");
    b.className = "badge badge-" + s.status;
    b.textContent = statusWords(s.status);
    b.dataset.status = s.status;
    $("session-meta").replaceChildren(el("span", { class: "mono", text: s.sessionId }),
      copyButton(s.sessionId, "Copy the session id", "Copy id"),
      copyButton(location.href.split("#")[0] + "#/sessions/" + enc(s.sessionId), "Copy a link to this session", "Copy link"));
    const dl = $("session-facts");
    dl.replaceChildren();
    fact(dl, "Created", timeEl(s.createdAt, "both"));
    fact(dl, "Last update", timeEl(s.lastUpdatedAt, "both"));
    fact(dl, "Owner", s.owner);
    const actions = $("session-actions");
    actions.replaceChildren();
    if (s.status === "active" && isMe(s.owner)) {
      actions.append(cancelControl("session", (reason) => api("POST", "/v1/sessions/" + enc(s.sessionId) + "/cancel", { reason }),
        (done) => {
          renderSession(S, done.session);
          loadSessionTasks(S, false);
        }));
    }
    const payloads = $("session-payloads");
    payloads.replaceChildren();
    if (s.metadata && Object.keys(s.metadata).length) {
      payloads.append(el("div", { class: "payload", "data-payload": "metadata" }, el("h3", { text: "Metadata" }), jsonView(s.metadata, "metadata")));
    }
    show(payloads, payloads.children.length > 0);
  }

  async function loadSessionTasks(S, more) {
    const list = S.tasks;
    if (!await loadPage(list, "/v1/tasks", { sessionId: S.id }, more, () => state.session === S && Boolean(state.token))) return;
    drawList("session-tasks", list, list.items, { what: "the session's tasks", more: Boolean(list.cursor),
      retry: () => loadSessionTasks(S, false), row: taskRow, fields: ["taskId", "revision", "status", "statusMessage"],
      none: "", empty: "No tasks in this session." });
  }

  // --- search -----------------------------------------------------------------

  // search opens what an exact id names, or else narrows the lists to the
  // tasks and sessions whose id, label or kind holds the words.
  function search(ev) {
    ev.preventDefault();
    const q = $("search").value.trim();
    if (/^task_[A-Za-z0-9]+$/.test(q)) location.hash = "#/tasks/" + enc(q);
    else if (/^ses_[A-Za-z0-9]+$/.test(q)) location.hash = "#/sessions/" + enc(q);
    renderTasks();
    renderSessions();
  }

  // --- wiring -----------------------------------------------------------------

  document.addEventListener("DOMContentLoaded", () => {
    $("signin-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const token = $("token").value.trim().replace(/^Bearer\s+/i, "");
      if (token) signIn(token);
    });
    $("signout").addEventListener("click", () => signOut(""));
    $("back").addEventListener("click", goBack);
    $("search-form").addEventListener("submit", search);
    $("search").addEventListener("input", () => {
      renderTasks();
      renderSessions();
    });
    $("task-status").addEventListener("change", () => loadList(state.tasks, false));
    $("task-kind").addEventListener("change", () => loadList(state.tasks, false));
    $("task-time").addEventListener("change", renderTasks);
    $("session-status").addEventListener("change", () => loadList(state.sessions, false));
    $("tasks-more").addEventListener("click", () => loadList(state.tasks, true));
    $("sessions-more").addEventListener("click", () => loadList(state.sessions, true));
    $("session-tasks-more").addEventListener("click", () => {
      if (state.session) loadSessionTasks(state.session, true);
    });
    window.addEventListener("hashchange", route);
    // A tab in the background does not refresh; back in front, it does at
    // once (after a sign-in in another tab, say).
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden && state.token) {
        refresh();
        tick();
      }
    });
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) signIn(saved);
  });
})();
