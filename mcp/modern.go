package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveModern serves a request of the stateless generation (2026-07-28,
// with the tasks extension): its headers checked against its body first.
func (h *handler) serveModern(q *request, meta map[string]json.RawMessage, header string) {
	if q.m.kind == kindNotification {
		q.accepted() // this generation defines none over HTTP; accepted and ignored
		return
	}
	if e := q.checkModern(meta, header); e != nil {
		q.fail(e)
		return
	}
	switch q.m.method {
	case "server/discover":
		q.reply(h.discover())
	case "tools/list":
		h.listTools(q)
	case "tools/call":
		h.callModern(q)
	case "tasks/get":
		h.getModern(q)
	case "tasks/update":
		h.updateModern(q)
	case "tasks/cancel":
		h.cancelModern(q)
	case "subscriptions/listen":
		h.listen(q)
	default: // tasks/result and tasks/list too: the extension has neither
		q.fail(errMethodNotFound(q.m.method, true))
	}
}

// checkModern applies the transport's header rules and the per-request
// _meta rules: the version in the header and in _meta, the same and
// served; Mcp-Method as the method; Mcp-Name as the tool's name or the
// task's id; the client's capabilities declared.
func (q *request) checkModern(meta map[string]json.RawMessage, header string) *rpcError {
	if header == "" {
		return errHeaderMismatch("the " + headerVersion + " header is required")
	}
	if !slices.Contains(supportedVersions, header) {
		return errUnsupportedVersion(header)
	}
	raw, ok := meta[metaVersion]
	if !ok {
		return errMissingMeta(metaVersion)
	}
	if json.Unmarshal(raw, &q.version) != nil {
		e := errInvalidParams("_meta."+metaVersion, "must be a string")
		e.status = http.StatusBadRequest
		return e
	}
	if header != q.version {
		return errHeaderMismatch(fmt.Sprintf("%s %q does not match _meta %q", headerVersion, header, q.version))
	}
	if q.version != versionModern {
		return errUnsupportedVersion(q.version)
	}
	method, ok := headerValue(q.r.Header.Get(headerMethod))
	switch {
	case q.r.Header.Get(headerMethod) == "":
		return errHeaderMismatch("the " + headerMethod + " header is required")
	case !ok:
		return errHeaderMismatch("the " + headerMethod + " header holds characters it may not")
	case method != q.m.method:
		return errHeaderMismatch(fmt.Sprintf("%s %q does not match the method %q", headerMethod, method, q.m.method))
	}
	if field := nameField(q.m.method); field != "" {
		var p map[string]json.RawMessage
		_ = json.Unmarshal(q.m.params, &p)
		var body string
		if v, ok := p[field]; ok && json.Unmarshal(v, &body) != nil {
			return errInvalidParams(field, "must be a string")
		}
		raw := q.r.Header.Get(headerName)
		name, ok := headerValue(raw)
		switch {
		case raw == "":
			return errHeaderMismatch("the " + headerName + " header is required for " + q.m.method)
		case !ok:
			return errHeaderMismatch("the " + headerName + " header holds characters it may not")
		case name != body:
			return errHeaderMismatch(fmt.Sprintf("%s %q does not match params.%s %q", headerName, name, field, body))
		}
	}
	capsRaw, ok := meta[metaCaps]
	if !ok {
		return errMissingMeta(metaCaps)
	}
	if q.caps, ok = readCaps(capsRaw); !ok || capsRaw[0] != '{' {
		e := errInvalidParams("_meta."+metaCaps, "must be an object")
		e.status = http.StatusBadRequest
		return e
	}
	return q.readProgressToken(meta)
}

// nameField is the params member Mcp-Name mirrors for method, if any.
func nameField(method string) string {
	switch method {
	case "tools/call":
		return "name"
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "taskId"
	}
	return ""
}

// serverMeta is the _meta of every result of this generation: who answers.
func (h *handler) serverMeta() map[string]any {
	return map[string]any{metaServerInfo: &sdk.Implementation{Name: h.cfg.ServerName, Version: h.cfg.ServerVersion}}
}

func (h *handler) discover() any {
	res := map[string]any{
		"resultType":        resultComplete,
		"supportedVersions": supportedVersions,
		"capabilities":      map[string]any{"tools": map[string]any{}, "extensions": map[string]any{extTasks: map[string]any{}}},
		"ttlMs":             0,
		"cacheScope":        "public",
		"_meta":             h.serverMeta(),
	}
	if h.cfg.Instructions != "" {
		res["instructions"] = h.cfg.Instructions
	}
	return res
}

// taskParams are the params of the task methods.
type taskParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// taskParams reads the params of a task method, in both generations,
// answering q with the error when they are wrong; ok is false when q has
// been answered.
func (q *request) taskParams() (p taskParams, ok bool) {
	if e := decodeParams(q.m.params, &p); e != nil {
		q.fail(e)
		return p, false
	}
	if p.TaskID == "" {
		q.fail(errInvalidParams("taskId", "is required"))
		return p, false
	}
	return p, true
}

// task is the task a task method names, its params read by read (of the
// request's generation), answering q with the error when the params are
// wrong or the caller has no such task; ok is false when q has been
// answered.
func (h *handler) task(q *request, read func() (taskParams, bool)) (t Task, ok bool) {
	p, ok := read()
	if !ok {
		return t, false
	}
	t, err := h.cfg.Backend.Task(q.r.Context(), q.p, p.TaskID)
	if err != nil {
		q.fail(h.backendError(err, errNoSuchTask()))
		return t, false
	}
	return t, true
}

// modernTaskParams is taskParams under 2026-07-28, whose task methods need
// the tasks extension declared.
func (q *request) modernTaskParams() (taskParams, bool) {
	if !q.caps.tasks {
		q.fail(errNeedsTasks())
		return taskParams{}, false
	}
	return q.taskParams()
}

func (h *handler) getModern(q *request) {
	t, ok := h.task(q, q.modernTaskParams)
	if !ok {
		return
	}
	mt := newModernTask(t, resultComplete, true)
	mt.Meta = h.serverMeta()
	q.reply(mt)
}

func (h *handler) updateModern(q *request) {
	p, ok := q.modernTaskParams()
	if !ok {
		return
	}
	if p.InputResponses == nil {
		q.fail(errInvalidParams("inputResponses", "is required"))
		return
	}
	results, e := decodeResults(p.InputResponses)
	if e != nil {
		q.fail(e)
		return
	}
	if e := h.answer(q.r.Context(), q.p, p.TaskID, results, errNoSuchTask()); e != nil {
		q.fail(e)
		return
	}
	q.reply(map[string]any{"resultType": resultComplete, "_meta": h.serverMeta()})
}

func (h *handler) cancelModern(q *request) {
	p, ok := q.modernTaskParams()
	if !ok {
		return
	}
	if _, err := h.cfg.Backend.Cancel(q.r.Context(), q.p, p.TaskID); err != nil && !errors.Is(err, ErrEnded) {
		q.fail(h.backendError(err, errNoSuchTask()))
		return
	}
	q.reply(map[string]any{"resultType": resultComplete, "_meta": h.serverMeta()})
}
