package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/problem"
)

// maxListenTasks bounds the tasks one subscriptions/listen follows.
const maxListenTasks = 100

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

// listTools answers tools/list, in both generations: the tools the caller
// may call; under 2025-11-25 each may be called as a task.
func (h *handler) listTools(q *request) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if e := decodeParams(q.m.params, &p); e != nil {
		q.fail(e)
		return
	}
	page, err := h.cfg.Backend.Tools(q.r.Context(), q.p, p.Cursor)
	if err != nil {
		q.fail(h.backendError(err, errInvalidParams("cursor", "is not a cursor of this server")))
		return
	}
	tools := make([]mcpTool, len(page.Tools))
	for i, t := range page.Tools {
		tools[i] = newTool(t, !q.modern && q.version == versionTasks)
	}
	res := map[string]any{"tools": tools}
	if page.Next != "" {
		res["nextCursor"] = page.Next
	}
	if q.modern {
		res["resultType"], res["ttlMs"], res["cacheScope"], res["_meta"] = resultComplete, 0, "private", h.serverMeta()
	}
	q.reply(res)
}

// callParams are the params of tools/call, both generations.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Task      *struct {
		TTL *int64 `json:"ttl"`
	} `json:"task"` // 2025-11-25: call as a task
	InputResponses map[string]json.RawMessage `json:"inputResponses"` // stateless: a retried call's answers
	RequestState   string                     `json:"requestState"`
}

// readCall reads tools/call's params.
func readCall(q *request) (callParams, *rpcError) {
	var p callParams
	if e := decodeParams(q.m.params, &p); e != nil {
		return p, e
	}
	if p.Name == "" {
		return p, errInvalidParams("name", "is required")
	}
	switch {
	case len(p.Arguments) == 0 || string(p.Arguments) == "null":
		p.Arguments = json.RawMessage("{}")
	case p.Arguments[0] != '{':
		return p, errInvalidParams("arguments", "must be an object")
	}
	return p, nil
}

// call starts the task of a tool call. Arguments outside the tool's schema
// are a tool error the model can correct (ok false, result set), not a
// protocol error.
func (h *handler) call(q *request, p callParams, ttl *int64) (t Task, toolErr *callToolResult, e *rpcError) {
	t, err := h.cfg.Backend.Call(q.r.Context(), q.p, Call{Tool: p.Name, Arguments: p.Arguments, TTLMs: ttl})
	var verr *problem.ValidationError
	if errors.As(err, &verr) && (verr.Field == "arguments" || strings.HasPrefix(verr.Field, "arguments.") || strings.HasPrefix(verr.Field, "arguments[")) {
		res := callToolResult{Content: []*sdk.TextContent{{Text: "invalid arguments: " + verr.Error()}}, IsError: true}
		if q.modern {
			res.ResultType = resultComplete
		}
		return t, &res, nil
	}
	if err != nil {
		return t, nil, h.backendError(err, errNoSuchTool(p.Name))
	}
	return t, nil, nil
}

// callModern answers tools/call of the stateless generation: a task to a
// client that declared the tasks extension; otherwise the result once the
// task ends, asking the client's questions by input_required results
// (requestState names the task) when it declared elicitation.
func (h *handler) callModern(q *request) {
	p, e := readCall(q)
	if e != nil {
		q.fail(e)
		return
	}
	var t Task
	if p.RequestState != "" {
		if t, e = h.resume(q, p); e != nil {
			q.fail(e)
			return
		}
	} else {
		var toolErr *callToolResult
		if t, toolErr, e = h.call(q, p, nil); e != nil || toolErr != nil {
			q.answerCall(toolErr, e)
			return
		}
		if q.caps.tasks {
			mt := newModernTask(t, resultTask, false)
			mt.Meta = h.serverMeta()
			q.reply(mt)
			return
		}
	}
	h.awaitCall(q, t)
}

func (q *request) answerCall(res *callToolResult, e *rpcError) {
	if e != nil {
		q.fail(e)
		return
	}
	q.reply(res)
}

// resume continues a call that answered input_required: the task its
// requestState names, with the answers of the retry recorded. The state is
// the task id as it is: the caller may resume only a task of its own, of
// the tool it calls, so a forged state can do no more than fail.
func (h *handler) resume(q *request, p callParams) (Task, *rpcError) {
	bad := errInvalidParams("requestState", "does not continue a call of this tool")
	t, err := h.cfg.Backend.Task(q.r.Context(), q.p, p.RequestState)
	if err != nil {
		return t, h.backendError(err, bad)
	}
	if t.Kind != p.Name {
		return t, bad
	}
	if len(p.InputResponses) > 0 {
		results, e := decodeResults(p.InputResponses)
		if e != nil {
			return t, e
		}
		if e := h.answer(q.r.Context(), q.p, t.TaskID, results, bad); e != nil {
			return t, e
		}
		if t, err = h.cfg.Backend.Task(q.r.Context(), q.p, t.TaskID); err != nil {
			return t, h.backendError(err, bad)
		}
	}
	return t, nil
}

