package mcp_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/mcp"
)

var deployQuestion = wire.InputRequest{RequestID: "deploy", Prompt: "Deploy to staging?", Display: wire.DisplayConfirmation,
	Options: []wire.Option{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No", Description: "stop here"}}}

var noteQuestion = wire.InputRequest{RequestID: "note", Prompt: "Anything to add?", Display: wire.DisplayText}

var signIn = wire.InputRequest{RequestID: "req_gh", Kind: wire.KindAuthorization, Prompt: "Sign in to GitHub",
	Connection: "github", AuthorizationURL: "https://github.example/login?state=a&x=b"}

// callTask calls devbox as a task: its id.
func (h *harness) callTask(token string) string {
	h.t.Helper()
	r := h.modern(token, "tools/call", "devbox", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "acme/api"}}, tasksCaps)
	id := str(r.body, "result.taskId")
	if r.status != 200 || id == "" {
		h.t.Fatalf("tools/call: %d %s", r.status, r.raw)
	}
	return id
}

func (h *harness) getTask(token, id string) reply {
	h.t.Helper()
	return h.modern(token, "tasks/get", id, map[string]any{"taskId": id}, tasksCaps)
}

func TestModernDiscoverAndList(t *testing.T) {
	h := newHarness(t)
	r := h.modern("alice", "server/discover", "", nil, nil)
	res := r.body["result"]
	if r.status != 200 || str(res, "resultType") != "complete" || at(res, "supportedVersions.0") != v2026 {
		t.Fatalf("discover: %s", r.raw)
	}
	ext, _ := at(res, "capabilities.extensions").(map[string]any)
	if _, ok := ext["io.modelcontextprotocol/tasks"]; !ok || at(res, "capabilities.tools") == nil {
		t.Fatalf("discover lists tools and the tasks extension: %s", r.raw)
	}
	meta, _ := at(res, "_meta").(map[string]any)
	if info, _ := meta["io.modelcontextprotocol/serverInfo"].(map[string]any); info["name"] != "taskhook" || info["version"] != "1.2.3" {
		t.Fatalf("serverInfo: %s", r.raw)
	}

	// alice may call devbox, echo and sum (not bob's private tool), two a page.
	var names []string
	cursor := ""
	for pages := 0; ; pages++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		r := h.modern("alice", "tools/list", "", params, nil)
		res := r.body["result"]
		if str(res, "resultType") != "complete" || str(res, "cacheScope") != "private" || at(res, "ttlMs") == nil {
			t.Fatalf("tools/list: %s", r.raw)
		}
		for _, tool := range at(res, "tools").([]any) {
			names = append(names, str(tool, "name"))
			if at(tool, "execution") != nil {
				t.Fatalf("no execution under 2026-07-28: %v", tool)
			}
		}
		if cursor = str(res, "nextCursor"); cursor == "" {
			break
		}
	}
	if !slices.Equal(names, []string{"devbox", "echo", "sum"}) {
		t.Fatalf("alice's tools: %v", names)
	}
	r = h.modern("alice", "tools/list", "", map[string]any{"cursor": "nonsense"}, nil)
	wantError(t, r, 200, -32602)

	r = h.modern("alice", "tools/list", "", nil, nil)
	devbox := at(r.body, "result.tools.0")
	if str(devbox, "title") != "Dev box" || str(devbox, "inputSchema.type") != "object" || str(devbox, "outputSchema.type") != "object" {
		t.Fatalf("devbox as listed: %v", devbox)
	}
}

