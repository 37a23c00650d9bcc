package mcp_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/mcp"
)

var elicitCaps = map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}}

// legacyTask calls devbox as a task under 2025-11-25: its id.
func (h *harness) legacyTask(token, session string) string {
	h.t.Helper()
	r := h.legacy(token, session, "tools/call", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"}, "task": map[string]any{"ttl": 60000}})
	id := str(r.body, "result.task.taskId")
	if id == "" {
		h.t.Fatalf("task-augmented tools/call: %s", r.raw)
	}
	return id
}

func relatedTask(v any) string {
	meta, _ := at(v, "_meta").(map[string]any)
	related, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any)
	s, _ := related["taskId"].(string)
	return s
}

func TestLegacyInitialize(t *testing.T) {
	h := newHarness(t)
	r := h.do("alice", nil, legacyBody(0, "initialize", map[string]any{"protocolVersion": v2025, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "c", "version": "1"}}))
	res := r.body["result"]
	if r.status != 200 || str(res, "protocolVersion") != v2025 || str(res, "serverInfo.name") != "taskhook" ||
		at(res, "capabilities.tools") == nil || at(res, "capabilities.tasks.list") == nil || at(res, "capabilities.tasks.cancel") == nil ||
		at(res, "capabilities.tasks.requests.tools.call") == nil || r.header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %v %s", r.header, r.raw)
	}
	// An older version is served without tasks; an unknown one gets the
	// newest that begins with initialize.
	r = h.do("alice", nil, legacyBody(0, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}}))
	if str(r.body, "result.protocolVersion") != "2025-06-18" || at(r.body, "result.capabilities.tasks") != nil {
		t.Fatalf("initialize 2025-06-18: %s", r.raw)
	}
	old := r.header.Get("Mcp-Session-Id")
	r = h.do("alice", map[string]string{"Mcp-Session-Id": old, "MCP-Protocol-Version": "2025-06-18"}, legacyBody(1, "tools/list", nil))
	if at(r.body, "result.tools.0.execution") != nil {
		t.Fatalf("no taskSupport before 2025-11-25: %s", r.raw)
	}
	r = h.do("alice", nil, legacyBody(0, "initialize", map[string]any{"protocolVersion": "1999-01-01", "capabilities": map[string]any{}}))
	if str(r.body, "result.protocolVersion") != v2025 {
		t.Fatalf("initialize with an unknown version: %s", r.raw)
	}
	wantError(t, h.do("alice", nil, legacyBody(0, "initialize", map[string]any{"capabilities": map[string]any{}})), 200, -32602)
	// A session id this server did not make: the client starts anew.
	if r := h.legacy("alice", "mcs1.garbage", "tools/list", nil); r.status != http.StatusNotFound {
		t.Fatalf("an unknown session: want 404, got %d", r.status)
	}
	// A legacy version header this server does not serve.
	wantError(t, h.do("alice", map[string]string{"MCP-Protocol-Version": "2024-01-01"}, legacyBody(1, "tools/list", nil)), 400, -32022)
}

func TestLegacyTools(t *testing.T) {
	h := newHarness(t)
	session := h.initialize("alice", nil)
	r := h.legacy("alice", session, "tools/list", nil)
	tools := at(r.body, "result.tools").([]any)
	if len(tools) != 2 || str(r.body, "result.nextCursor") == "" || at(r.body, "result.resultType") != nil {
		t.Fatalf("tools/list, two a page: %s", r.raw)
	}
	for _, tool := range tools {
		if str(tool, "execution.taskSupport") != "optional" {
			t.Fatalf("each tool may be called as a task: %v", tool)
		}
	}
}