// askable is the open requests of t the client can be asked.
func (q *request) askable(t Task) []wire.InputRequest {
	if t.Status != wire.StatusInputRequired {
		return nil
	}
	var out []wire.InputRequest
	for _, r := range t.InputRequests {
		if (r.Kind == wire.KindAuthorization && q.caps.url) || (r.Kind != wire.KindAuthorization && q.caps.form) {
			out = append(out, r)
		}
	}
	return out
}

// awaitCall answers a call from a client that takes no task once the task
// ends (or, stateless, needs an answer the client can give), with progress
// notifications on a stream when the client gave a progressToken.
func (h *handler) awaitCall(q *request, t Task) {
	done := func(t Task) bool { return wire.Terminal(t.Status) || (q.modern && len(q.askable(t)) > 0) }
	answer := func(t Task) (any, *rpcError) {
		if !wire.Terminal(t.Status) {
			reqs := map[string]inputReq{}
			for _, r := range q.askable(t) {
				reqs[r.RequestID] = inputReq{Method: methodElicit, Params: elicitParams(r, true)}
			}
			return inputRequiredResult{ResultType: resultInput, InputRequests: reqs, RequestState: t.TaskID,
				Meta: h.serverMeta()}, nil
		}
		if q.modern && t.Status == wire.StatusFailed {
			te := taskError(t)
			e := &rpcError{code: te.Code, message: te.Message, status: http.StatusOK}
			if len(te.Data) > 0 {
				e.data = te.Data
			}
			return nil, e
		}
		res := toolResult(t, q.modern)
		if q.modern {
			res.Meta = h.serverMeta()
		}
		return res, nil
	}
	asks := !q.modern && (q.caps.form || q.caps.url)
	if done(t) || !q.canStream || (q.progress == nil && !asks) {
		q.hold(t, done, answer)
		return
	}
	q.beginStream()
	asked := map[string]bool{}
	var progress float64
	t, err := q.follow(t, func(t Task) bool {
		if q.progress != nil && float64(t.Revision) > progress {
			progress = float64(t.Revision)
			_ = q.notify("", "notifications/progress", &sdk.ProgressNotificationParams{
				ProgressToken: json.RawMessage(q.progress), Progress: progress, Message: progressMessage(t)})
		}
		if asks {
			q.elicit(t, asked, false)
		}
		return done(t)
	})
	if err != nil {
		q.failWait(err)
		return
	}
	res, e := answer(t)
	if e != nil {
		q.fail(e)
		return
	}
	q.reply(res)
}

// failWait ends a request whose wait ended in err: nothing when the client
// left.
func (q *request) failWait(err error) {
	var e *rpcError
	switch {
	case errors.Is(err, errLeft):
		q.h.observe(q.label, "left")
	case errors.As(err, &e):
		q.fail(e)
	default:
		q.fail(q.h.backendError(err, errNoSuchTask()))
	}
}

// inputRequiredResult is a stateless call's answer while its task waits
// for answers the client can give: it retries with them and requestState.
type inputRequiredResult struct {
	ResultType    string              `json:"resultType"`
	InputRequests map[string]inputReq `json:"inputRequests"`
	RequestState  string              `json:"requestState"`
	Meta          map[string]any      `json:"_meta,omitempty"`
}