func TestModernTaskLifecycle(t *testing.T) {
	h := newHarness(t)
	r := h.modern("alice", "tools/call", "devbox", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "acme/api"}}, tasksCaps)
	res := r.body["result"]
	id := str(res, "taskId")
	if r.status != 200 || str(res, "resultType") != "task" || str(res, "status") != "working" ||
		at(res, "ttlMs") != 604800000.0 || at(res, "pollIntervalMs") != 5000.0 || str(res, "createdAt") == "" || str(res, "lastUpdatedAt") == "" {
		t.Fatalf("CreateTaskResult: %s", r.raw)
	}
	// Durable before the answer: the backend holds it, owned by the caller,
	// executed by the publisher.
	if stored := h.b.stored(id); stored.Owner != "alice" || stored.Kind != "devbox" || string(stored.Input) != `{"repo":"acme/api"}` {
		t.Fatalf("stored task: %+v", stored)
	}

	r = h.getTask("alice", id)
	if str(r.body, "result.resultType") != "complete" || str(r.body, "result.status") != "working" || at(r.body, "result.inputRequests") != nil {
		t.Fatalf("tasks/get working: %s", r.raw)
	}

	h.b.ask(id, deployQuestion, noteQuestion, signIn)
	r = h.getTask("alice", id)
	res = r.body["result"]
	if str(res, "status") != "input_required" || str(res, "statusMessage") != "Deploy to staging?" {
		t.Fatalf("tasks/get input_required: %s", r.raw)
	}
	reqs, _ := at(res, "inputRequests").(map[string]any)
	if len(reqs) != 3 {
		t.Fatalf("inputRequests, keyed by request id: %s", r.raw)
	}
	deploy := reqs["deploy"]
	if str(deploy, "method") != "elicitation/create" || str(deploy, "params.mode") != "form" || str(deploy, "params.message") != "Deploy to staging?" ||
		str(deploy, "params.requestedSchema.properties.optionId.oneOf.1.const") != "no" ||
		str(deploy, "params.requestedSchema.properties.optionId.oneOf.1.title") != "No (stop here)" ||
		str(deploy, "params.requestedSchema.required.0") != "optionId" || at(deploy, "params.requestedSchema.properties.text") != nil {
		t.Fatalf("a question as a form: %v", deploy)
	}
	if note := reqs["note"]; str(note, "params.requestedSchema.properties.text.type") != "string" || str(note, "params.requestedSchema.required.0") != "text" {
		t.Fatalf("a text question as a form: %v", note)
	}
	if gh := reqs["req_gh"]; str(gh, "params.mode") != "url" || str(gh, "params.url") != signIn.AuthorizationURL || at(gh, "params.elicitationId") != nil {
		t.Fatalf("a sign-in as a url elicitation: %v", gh)
	}

	// Answers: one accepted, one declined, an unknown key and the sign-in's
	// accept ignored.
	r = h.modern("alice", "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
		"deploy": map[string]any{"action": "accept", "content": map[string]any{"optionId": "yes"}},
		"note":   map[string]any{"action": "decline"},
		"req_gh": map[string]any{"action": "accept"},
		"ghost":  map[string]any{"action": "accept", "content": map[string]any{"optionId": "x"}},
	}}, tasksCaps)
	if r.status != 200 || str(r.body, "result.resultType") != "complete" || r.body["error"] != nil {
		t.Fatalf("tasks/update: %s", r.raw)
	}
	stored := h.b.stored(id)
	if len(stored.InputResponses) != 2 || stored.InputResponses[0].RequestID != "deploy" || stored.InputResponses[0].OptionID != "yes" ||
		stored.InputResponses[1].Action != "decline" || stored.InputResponses[0].Via != wire.ViaMCP || stored.InputResponses[0].AnsweredBy != "alice" {
		t.Fatalf("answers recorded: %+v", stored.InputResponses)
	}
	if len(stored.InputRequests) != 1 || stored.InputRequests[0].RequestID != "req_gh" {
		t.Fatalf("the sign-in stays open: %+v", stored.InputRequests)
	}
	// An answered key again, and a key never asked: ignored, acknowledged.
	rev := stored.Revision
	r = h.modern("alice", "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
		"deploy": map[string]any{"action": "accept", "content": map[string]any{"optionId": "no"}}}}, tasksCaps)
	if r.status != 200 || r.body["error"] != nil || h.b.stored(id).Revision != rev {
		t.Fatalf("an answered key is ignored: %s", r.raw)
	}
	// A malformed answer to an open request is invalid params.
	h.b.ask(id, wire.InputRequest{RequestID: "pick", Prompt: "Pick", Options: []wire.Option{{ID: "a", Label: "A"}}})
	for _, bad := range []map[string]any{
		{"action": "accept"},
		{"action": "accept", "content": map[string]any{"optionId": 3}},
		{"action": "maybe"},
		{"action": "accept", "content": map[string]any{"optionId": "zzz"}},
	} {
		r = h.modern("alice", "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{"pick": bad}}, tasksCaps)
		wantError(t, r, 200, -32602)
	}

	h.b.complete(id, `{"url":"https://staging.example/acme"}`)
	r = h.getTask("alice", id)
	res = r.body["result"]
	if str(res, "status") != "completed" || str(res, "result.content.0.type") != "text" ||
		str(res, "result.content.0.text") != `{"url":"https://staging.example/acme"}` ||
		str(res, "result.structuredContent.url") != "https://staging.example/acme" || at(res, "result.isError") != nil {
		t.Fatalf("a completed task's result: %s", r.raw)
	}
	// Cancel of an ended task is acknowledged under this generation.
	r = h.modern("alice", "tasks/cancel", id, map[string]any{"taskId": id}, tasksCaps)
	if r.status != 200 || str(r.body, "result.resultType") != "complete" {
		t.Fatalf("tasks/cancel of an ended task: %s", r.raw)
	}
}