func TestLegacyTaskLifecycle(t *testing.T) {
	h := newHarness(t)
	session := h.initialize("alice", nil)
	r := h.legacy("alice", session, "tools/call", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"}, "task": map[string]any{"ttl": 60000}})
	task := at(r.body, "result.task")
	id := str(task, "taskId")
	if r.status != 200 || str(task, "status") != "working" || at(task, "ttl") != 60000.0 || at(task, "pollInterval") != 5000.0 ||
		str(task, "createdAt") == "" || str(task, "lastUpdatedAt") == "" || at(r.body, "result.resultType") != nil {
		t.Fatalf("CreateTaskResult: %s", r.raw)
	}
	if stored := h.b.stored(id); stored.Owner != "alice" || *stored.TTLMs != 60000 {
		t.Fatalf("the task as stored: %+v", stored)
	}
	r = h.legacy("alice", session, "tasks/get", map[string]any{"taskId": id})
	if str(r.body, "result.taskId") != id || str(r.body, "result.status") != "working" || at(r.body, "result.ttl") != 60000.0 {
		t.Fatalf("tasks/get: %s", r.raw)
	}
	h.b.ask(id, deployQuestion)
	if r = h.legacy("alice", session, "tasks/get", map[string]any{"taskId": id}); str(r.body, "result.status") != "input_required" ||
		at(r.body, "result.inputRequests") != nil {
		t.Fatalf("tasks/get input_required: %s", r.raw)
	}
	r = h.legacy("alice", session, "tasks/cancel", map[string]any{"taskId": id})
	if str(r.body, "result.status") != "cancelled" || str(r.body, "result.taskId") != id {
		t.Fatalf("tasks/cancel: %s", r.raw)
	}
	// An ended task is not cancelled again: invalid params.
	wantError(t, h.legacy("alice", session, "tasks/cancel", map[string]any{"taskId": id}), 200, -32602)
	// tasks/result of a cancelled task says so, tied to the task.
	r = h.legacy("alice", session, "tasks/result", map[string]any{"taskId": id})
	if at(r.body, "result.isError") != true || relatedTask(r.body["result"]) != id {
		t.Fatalf("tasks/result of a cancelled task: %s", r.raw)
	}
}

func TestLegacyOtherPrincipal(t *testing.T) {
	h := newHarness(t)
	id := h.legacyTask("alice", h.initialize("alice", nil))
	session := h.initialize("mallory", nil)
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/result"} {
		theirs := h.legacy("mallory", session, method, map[string]any{"taskId": id})
		missing := h.legacy("mallory", session, method, map[string]any{"taskId": "task_99"})
		wantError(t, theirs, 200, -32602)
		if string(mustJSON(theirs.body["error"])) != string(mustJSON(missing.body["error"])) {
			t.Fatalf("%s: another's task and a missing one differ", method)
		}
	}
	if h.b.stored(id).Status != wire.StatusWorking {
		t.Fatal("another principal changed the task")
	}
}

func TestLegacyTasksList(t *testing.T) {
	h := newHarness(t)
	session := h.initialize("alice", nil)
	a1, a2 := h.legacyTask("alice", session), h.legacyTask("alice", session)
	h.legacyTask("bob", h.initialize("bob", nil))
	a3 := h.legacyTask("alice", session)
	var ids []string
	cursor := ""
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		r := h.legacy("alice", session, "tasks/list", params)
		for _, task := range at(r.body, "result.tasks").([]any) {
			ids = append(ids, str(task, "taskId"))
		}
		if cursor = str(r.body, "result.nextCursor"); cursor == "" {
			break
		}
	}
	if !slices.Equal(ids, []string{a3, a2, a1}) {
		t.Fatalf("alice's tasks, newest first: %v", ids)
	}
	wantError(t, h.legacy("alice", session, "tasks/list", map[string]any{"cursor": "zzz"}), 200, -32602)
}

func TestLegacyResultHeld(t *testing.T) {
	h := newHarness(t)
	session := h.initialize("alice", nil) // no elicitation: a plain held answer
	id := h.legacyTask("alice", session)
	done := make(chan reply, 1)
	go func() { done <- h.legacy("alice", session, "tasks/result", map[string]any{"taskId": id}) }()
	h.waitWatching(id)
	h.b.ask(id, deployQuestion)
	h.waitWatching(id)
	h.b.complete(id, `{"url":"https://x.example"}`)
	r := <-done
	res := r.body["result"]
	if r.header.Get("Content-Type") != "application/json" || str(res, "structuredContent.url") != "https://x.example" ||
		relatedTask(res) != id || at(res, "resultType") != nil {
		t.Fatalf("tasks/result: %s", r.raw)
	}
	// A failed task's result is a tool error with its message.
	id = h.legacyTask("alice", session)
	h.b.fail(id, "disk full")
	r = h.legacy("alice", session, "tasks/result", map[string]any{"taskId": id})
	if at(r.body, "result.isError") != true || str(r.body, "result.content.0.text") != "disk full" {
		t.Fatalf("tasks/result of a failed task: %s", r.raw)
	}
}

