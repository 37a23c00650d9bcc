package mcp

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskhook/taskhook/api/wire"
)

// A session of the generations that begin with initialize holds what the
// client said there: its version and whether it takes elicitations. Nothing
// of it lives in a process: the session id carries it, so any replica
// serves the client's next request. It holds only the client's own words,
// so a forged one changes nothing but how this server talks to its forger.
type legacySession struct {
	Version string `json:"v"`
	Form    bool   `json:"f,omitempty"`
	URL     bool   `json:"u,omitempty"`
}

const sessionPrefix = "mcs1."

// id is the session's Mcp-Session-Id: its fields, and 64 random bits that
// make it unique.
func (s legacySession) id() string {
	b, _ := json.Marshal(s)
	var r [8]byte
	_, _ = rand.Read(r[:])
	return sessionPrefix + base64.RawURLEncoding.EncodeToString(b) + "." + hex.EncodeToString(r[:])
}

func parseSession(id string) (legacySession, bool) {
	rest, ok := strings.CutPrefix(id, sessionPrefix)
	if !ok {
		return legacySession{}, false
	}
	fields, _, ok := strings.Cut(rest, ".")
	b, err := base64.RawURLEncoding.DecodeString(fields)
	var s legacySession
	if !ok || err != nil || json.Unmarshal(b, &s) != nil || !legacyVersions[s.Version] {
		return legacySession{}, false
	}
	return s, true
}

// serveLegacy serves a request of a generation that began with initialize
// (2025-11-25 and the two before it, which have no tasks).
func (h *handler) serveLegacy(q *request, meta map[string]json.RawMessage, header string) {
	if q.m.kind == kindNotification {
		q.accepted() // initialized, cancelled, progress: nothing to do
		return
	}
	if q.m.method == "initialize" {
		h.initialize(q)
		return
	}
	if id := q.r.Header.Get(headerSession); id != "" {
		s, ok := parseSession(id)
		if !ok {
			// The client starts a new session on a 404.
			q.h.observe(q.label, "404")
			writeJSON(q.w, http.StatusNotFound, "", response{JSONRPC: "2.0", ID: q.m.id,
				Error: errInvalidRequest("unknown session").wireError()})
			return
		}
		q.version, q.caps = s.Version, clientCaps{form: s.Form, url: s.URL}
	}
	switch {
	case header != "":
		q.version = header
	case q.version == "":
		q.version = "2025-03-26" // what the transport says a request without the header speaks
	}
	if e := q.readProgressToken(meta); e != nil {
		q.fail(e)
		return
	}
	switch q.m.method {
	case "ping":
		q.reply(struct{}{})
	case "tools/list":
		h.listTools(q)
	case "tools/call":
		h.callLegacy(q)
	case "tasks/get":
		h.getLegacy(q)
	case "tasks/list":
		h.listLegacy(q)
	case "tasks/cancel":
		h.cancelLegacy(q)
	case "tasks/result":
		h.resultLegacy(q)
	default:
		q.fail(errMethodNotFound(q.m.method, false))
	}
}

// initialize answers initialize: the version the client asked for when it
// is served (else the newest that begins with initialize), tools, and under
// 2025-11-25 tasks (list, cancel, task-augmented tools/call). The session id
// keeps what the client said it can do.
func (h *handler) initialize(q *request) {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
	}
	if e := decodeParams(q.m.params, &p); e != nil {
		q.fail(e)
		return
	}
	if p.ProtocolVersion == "" {
		q.fail(errInvalidParams("protocolVersion", "is required"))
		return
	}
	caps, ok := readCaps(p.Capabilities)
	if !ok {
		q.fail(errInvalidParams("capabilities", "must be an object"))
		return
	}
	version := p.ProtocolVersion
	if !legacyVersions[version] {
		version = versionTasks
	}
	capabilities := map[string]any{"tools": map[string]any{}}
	if version == versionTasks {
		capabilities["tasks"] = map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
			"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
	}
	res := map[string]any{
		"protocolVersion": version,
		"capabilities":    capabilities,
		"serverInfo":      &sdk.Implementation{Name: h.cfg.ServerName, Version: h.cfg.ServerVersion},
	}
	if h.cfg.Instructions != "" {
		res["instructions"] = h.cfg.Instructions
	}
	q.w.Header().Set(headerSession, legacySession{Version: version, Form: caps.form, URL: caps.url}.id())
	q.reply(res)
}