// progressMessage is a progress notification's text: the status message,
// and while the task waits for input, each question with where a person
// can answer it in a browser.
func progressMessage(t Task) string {
	if t.Status != wire.StatusInputRequired {
		return statusMessage(t)
	}
	lines := []string{}
	if t.StatusMessage != "" {
		lines = append(lines, t.StatusMessage)
	}
	for _, r := range t.InputRequests {
		link, verb := r.AnswerURL, "answer at"
		if r.Kind == wire.KindAuthorization {
			link, verb = r.AuthorizationURL, "sign in at"
		}
		line := r.Prompt
		if link != "" {
			line += " (" + verb + " " + link + ")"
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// taskParams are the params of the task methods.
type taskParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

func readTaskParams(q *request) (taskParams, *rpcError) {
	var p taskParams
	if e := decodeParams(q.m.params, &p); e != nil {
		return p, e
	}
	if p.TaskID == "" {
		return p, errInvalidParams("taskId", "is required")
	}
	return p, nil
}

func (h *handler) getModern(q *request) {
	if !q.caps.tasks {
		q.fail(errNeedsTasks())
		return
	}
	p, e := readTaskParams(q)
	if e != nil {
		q.fail(e)
		return
	}
	t, err := h.cfg.Backend.Task(q.r.Context(), q.p, p.TaskID)
	if err != nil {
		q.fail(h.backendError(err, errNoSuchTask()))
		return
	}
	mt := newModernTask(t, resultComplete, true)
	mt.Meta = h.serverMeta()
	q.reply(mt)
}

func (h *handler) updateModern(q *request) {
	if !q.caps.tasks {
		q.fail(errNeedsTasks())
		return
	}
	p, e := readTaskParams(q)
	if e != nil {
		q.fail(e)
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
	if !q.caps.tasks {
		q.fail(errNeedsTasks())
		return
	}
	p, e := readTaskParams(q)
	if e != nil {
		q.fail(e)
		return
	}
	if _, err := h.cfg.Backend.Cancel(q.r.Context(), q.p, p.TaskID); err != nil && !errors.Is(err, ErrEnded) {
		q.fail(h.backendError(err, errNoSuchTask()))
		return
	}
	q.reply(map[string]any{"resultType": resultComplete, "_meta": h.serverMeta()})
}

// listen answers subscriptions/listen: a stream that acknowledges the task
// ids the caller may read, then sends notifications/tasks with each one's
// state, and again at every change, until the client leaves, every task has
// ended, or the server drains (then it answers, ending the subscription).
func (h *handler) listen(q *request) {
	var p struct {
		Notifications *struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	}
	if e := decodeParams(q.m.params, &p); e != nil {
		q.fail(e)
		return
	}
	if p.Notifications == nil {
		q.fail(errInvalidParams("notifications", "is required"))
		return
	}
	ids := p.Notifications.TaskIDs
	if len(ids) > 0 && !q.caps.tasks {
		q.fail(errNeedsTasks())
		return
	}
	if len(ids) > maxListenTasks {
		q.fail(errInvalidParams("notifications.taskIds", fmt.Sprintf("at most %d", maxListenTasks)))
		return
	}
	if !q.canStream {
		q.fail(errInvalidRequest("subscriptions/listen answers with a stream: Accept must allow text/event-stream"))
		return
	}
	ctx := q.r.Context()
	tasks := map[string]Task{}
	accepted := []string{}
	for _, id := range ids {
		if _, dup := tasks[id]; dup {
			continue
		}
		t, err := h.cfg.Backend.Task(ctx, q.p, id)
		if errors.Is(err, problem.ErrNotFound) {
			continue // not the caller's: not acknowledged, as a missing one
		}
		if err != nil {
			q.fail(h.backendError(err, errNoSuchTask()))
			return
		}
		tasks[id] = t
		accepted = append(accepted, id)
	}
	sort.Strings(accepted)
	subMeta := map[string]any{metaSubID: q.m.id}
	q.beginStream()
	_ = q.notify("", "notifications/subscriptions/acknowledged",
		map[string]any{"_meta": subMeta, "notifications": map[string]any{"taskIds": accepted}})
	send := func(t Task) {
		mt := newModernTask(t, "", true)
		mt.Meta = subMeta
		_ = q.notify("", "notifications/tasks", mt)
	}
	type answer struct {
		t   Task
		err error
	}
	answers := make(chan answer, len(accepted))
	watches := map[string]Watch{}
	watch := func(t Task) {
		w := h.cfg.Backend.Watch(ctx, q.p, t.TaskID, t.Revision)
		watches[t.TaskID] = w
		id := t.TaskID
		w.Park(ctx, func(t Task, err error) {
			if t.TaskID == "" {
				t.TaskID = id
			}
			answers <- answer{t, err}
		})
	}
	for _, id := range accepted {
		send(tasks[id])
		if !wire.Terminal(tasks[id].Status) {
			watch(tasks[id])
		}
	}
	tick := time.NewTicker(h.cfg.Heartbeat)
	defer tick.Stop()
	leave := func() {
		for _, w := range watches {
			w.Leave()
		}
		for range watches {
			<-answers
		}
	}
	for len(watches) > 0 {
		select {
		case a := <-answers:
			id := a.t.TaskID
			delete(watches, id)
			if errors.Is(a.err, problem.ErrNotFound) {
				continue // it expired meanwhile: nothing more to tell of it
			}
			if a.err != nil {
				leave()
				q.failWait(a.err)
				return
			}
			if h.draining() {
				leave()
				q.reply(map[string]any{"resultType": resultComplete, "_meta": subMeta})
				return
			}
			if a.t.Revision > tasks[id].Revision {
				tasks[id] = a.t
				send(a.t)
			}
			if !wire.Terminal(tasks[id].Status) {
				watch(tasks[id])
			}
		case <-tick.C:
			if q.stream.comment() != nil {
				leave()
				return
			}
		case <-ctx.Done():
			leave()
			q.h.observe(q.label, "left")
			return
		}
	}
	q.reply(map[string]any{"resultType": resultComplete, "_meta": subMeta})
}