// While tasks/result is held on one replica, its questions go out as
// elicitation/create on the stream, and the client's answer, posted to
// another replica, answers them.
func TestLegacyResultElicitation(t *testing.T) {
	h := newHarness(t)
	other := h.replica()
	session := h.initialize("alice", elicitCaps)
	id := h.legacyTask("alice", session)
	h.b.ask(id, deployQuestion, signIn)
	s := h.stream("alice", legacyHeaders(session), legacyBody("r1", "tasks/result", map[string]any{"taskId": id}))
	asked := map[string]map[string]any{}
	for range 2 {
		m := s.next()
		if str(m, "method") != "elicitation/create" || relatedTask(m["params"]) != id {
			t.Fatalf("an elicitation tied to the task: %v", m)
		}
		asked[str(m, "params.mode")] = m
	}
	form, url := asked["form"], asked["url"]
	if str(form, "id") != "taskhook/"+id+"/deploy" || str(form, "params.requestedSchema.properties.optionId.oneOf.0.const") != "yes" {
		t.Fatalf("the question: %v", form)
	}
	if str(url, "params.url") != signIn.AuthorizationURL || str(url, "params.elicitationId") != "req_gh" {
		t.Fatalf("the sign-in: %v", url)
	}
	// The answer reaches another replica, as the caller's.
	resp := other.do("alice", legacyHeaders(session),
		`{"jsonrpc":"2.0","id":"taskhook/`+id+`/deploy","result":{"action":"accept","content":{"optionId":"yes"}}}`)
	if resp.status != http.StatusAccepted {
		t.Fatalf("the answer: %d %s", resp.status, resp.raw)
	}
	// The sign-in's accept records nothing: its return does.
	other.do("alice", legacyHeaders(session), `{"jsonrpc":"2.0","id":"taskhook/`+id+`/req_gh","result":{"action":"accept"}}`)
	stored := h.b.stored(id)
	if len(stored.InputResponses) != 1 || stored.InputResponses[0].OptionID != "yes" || stored.InputResponses[0].Via != wire.ViaMCP {
		t.Fatalf("the answer as recorded: %+v", stored.InputResponses)
	}
	h.b.change(id, func(t *mcp.Task) { t.InputRequests, t.Status = nil, wire.StatusWorking }) // the sign-in returned
	if m := s.next(); str(m, "method") != "notifications/tasks/status" || str(m, "params.status") != "working" || str(m, "params.taskId") != id {
		t.Fatalf("a status notification: %v", m)
	}
	h.b.ask(id, noteQuestion)
	m := s.next() // input_required
	if str(m, "params.status") != "input_required" {
		t.Fatalf("status: %v", m)
	}
	if m = s.next(); str(m, "id") != "taskhook/"+id+"/note" {
		t.Fatalf("a new question is asked on the same stream: %v", m)
	}
	other.do("alice", legacyHeaders(session), `{"jsonrpc":"2.0","id":"taskhook/`+id+`/note","result":{"action":"accept","content":{"text":"ship it"}}}`)
	if m = s.next(); str(m, "params.status") != "working" {
		t.Fatalf("status: %v", m)
	}
	h.b.complete(id, `{"done":true}`)
	if m = s.next(); str(m, "params.status") != "completed" {
		t.Fatalf("status: %v", m)
	}
	res := s.next()
	if at(res, "id") != "r1" || at(res, "result.structuredContent.done") != true || relatedTask(res["result"]) != id {
		t.Fatalf("the result ends the stream: %v", res)
	}
	s.end()
	if got := h.b.stored(id).InputResponses; len(got) != 2 || got[1].Text != "ship it" {
		t.Fatalf("answers: %+v", got)
	}
}