// callLegacy answers tools/call: with params.task (2025-11-25) the task at
// once; otherwise the result once the task ends, asking the client's
// questions on the stream when it takes elicitations.
func (h *handler) callLegacy(q *request) {
	p, e := readCall(q)
	if e != nil {
		q.fail(e)
		return
	}
	asTask := p.Task != nil && q.version == versionTasks
	t, toolErr, e := h.call(q, p, asTask)
	if e != nil || toolErr != nil {
		q.answerCall(toolErr, e)
		return
	}
	if asTask {
		q.reply(map[string]any{"task": newLegacyTask(t)})
		return
	}
	h.awaitCall(q, t)
}

func (h *handler) getLegacy(q *request) {
	t, ok := h.task(q, q.taskParams)
	if !ok {
		return
	}
	q.reply(newLegacyTask(t))
}

func (h *handler) listLegacy(q *request) {
	res, ok := readPage(q, "tasks", func(cursor string) ([]Task, string, error) {
		page, err := h.cfg.Backend.Tasks(q.r.Context(), q.p, cursor)
		return page.Tasks, page.Next, err
	}, newLegacyTask)
	if ok {
		q.reply(res)
	}
}

// cancelLegacy answers tasks/cancel: the cancelled task; a task that had
// ended is invalid params, as the tasks utility says.
func (h *handler) cancelLegacy(q *request) {
	p, ok := q.taskParams()
	if !ok {
		return
	}
	t, err := h.cfg.Backend.Cancel(q.r.Context(), q.p, p.TaskID)
	if errors.Is(err, ErrEnded) {
		q.fail(errInvalidParams("taskId", "names a task that has already ended ("+t.Status+")"))
		return
	}
	if err != nil {
		q.fail(h.backendError(err, errNoSuchTask()))
		return
	}
	q.reply(newLegacyTask(t))
}

// resultLegacy answers tasks/result once the task has ended: its
// CallToolResult, tied to the task by _meta. Meanwhile, to a client that
// takes elicitations, it streams the task's open questions as
// elicitation/create requests and each change of status as
// notifications/tasks/status; the client's answers may reach any replica.
func (h *handler) resultLegacy(q *request) {
	t, ok := h.task(q, q.taskParams)
	if !ok {
		return
	}
	done := func(t Task) bool { return wire.Terminal(t.Status) }
	answer := func(t Task) (any, *rpcError) {
		res := toolResult(t, false)
		res.Meta = map[string]any{metaRelatedTask: map[string]string{"taskId": t.TaskID}}
		return res, nil
	}
	asked := map[string]bool{}
	status := t.Status
	q.await(t, q.caps.form || q.caps.url, done, func(t Task) {
		if t.Status != status {
			status = t.Status
			_ = q.notify("", "notifications/tasks/status", newLegacyTask(t))
		}
		q.elicit(t, asked, true)
	}, answer)
}

// elicit sends, on q's stream, each open request of t the client can take
// and has not been asked on it, as an elicitation/create request whose id
// routes the answer (elicitID); related ties it to the task.
func (q *request) elicit(t Task, asked map[string]bool, related bool) {
	for _, r := range q.askable(t) {
		if asked[r.RequestID] {
			continue
		}
		asked[r.RequestID] = true
		params := elicitParams(r, false)
		if related {
			params.Meta = sdk.Meta{metaRelatedTask: map[string]string{"taskId": t.TaskID}}
		}
		_ = q.notify(elicitID(t.TaskID, r.RequestID), methodElicit, params)
	}
}

// routeResponse takes a client's answer to an elicitation this server
// sent, on whichever replica sent it: the id names the task and the
// request, and the answer is recorded as the caller's. An error answer, or
// one to a request that is not open, is taken and ignored.
func (h *handler) routeResponse(q *request) {
	taskID, requestID, ok := parseElicitID(q.m.id)
	if !ok || q.m.error != nil {
		q.accepted()
		return
	}
	var res sdk.ElicitResult
	if json.Unmarshal(q.m.result, &res) != nil {
		e := errInvalidParams("result", "must be an elicitation result {action, content?}")
		e.status = http.StatusBadRequest
		q.fail(e)
		return
	}
	ignored := &rpcError{}
	e := h.answer(q.r.Context(), q.p, taskID, map[string]sdk.ElicitResult{requestID: res}, ignored)
	switch {
	case e == nil, e == ignored:
		q.accepted()
	default:
		if e.status == http.StatusOK {
			e.status = http.StatusBadRequest
		}
		q.fail(e)
	}
}