func TestModernCancelAndFail(t *testing.T) {
	h := newHarness(t)
	id := h.callTask("alice")
	r := h.modern("alice", "tasks/cancel", id, map[string]any{"taskId": id}, tasksCaps)
	if r.status != 200 || str(r.body, "result.resultType") != "complete" || h.b.stored(id).Status != wire.StatusCancelled {
		t.Fatalf("tasks/cancel: %s", r.raw)
	}
	if r = h.getTask("alice", id); str(r.body, "result.status") != "cancelled" || str(r.body, "result.statusMessage") == "" {
		t.Fatalf("a cancelled task: %s", r.raw)
	}
	id = h.callTask("alice")
	h.b.fail(id, "the box ran out of disk")
	r = h.getTask("alice", id)
	if str(r.body, "result.status") != "failed" || at(r.body, "result.error.code") != -32603.0 ||
		str(r.body, "result.error.message") != "the box ran out of disk" || at(r.body, "result.result") != nil {
		t.Fatalf("a failed task: %s", r.raw)
	}
}

// Another principal's task, and one that does not exist, answer alike on
// every task method.
func TestModernOtherPrincipal(t *testing.T) {
	h := newHarness(t)
	id := h.callTask("alice")
	h.b.ask(id, deployQuestion)
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		params := map[string]any{"taskId": id, "inputResponses": map[string]any{"deploy": map[string]any{"action": "decline"}}}
		theirs := h.modern("mallory", method, id, params, tasksCaps)
		params["taskId"] = "task_99"
		missing := h.modern("mallory", method, "task_99", params, tasksCaps)
		wantError(t, theirs, 200, -32602)
		if at(theirs.body, "error") == nil || string(mustJSON(theirs.body["error"])) != string(mustJSON(missing.body["error"])) {
			t.Fatalf("%s: another's task and a missing one differ: %s / %s", method, theirs.raw, missing.raw)
		}
	}
	if stored := h.b.stored(id); len(stored.InputResponses) != 0 || stored.Status != wire.StatusInputRequired {
		t.Fatalf("another principal changed the task: %+v", stored)
	}
	// The executor may read it; only the owner cancels.
	if r := h.getTask("exec", id); str(r.body, "result.status") != "input_required" {
		t.Fatalf("the executor reads the task: %s", r.raw)
	}
	wantError(t, h.modern("exec", "tasks/cancel", id, map[string]any{"taskId": id}, tasksCaps), 200, -32602)
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func TestModernNeedsTheExtension(t *testing.T) {
	h := newHarness(t)
	id := h.callTask("alice")
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		r := h.modern("alice", method, id, map[string]any{"taskId": id, "inputResponses": map[string]any{}}, nil)
		wantError(t, r, 400, -32021)
		ext, _ := at(r.body, "error.data.requiredCapabilities.extensions").(map[string]any)
		if _, ok := ext["io.modelcontextprotocol/tasks"]; !ok {
			t.Fatalf("%s: the missing capability named: %s", method, r.raw)
		}
	}
	r := h.modern("alice", "subscriptions/listen", "", map[string]any{"notifications": map[string]any{"taskIds": []string{id}}}, nil)
	wantError(t, r, 400, -32021)
}