func TestLegacyResponses(t *testing.T) {
	h := newHarness(t)
	session := h.initialize("alice", elicitCaps)
	id := h.legacyTask("alice", session)
	h.b.ask(id, deployQuestion)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":"not-ours","result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"action":"accept"}}`,
		`{"jsonrpc":"2.0","id":"taskhook/` + id + `/deploy","error":{"code":-1,"message":"the user closed the dialog"}}`,
		`{"jsonrpc":"2.0","id":"taskhook/` + id + `/gone","result":{"action":"decline"}}`,
	} {
		if r := h.do("alice", legacyHeaders(session), body); r.status != http.StatusAccepted {
			t.Fatalf("%s: want 202, got %d %s", body, r.status, r.raw)
		}
	}
	// Another principal's answer is taken and changes nothing.
	if r := h.do("mallory", nil, `{"jsonrpc":"2.0","id":"taskhook/`+id+`/deploy","result":{"action":"decline"}}`); r.status != http.StatusAccepted {
		t.Fatalf("another principal's answer: %d", r.status)
	}
	// A malformed answer is refused.
	r := h.do("alice", legacyHeaders(session), `{"jsonrpc":"2.0","id":"taskhook/`+id+`/deploy","result":{"action":"accept","content":{"optionId":"nope"}}}`)
	if r.status != http.StatusBadRequest || code(r) != -32602 {
		t.Fatalf("an answer outside the options: %d %s", r.status, r.raw)
	}
	if got := h.b.stored(id); len(got.InputResponses) != 0 || got.Status != wire.StatusInputRequired {
		t.Fatalf("nothing was answered: %+v", got)
	}
	r = h.do("alice", legacyHeaders(session), `{"jsonrpc":"2.0","id":"taskhook/`+id+`/deploy","result":{"action":"decline"}}`)
	if r.status != http.StatusAccepted || h.b.stored(id).InputResponses[0].Action != "decline" {
		t.Fatalf("a decline: %d %+v", r.status, h.b.stored(id).InputResponses)
	}
}

// A call without a task from a 2025-11-25 client: progress with the
// answer URL, the questions as elicitations, then the result.
func TestLegacySyncCall(t *testing.T) {
	h := newHarness(t)
	session := h.initialize("alice", map[string]any{"elicitation": map[string]any{}})
	s := h.stream("alice", legacyHeaders(session), legacyBody(9, "tools/call", map[string]any{"name": "devbox",
		"arguments": map[string]any{"repo": "r"}, "_meta": map[string]any{"progressToken": 44}}))
	if m := s.next(); str(m, "method") != "notifications/progress" || at(m, "params.progressToken") != 44.0 {
		t.Fatalf("progress: %v", m)
	}
	h.b.ask("task_01", deployQuestion)
	if m := s.next(); str(m, "params.message") != "Deploy to staging? (answer at http://localhost:8080/v1/input/ans_deploy)" {
		t.Fatalf("progress with the answer URL: %v", m)
	}
	m := s.next()
	if str(m, "method") != "elicitation/create" || str(m, "id") != "taskhook/task_01/deploy" || relatedTask(m["params"]) != "" {
		t.Fatalf("the question as an elicitation, tied to no task the client knows: %v", m)
	}
	h.b.complete("task_01", `{"a":1}`)
	s.next() // progress
	res := s.next()
	if at(res, "id") != 9.0 || at(res, "result.structuredContent.a") != 1.0 || relatedTask(res["result"]) != "" {
		t.Fatalf("the result: %v", res)
	}
	s.end()

	// Without a progressToken or elicitation, one JSON answer.
	plain := h.initialize("alice", nil)
	done := make(chan reply, 1)
	go func() {
		done <- h.legacy("alice", plain, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}})
	}()
	h.waitWatching("task_02")
	h.b.complete("task_02", `"hi"`)
	if r := <-done; str(r.body, "result.content.0.text") != `"hi"` || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("a plain sync call: %s", r.raw)
	}
}

// Arguments outside the schema: a call that asked for a task gets invalid
// params naming the field (its client reads a task or an error, never a
// CallToolResult), and nothing is started; a call without a task gets the
// tool error the model can read.
func TestLegacyCallArguments(t *testing.T) {
	h := newHarness(t)
	session := h.initialize("alice", nil)
	r := h.legacy("alice", session, "tools/call", map[string]any{"name": "devbox", "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}})
	wantError(t, r, 200, -32602)
	if str(r.body, "error.data.details.0.field") != "arguments.repo" || at(r.body, "result") != nil {
		t.Fatalf("a task-augmented call outside the schema: %s", r.raw)
	}
	r = h.legacy("alice", session, "tools/call", map[string]any{"name": "devbox", "arguments": map[string]any{}, "task": map[string]any{}})
	wantError(t, r, 200, -32602)
	r = h.legacy("alice", session, "tools/call", map[string]any{"name": "devbox", "arguments": map[string]any{}})
	if at(r.body, "result.isError") != true || str(r.body, "result.content.0.text") == "" || at(r.body, "result.task") != nil {
		t.Fatalf("a call outside the schema: %s", r.raw)
	}
	if len(h.b.order) != 0 {
		t.Fatalf("a task was started: %v", h.b.order)
	}
}