func TestModernCallErrors(t *testing.T) {
	h := newHarness(t)
	// A tool the caller may not call does not exist for it.
	r := h.modern("alice", "tools/call", "private", map[string]any{"name": "private"}, tasksCaps)
	wantError(t, r, 200, -32602)
	r = h.modern("alice", "tools/call", "nope", map[string]any{"name": "nope"}, tasksCaps)
	wantError(t, r, 200, -32602)
	r = h.modern("alice", "tools/call", "devbox", map[string]any{"name": "devbox", "arguments": []int{1}}, tasksCaps)
	wantError(t, r, 200, -32602)
	// Arguments outside the schema are a tool error the model can read.
	r = h.modern("alice", "tools/call", "devbox", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": 5}}, tasksCaps)
	res := r.body["result"]
	if r.status != 200 || at(res, "isError") != true || str(res, "resultType") != "complete" || str(res, "content.0.text") == "" {
		t.Fatalf("arguments outside the schema: %s", r.raw)
	}
}

// A client without the extension gets the result once the task ends.
func TestModernSyncCall(t *testing.T) {
	h := newHarness(t)
	done := make(chan reply, 1)
	go func() {
		done <- h.modern("alice", "tools/call", "devbox", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"}}, nil)
	}()
	h.waitWatching("task_01")
	h.b.ask("task_01", deployQuestion) // no elicitation declared: the call goes on waiting
	h.waitWatching("task_01")
	h.b.complete("task_01", `[1,2]`)
	r := <-done
	res := r.body["result"]
	if r.status != 200 || str(res, "resultType") != "complete" || str(res, "content.0.text") != "[1,2]" || at(res, "structuredContent") != nil {
		t.Fatalf("a sync call's result: %s", r.raw)
	}

	// A failed task is the JSON-RPC error the call ended in.
	go func() {
		done <- h.modern("alice", "tools/call", "devbox", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"}}, nil)
	}()
	h.waitWatching("task_02")
	h.b.fail("task_02", "no such repo")
	r = <-done
	if code(r) != -32603 || str(r.body, "error.message") != "no such repo" {
		t.Fatalf("a sync call whose task failed: %s", r.raw)
	}
}

// A sync call with a progressToken streams progress, each question with
// its answer URL.
func TestModernSyncCallProgress(t *testing.T) {
	h := newHarness(t)
	s := h.stream("alice", modernHeaders("tools/call", "devbox"), modernBody(5, "tools/call", map[string]any{
		"name": "devbox", "arguments": map[string]any{"repo": "r"}, "_meta": map[string]any{"progressToken": "p1"}}, nil))
	first := s.next()
	if str(first, "method") != "notifications/progress" || str(first, "params.progressToken") != "p1" || at(first, "params.progress") != 1.0 {
		t.Fatalf("first progress: %v", first)
	}
	h.b.ask("task_01", deployQuestion)
	asked := s.next()
	if str(asked, "params.message") != "Deploy to staging? (answer at http://localhost:8080/v1/input/ans_deploy)" || at(asked, "params.progress") != 2.0 {
		t.Fatalf("progress while input is required: %v", asked)
	}
	h.b.complete("task_01", `{"ok":true}`)
	if last := s.next(); str(last, "method") != "notifications/progress" {
		t.Fatalf("progress at the end: %v", last)
	}
	res := s.next()
	if at(res, "id") != 5.0 || at(res, "result.structuredContent.ok") != true {
		t.Fatalf("the result ends the stream: %v", res)
	}
	s.end()
}

// A sync call from a client that takes elicitations asks by input_required
// results: the retry's answers reach the task, the result follows.
func TestModernSyncCallInputRequired(t *testing.T) {
	h := newHarness(t)
	caps := map[string]any{"elicitation": map[string]any{}}
	done := make(chan reply, 1)
	go func() {
		done <- h.modern("alice", "tools/call", "devbox", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"}}, caps)
	}()
	h.waitWatching("task_01")
	h.b.ask("task_01", deployQuestion, signIn) // form only: the sign-in is not asked
	r := <-done
	res := r.body["result"]
	reqs, _ := at(res, "inputRequests").(map[string]any)
	if str(res, "resultType") != "input_required" || str(res, "requestState") != "task_01" || len(reqs) != 1 || str(reqs["deploy"], "params.mode") != "form" {
		t.Fatalf("input_required: %s", r.raw)
	}
	retry := map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"}, "requestState": "task_01",
		"inputResponses": map[string]any{"deploy": map[string]any{"action": "accept", "content": map[string]any{"optionId": "yes"}}}}
	go func() { done <- h.modern("alice", "tools/call", "devbox", retry, caps) }()
	h.waitWatching("task_01")
	if stored := h.b.stored("task_01"); len(stored.InputResponses) != 1 || stored.InputResponses[0].OptionID != "yes" {
		t.Fatalf("the retry's answer: %+v", stored.InputResponses)
	}
	h.b.complete("task_01", `"done"`)
	if r = <-done; str(r.body, "result.content.0.text") != `"done"` {
		t.Fatalf("the retried call's result: %s", r.raw)
	}
	// A requestState of another tool, or of another's task, does not resume.
	retry["name"] = "echo"
	wantError(t, h.do("alice", modernHeaders("tools/call", "echo"), modernBody(2, "tools/call", retry, caps)), 200, -32602)
	retry["name"] = "devbox"
	wantError(t, h.modern("bob", "tools/call", "devbox", retry, caps), 200, -32602)
}

func TestModernListen(t *testing.T) {
	h := newHarness(t)
	a, b := h.callTask("alice"), h.callTask("alice")
	theirs := h.callTask("bob")
	s := h.stream("alice", modernHeaders("subscriptions/listen", ""), modernBody("sub-1", "subscriptions/listen",
		map[string]any{"notifications": map[string]any{"taskIds": []string{a, b, theirs, "task_99"}, "toolsListChanged": true}}, tasksCaps))
	ack := s.next()
	meta, _ := at(ack, "params._meta").(map[string]any)
	if str(ack, "method") != "notifications/subscriptions/acknowledged" || meta["io.modelcontextprotocol/subscriptionId"] != "sub-1" {
		t.Fatalf("ack: %v", ack)
	}
	if ids := at(ack, "params.notifications.taskIds").([]any); len(ids) != 2 || ids[0] != a || ids[1] != b ||
		at(ack, "params.notifications.toolsListChanged") != nil {
		t.Fatalf("only the caller's tasks are acknowledged, only task ids: %v", ack)
	}
	seen := map[string]string{}
	for range 2 {
		n := s.next()
		if str(n, "method") != "notifications/tasks" {
			t.Fatalf("the tasks' state: %v", n)
		}
		seen[str(n, "params.taskId")] = str(n, "params.status")
	}
	if seen[a] != "working" || seen[b] != "working" {
		t.Fatalf("states: %v", seen)
	}
	h.waitWatching(a)
	h.b.ask(a, deployQuestion)
	n := s.next()
	if str(n, "params.taskId") != a || str(n, "params.status") != "input_required" || at(n, "params.inputRequests.deploy.method") != "elicitation/create" {
		t.Fatalf("a change: %v", n)
	}
	nmeta, _ := at(n, "params._meta").(map[string]any)
	if nmeta["io.modelcontextprotocol/subscriptionId"] != "sub-1" {
		t.Fatalf("each notification names the subscription: %v", n)
	}
	h.b.complete(a, `{"x":1}`)
	h.b.fail(b, "boom")
	got := map[string]string{}
	for range 2 {
		n := s.next()
		got[str(n, "params.taskId")] = str(n, "params.status")
	}
	if got[a] != "completed" || got[b] != "failed" {
		t.Fatalf("ends: %v", got)
	}
	end := s.next()
	if at(end, "id") != "sub-1" || str(end, "result.resultType") != "complete" {
		t.Fatalf("the subscription ends with its answer once every task ended: %v", end)
	}
	s.end()
}

func TestModernListenNeedsAStream(t *testing.T) {
	h := newHarness(t)
	r := h.do("alice", map[string]string{"MCP-Protocol-Version": v2026, "Mcp-Method": "subscriptions/listen", "Accept": "application/json"},
		modernBody(1, "subscriptions/listen", map[string]any{"notifications": map[string]any{}}, tasksCaps))
	wantError(t, r, http.StatusBadRequest, -32600)
}

// Parker holds answers off the handler where app gives one.
func TestParkerHoldsHeldAnswers(t *testing.T) {
	parked := make(chan mcp.Held, 1)
	h := newHarness(t, func(c *mcp.Config) {
		c.Park = func(w http.ResponseWriter, r *http.Request, held mcp.Held) bool {
			parked <- held
			// A parker would take the connection; this one drives the wait
			// before the handler returns, as the services' watches allow.
			for {
				ctx := r.Context()
				t, err := held.Begin(ctx).Wait(ctx)
				if !held.Step(t, err) {
					break
				}
			}
			held.Write(w)
			return true
		}
	})
	done := make(chan reply, 1)
	go func() {
		done <- h.modern("alice", "tools/call", "devbox", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"}}, nil)
	}()
	<-parked
	h.waitWatching("task_01")
	h.b.complete("task_01", `{"y":2}`)
	if r := <-done; at(r.body, "result.structuredContent.y") != 2.0 || at(r.body, "id") != 1.0 {
		t.Fatalf("a parked answer: %s", r.raw)
	}
}

func TestDrainingEndsHeldAnswers(t *testing.T) {
	draining := make(chan struct{})
	h := newHarness(t, func(c *mcp.Config) { c.Draining = draining })
	done := make(chan reply, 1)
	go func() {
		done <- h.modern("alice", "tools/call", "devbox", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"}}, nil)
	}()
	h.waitWatching("task_01")
	close(draining)
	h.b.change("task_01", func(t *mcp.Task) { t.StatusMessage = "still going" }) // the wake the drain makes
	r := <-done
	wantError(t, r, 503, -32603)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("a drained answer says when to retry")
	}
}

// A server that shuts down ends a listen stream with its answer: the
// client subscribes again, on another replica.
func TestModernListenEndsOnDrain(t *testing.T) {
	draining := make(chan struct{})
	h := newHarness(t, func(c *mcp.Config) { c.Draining = draining })
	id := h.callTask("alice")
	s := h.stream("alice", modernHeaders("subscriptions/listen", ""), modernBody(8, "subscriptions/listen",
		map[string]any{"notifications": map[string]any{"taskIds": []string{id}}}, tasksCaps))
	s.next() // acknowledged
	s.next() // the task
	h.waitWatching(id)
	close(draining)
	h.b.change(id, func(t *mcp.Task) { t.StatusMessage = "draining" }) // the wake the drain makes
	end := s.next()
	meta, _ := at(end, "result._meta").(map[string]any)
	if at(end, "id") != 8.0 || str(end, "result.resultType") != "complete" || meta["io.modelcontextprotocol/subscriptionId"] != 8.0 {
		t.Fatalf("a drained subscription's answer: %v", end)
	}
	s.end()
}
