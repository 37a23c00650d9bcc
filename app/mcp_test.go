package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/api/apitest"
	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/jsonpath"
	"github.com/taskhook/taskhook/store/storetest"
)

// The MCP tests speak JSON-RPC as the specification writes it, with no
// client library: what a request is, byte for byte, is in the test.

const (
	mcpModern = "2026-07-28"
	mcpTasks  = "2025-11-25"
	extTasks  = "io.modelcontextprotocol/tasks"
)

// mcpReply is one answer of /mcp: its status, headers and JSON body.
type mcpReply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// mcpCaller posts to a server's /mcp as one principal (token "" for none).
type mcpCaller struct {
	t      *testing.T
	url    string
	token  string
	client *http.Client // nil: http.DefaultClient
}

func (c *mcpCaller) do(req *http.Request) (*http.Response, error) {
	if c.client != nil {
		return c.client.Do(req)
	}
	return http.DefaultClient.Do(req)
}

func newMCPCaller(t *testing.T, srv *apptest.Server, subject string) *mcpCaller {
	token := ""
	if subject != "" {
		token = apptest.Token(t, subject)
	}
	return &mcpCaller{t: t, url: srv.URL + "/mcp", token: token}
}

// post sends one JSON-RPC message with the headers given.
func (c *mcpCaller) post(headers map[string]string, body any) mcpReply {
	c.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := c.do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := mcpReply{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		// The answer is the last data line of the stream.
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				r.raw = d
			}
		}
	}
	if r.raw != "" {
		_ = json.Unmarshal([]byte(r.raw), &r.body)
	}
	return r
}

// modern sends a request of the stateless generation: its version, the
// client's capabilities (the tasks extension) in _meta, and the headers
// that mirror the method and the name.
func (c *mcpCaller) modern(method, name string, params map[string]any) mcpReply {
	c.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcpModern,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{extTasks: map[string]any{}}},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"},
	}
	h := map[string]string{"MCP-Protocol-Version": mcpModern, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return c.post(h, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

// jsonAt and jsonStr read a dotted path (numbers index arrays) of a decoded
// JSON value.
var jsonAt, jsonStr = jsonpath.At, jsonpath.String

// rpcCode is the JSON-RPC error code of a reply, 0 for none.
func (r mcpReply) rpcCode() int {
	n, _ := jsonAt(r.body, "error.code").(float64)
	return int(n)
}

// publishTool publishes a tool anybody may call, as publisher: an object
// of one required string, repo; its webhooks go to endpoint.
func publishTool(t testing.TB, srv *apptest.Server, publisher, name, endpoint string) {
	t.Helper()
	_, _, err := srv.Client(t, publisher).PutTool(context.Background(), name, client.PutToolInput{
		Description: "Works on a repository.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}, "required": []string{"repo"}},
		Callers:     []string{"*"},
		Endpoint:    &client.EndpointRequest{URL: endpoint},
	})
	if err != nil {
		t.Fatalf("publishing %s: %v", name, err)
	}
}

// offerDevbox publishes the devbox tool as publisher, its webhooks going to
// a receiver of the test's that answers them all, and returns the
// publisher's client: the executor of the tool's tasks.
func offerDevbox(t testing.TB, srv *apptest.Server, publisher string) *client.Client {
	t.Helper()
	publishTool(t, srv, publisher, "devbox", receivertest.New(t, nil).URL)
	return srv.Client(t, publisher)
}

func mcpConfig() app.Config {
	cfg := notifyConfig()
	cfg.PublicURL = "http://taskhook.test"
	return cfg
}

// The stateless generation through the real server, on every store: a
// tool's call is a durable task its publisher executes, followed, answered
// and ended over MCP, and nobody else's.
func TestMCPModernThroughTheServer(t *testing.T) {
	apptest.EachBackend(t, mcpConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		executor := offerDevbox(t, srv, "mcp-publisher")
		caller := newMCPCaller(t, srv, "mcp-caller")
		owner := srv.Client(t, "mcp-caller")

		r := caller.modern("server/discover", "", nil)
		exts, _ := jsonAt(r.body, "result.capabilities.extensions").(map[string]any)
		if r.status != 200 || exts[extTasks] == nil {
			t.Fatalf("server/discover: %d %s", r.status, r.raw)
		}
		r = caller.modern("tools/list", "", nil)
		if jsonStr(r.body, "result.tools.0.name") != "devbox" || jsonStr(r.body, "result.tools.0.inputSchema.required.0") != "repo" {
			t.Fatalf("tools/list: %s", r.raw)
		}

		// The call: a task, durable before the answer, the caller's, the
		// publisher's to execute.
		r = caller.modern("tools/call", "devbox", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "acme/api"}})
		id := jsonStr(r.body, "result.taskId")
		if r.status != 200 || jsonStr(r.body, "result.resultType") != "task" || jsonStr(r.body, "result.status") != "working" || id == "" {
			t.Fatalf("tools/call: %d %s", r.status, r.raw)
		}
		task, err := owner.GetTask(ctx, id)
		if err != nil || task.Owner != "mcp-caller" || task.Executor != "mcp-publisher" || task.Kind != "devbox" || string(task.Input) != `{"repo":"acme/api"}` {
			t.Fatalf("the task read right after the call: %+v %v", task, err)
		}

		// A question, as an elicitation in tasks/get.
		if _, err := executor.RequireInput(ctx, id, []client.InputRequest{{RequestID: "deploy", Kind: "ask", Prompt: "Deploy?",
			Options: []client.Choice{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No"}}}}); err != nil {
			t.Fatal(err)
		}
		r = caller.modern("tasks/get", id, map[string]any{"taskId": id})
		if jsonStr(r.body, "result.status") != "input_required" || jsonStr(r.body, "result.inputRequests.deploy.params.mode") != "form" ||
			jsonStr(r.body, "result.inputRequests.deploy.params.requestedSchema.properties.optionId.oneOf.0.const") != "yes" {
			t.Fatalf("tasks/get with a question: %s", r.raw)
		}
		// The answer, with a key that names no request: that one is ignored.
		r = caller.modern("tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
			"deploy": map[string]any{"action": "accept", "content": map[string]any{"optionId": "yes"}},
			"ghost":  map[string]any{"action": "accept", "content": map[string]any{"optionId": "x"}},
		}})
		if r.status != 200 || r.body["error"] != nil {
			t.Fatalf("tasks/update: %s", r.raw)
		}
		task, err = owner.GetTask(ctx, id)
		if err != nil || task.Status != "working" || len(task.InputResponses) != 1 || task.InputResponses[0].Via != "mcp" ||
			task.InputResponses[0].AnsweredBy != "mcp-caller" || task.InputResponses[0].OptionID != "yes" {
			t.Fatalf("the answer recorded: %+v %v", task, err)
		}
		// Answered again: ignored, nothing changes.
		r = caller.modern("tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
			"deploy": map[string]any{"action": "accept", "content": map[string]any{"optionId": "no"}}}})
		if again, err := owner.GetTask(ctx, id); r.body["error"] != nil || err != nil || again.Revision != task.Revision {
			t.Fatalf("an answered key again: %s; task %+v %v", r.raw, again, err)
		}

		if _, err := executor.Complete(ctx, id, map[string]any{"ok": true}); err != nil {
			t.Fatal(err)
		}
		r = caller.modern("tasks/get", id, map[string]any{"taskId": id})
		if jsonStr(r.body, "result.status") != "completed" || jsonAt(r.body, "result.result.structuredContent.ok") != true {
			t.Fatalf("tasks/get completed: %s", r.raw)
		}
		if r = caller.modern("tasks/result", id, map[string]any{"taskId": id}); r.rpcCode() != -32601 {
			t.Fatalf("tasks/result in the stateless generation: %d %s", r.status, r.raw)
		}

		// Cancel: acknowledged, and the task is cancelled.
		r = caller.modern("tools/call", "devbox", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "acme/web"}})
		second := jsonStr(r.body, "result.taskId")
		if r = caller.modern("tasks/cancel", second, map[string]any{"taskId": second}); r.status != 200 || r.body["error"] != nil {
			t.Fatalf("tasks/cancel: %s", r.raw)
		}
		if got, err := owner.GetTask(ctx, second); err != nil || got.Status != "cancelled" {
			t.Fatalf("the cancelled task: %+v %v", got, err)
		}

		// Another principal: every task method answers as for a missing id.
		stranger := newMCPCaller(t, srv, "mcp-stranger")
		for _, m := range []struct {
			method string
			params func(id string) map[string]any
		}{
			{"tasks/get", func(id string) map[string]any { return map[string]any{"taskId": id} }},
			{"tasks/cancel", func(id string) map[string]any { return map[string]any{"taskId": id} }},
			{"tasks/update", func(id string) map[string]any {
				return map[string]any{"taskId": id, "inputResponses": map[string]any{"deploy": map[string]any{"action": "decline"}}}
			}},
		} {
			theirs := stranger.modern(m.method, second, m.params(second))
			missing := stranger.modern(m.method, "task_missing", m.params("task_missing"))
			if theirs.rpcCode() != -32602 || theirs.status != missing.status ||
				strings.ReplaceAll(theirs.raw, second, "") != strings.ReplaceAll(missing.raw, "task_missing", "") {
				t.Fatalf("%s on another's task: %d %s; on a missing one: %d %s", m.method, theirs.status, theirs.raw, missing.status, missing.raw)
			}
		}
		if r = stranger.modern("tools/list", "", nil); r.status != 200 {
			t.Fatalf("tools/list as a stranger: %s", r.raw)
		}
	})
}

// /mcp's refusals before any method runs: no token, a foreign Origin, a
// version header the body contradicts.
func TestMCPRefusesAtTheDoor(t *testing.T) {
	t.Parallel()
	srv := apptest.Embedded(t, mcpConfig())

	anon := newMCPCaller(t, srv, "")
	r := anon.modern("tools/list", "", nil)
	want := `resource_metadata="http://taskhook.test/.well-known/oauth-protected-resource"`
	if r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("WWW-Authenticate"), want) {
		t.Fatalf("no token: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	res, err := http.Get(srv.URL + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	_ = json.NewDecoder(res.Body).Decode(&doc)
	res.Body.Close()
	if res.StatusCode != 200 || doc["resource"] != "http://taskhook.test/mcp" {
		t.Fatalf("the protected resource metadata: %d %v", res.StatusCode, doc)
	}

	forged := &mcpCaller{t: t, url: srv.URL + "/mcp", token: "not-a-jwt"}
	if r := forged.modern("tools/list", "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("a bad token: %d %s", r.status, r.raw)
	}

	caller := newMCPCaller(t, srv, "door-caller")
	body := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion": mcpModern, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}}}
	if r := caller.post(map[string]string{"MCP-Protocol-Version": mcpModern, "Mcp-Method": "tools/list", "Origin": "https://evil.example"}, body); r.status != http.StatusForbidden {
		t.Fatalf("a foreign Origin: %d %s", r.status, r.raw)
	}
	if r := caller.post(map[string]string{"MCP-Protocol-Version": mcpModern, "Mcp-Method": "tools/list", "Origin": "http://taskhook.test"}, body); r.status != 200 {
		t.Fatalf("the public URL's Origin: %d %s", r.status, r.raw)
	}
	if r := caller.post(map[string]string{"MCP-Protocol-Version": mcpTasks, "Mcp-Method": "tools/list"}, body); r.status != http.StatusBadRequest {
		t.Fatalf("a version header the body contradicts: %d %s", r.status, r.raw)
	}
}

// initialize opens a 2025-11-25 session that takes elicitations: its id.
func (c *mcpCaller) initialize() string {
	c.t.Helper()
	r := c.post(nil, map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": mcpTasks, "capabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}},
		"clientInfo": map[string]any{"name": "raw", "version": "0"}}})
	session := r.header.Get("Mcp-Session-Id")
	if r.status != 200 || session == "" {
		c.t.Fatalf("initialize: %d %s", r.status, r.raw)
	}
	if r := c.post(legacyHeaders(session), map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); r.status != http.StatusAccepted {
		c.t.Fatalf("initialized: %d %s", r.status, r.raw)
	}
	return session
}

func legacyHeaders(session string) map[string]string {
	return map[string]string{"Mcp-Session-Id": session, "MCP-Protocol-Version": mcpTasks}
}

// legacy sends a request of a 2025-11-25 session.
func (c *mcpCaller) legacy(session, method string, params map[string]any) mcpReply {
	c.t.Helper()
	return c.post(legacyHeaders(session), map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

// mcpStream is an answer sent as a stream of server-sent events.
type mcpStream struct {
	t      *testing.T
	events *apitest.EventReader
}

// stream sends a request of a 2025-11-25 session whose answer is a stream.
func (c *mcpCaller) stream(session, method string, params map[string]any) *mcpStream {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "held", "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	for k, v := range legacyHeaders(session) {
		req.Header.Set(k, v)
	}
	res, err := c.do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		raw, _ := io.ReadAll(res.Body)
		c.t.Fatalf("want a stream: %d %s", res.StatusCode, raw)
	}
	return &mcpStream{t: c.t, events: apitest.NewEventReader(c.t, res.Body)}
}

// next is the stream's next message, or nil when it ended (a killed
// server's stream ends).
func (s *mcpStream) next() map[string]any {
	s.t.Helper()
	data, err := s.events.NextData()
	if err != nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		s.t.Fatalf("event data is not JSON: %s", data)
	}
	return m
}

// nextNamed skips status notifications to the next message that is not one.
func (s *mcpStream) nextNamed() map[string]any {
	s.t.Helper()
	for {
		m := s.next()
		if m == nil || jsonStr(m, "method") != "notifications/tasks/status" {
			return m
		}
	}
}

// Nothing of an MCP conversation lives in one replica: a call on A is read
// and answered on B; an elicitation held on A's tasks/result is answered
// through B; and when the replica holding tasks/result is killed, the
// client's retry on another gets the result, with nothing lost.
func TestMCPAcrossReplicas(t *testing.T) {
	t.Parallel()
	sc := storetest.Standalone(t)
	cfg := mcpConfig()
	a, b := apptest.Start(t, sc, cfg), apptest.Start(t, sc, cfg)
	offerDevbox(t, a, "mcp-pub")
	ctx := context.Background()
	executor := b.Client(t, "mcp-pub")
	onA, onB := newMCPCaller(t, a, "mcp-user"), newMCPCaller(t, b, "mcp-user")
	session := onA.initialize()

	call := func(on *mcpCaller) string {
		t.Helper()
		r := on.legacy(session, "tools/call", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"}, "task": map[string]any{"ttl": 60000}})
		id := jsonStr(r.body, "result.task.taskId")
		if r.status != 200 || id == "" {
			t.Fatalf("a task-augmented call: %d %s", r.status, r.raw)
		}
		return id
	}
	id := call(onA)
	if r := onB.legacy(session, "tasks/get", map[string]any{"taskId": id}); jsonStr(r.body, "result.taskId") != id || jsonStr(r.body, "result.status") != "working" {
		t.Fatalf("tasks/get on the other replica: %s", r.raw)
	}
	if _, err := executor.RequireInput(ctx, id, []client.InputRequest{{RequestID: "go", Kind: "ask", Prompt: "Go on?",
		Options: []client.Choice{{ID: "yes", Label: "Yes"}}}}); err != nil {
		t.Fatal(err)
	}
	held := onA.stream(session, "tasks/result", map[string]any{"taskId": id})
	asked := held.nextNamed()
	if jsonStr(asked, "method") != "elicitation/create" || jsonStr(asked, "id") != "taskhook/"+id+"/go" {
		t.Fatalf("the question on A's held tasks/result: %v", asked)
	}
	r := onB.post(legacyHeaders(session), map[string]any{"jsonrpc": "2.0", "id": jsonStr(asked, "id"),
		"result": map[string]any{"action": "accept", "content": map[string]any{"optionId": "yes"}}})
	if r.status != http.StatusAccepted {
		t.Fatalf("the answer posted to B: %d %s", r.status, r.raw)
	}
	task, err := executor.WaitTask(ctx, id, 2, 0)
	if err != nil || task.Status != "working" || len(task.InputResponses) != 1 || task.InputResponses[0].Via != "mcp" {
		t.Fatalf("the answer through B: %+v %v", task, err)
	}
	if _, err := executor.Complete(ctx, id, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	res := held.nextNamed()
	meta, _ := jsonAt(res, "result._meta").(map[string]any)
	if jsonStr(res, "id") != "held" || jsonAt(res, "result.structuredContent.n") != 1.0 ||
		jsonStr(meta["io.modelcontextprotocol/related-task"], "taskId") != id {
		t.Fatalf("the result on A's stream: %v", res)
	}

	// A replica killed while it holds tasks/result: the retry on another
	// replica gets the result.
	cmd, killedURL := apptest.StartProcess(t, sc, "TASKHOOK_PUBLIC_URL=http://taskhook.test", "TASKHOOK_ALLOW_PRIVATE_TARGETS=true")
	onKilled := &mcpCaller{t: t, url: killedURL + "/mcp", token: onA.token}
	id = call(onKilled)
	plain := onKilled.initializePlain()
	held2 := make(chan mcpReply, 1)
	go func() {
		held2 <- onKilled.postQuiet(legacyHeaders(plain), map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tasks/result", "params": map[string]any{"taskId": id}})
	}()
	storetest.WaitFor(t, "the killed replica to hold tasks/result", func() bool { return gauge(t, killedURL, "taskhook_waiters") == 1 })
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if r := <-held2; r.status != 0 && r.status != 200 {
		t.Fatalf("the killed replica answered: %d %s", r.status, r.raw)
	}
	retried := make(chan mcpReply, 1)
	go func() {
		retried <- onB.postQuiet(legacyHeaders(plain), map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tasks/result", "params": map[string]any{"taskId": id}})
	}()
	if _, err := executor.Complete(ctx, id, map[string]any{"n": 2}); err != nil {
		t.Fatal(err)
	}
	if r := <-retried; r.status != 200 || jsonAt(r.body, "result.structuredContent.n") != 2.0 {
		t.Fatalf("the retry on B: %d %s", r.status, r.raw)
	}
	if got, err := executor.GetTask(ctx, id); err != nil || got.Status != "completed" {
		t.Fatalf("the task after the kill: %+v %v", got, err)
	}
}

// initializePlain opens a 2025-11-25 session that takes no elicitation:
// its tasks/result is one JSON answer.
func (c *mcpCaller) initializePlain() string {
	c.t.Helper()
	r := c.post(nil, map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": mcpTasks, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "0"}}})
	if r.status != 200 || r.header.Get("Mcp-Session-Id") == "" {
		c.t.Fatalf("initialize: %d %s", r.status, r.raw)
	}
	return r.header.Get("Mcp-Session-Id")
}

// postQuiet is post off the test's goroutine: a failed request is status 0.
func (c *mcpCaller) postQuiet(headers map[string]string, body any) mcpReply {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := c.do(req)
	if err != nil {
		return mcpReply{}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return mcpReply{}
	}
	r := mcpReply{status: res.StatusCode, header: res.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// gauge reads a gauge without labels from a server's /metrics.
func gauge(t *testing.T, base, name string) float64 {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// A client that takes no task waits for the result; with a progressToken it
// hears progress, each question with its answer URL, where a person
// answers in a browser while the call still waits.
func TestMCPSyncCallReportsTheAnswerURL(t *testing.T) {
	t.Parallel()
	srv := apptest.Embedded(t, mcpConfig())
	executor := offerDevbox(t, srv, "sync-pub")
	ctx := context.Background()
	caller := newMCPCaller(t, srv, "sync-user")
	session := caller.initializePlain()
	s := caller.stream(session, "tools/call", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"},
		"_meta": map[string]any{"progressToken": "p1"}})
	first := s.next()
	if jsonStr(first, "method") != "notifications/progress" || jsonStr(first, "params.progressToken") != "p1" {
		t.Fatalf("the first progress: %v", first)
	}
	page, err := executor.ListTasks(ctx, client.ListTasksParams{Role: "executor"})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("the executor's task: %+v %v", page, err)
	}
	id := page.Items[0].TaskID
	asked, err := executor.RequireInput(ctx, id, []client.InputRequest{{RequestID: "go", Kind: "ask", Prompt: "Go on?",
		Options: []client.Choice{{ID: "yes", Label: "Yes"}}}})
	if err != nil {
		t.Fatal(err)
	}
	answerURL := asked.InputRequests[0].AnswerURL
	progress := s.next()
	if msg := jsonStr(progress, "params.message"); !strings.Contains(msg, "Go on?") || !strings.Contains(msg, answerURL) || answerURL == "" {
		t.Fatalf("progress with the answer URL %q: %v", answerURL, progress)
	}
	// A person answers at the URL (this server, under the public URL's path).
	local := srv.URL + strings.TrimPrefix(answerURL, "http://taskhook.test")
	if _, err := srv.Client(t, "anyone").AnswerInput(ctx, local, "yes", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := executor.Complete(ctx, id, map[string]any{"done": true}); err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	for m := s.next(); m != nil; m = s.next() {
		res = m
	}
	if jsonAt(res, "result.structuredContent.done") != true {
		t.Fatalf("the call's result: %v", res)
	}
	if got, err := executor.GetTask(ctx, id); err != nil || len(got.InputResponses) != 1 || got.InputResponses[0].Via != "answer_link" {
		t.Fatalf("the answer at the URL: %+v %v", got, err)
	}
}

// Held tasks/result answers wait as long-polls do: parked with no
// goroutine, and no Redis round trip while they wait, however many; one
// change answers them all.
func TestHeldTaskResultsCostNoRoundTrips(t *testing.T) {
	const n = 1000
	srv := apptest.Standalone(t, func() app.Config { c := mcpConfig(); c.WakeBlock = 20 * time.Millisecond; c.Partitions = 4; return c }())
	executor := offerDevbox(t, srv, "held-pub")
	caller := newMCPCaller(t, srv, "held-user")
	session := caller.initializePlain()
	r := caller.legacy(session, "tools/call", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"}, "task": map[string]any{}})
	id := jsonStr(r.body, "result.task.taskId")
	if id == "" {
		t.Fatalf("the call: %s", r.raw)
	}
	before := roundTrips(srv, "requests")
	answers := make(chan mcpReply, n)
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}
	t.Cleanup(tr.CloseIdleConnections)
	held := &mcpCaller{t: t, url: caller.url, token: caller.token, client: &http.Client{Transport: tr}}
	for range n {
		go func() {
			answers <- held.postQuiet(legacyHeaders(session), map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": map[string]any{"taskId": id}})
		}()
	}
	storetest.WaitFor(t, "every tasks/result to park", func() bool {
		return testutil.ToFloat64(srv.App.Metrics.ParkedPolls) == n
	})
	// Each made its one read when it began; then, while the fan-in readers
	// cycle through several blocking reads of their own, none.
	began := roundTrips(srv, "requests") - before
	readerLoops := roundTrips(srv, "wakeups")
	storetest.WaitFor(t, "the fan-in readers to go round", func() bool { return roundTrips(srv, "wakeups")-readerLoops >= 4*5 })
	if got := roundTrips(srv, "requests") - before; got != began || began > n {
		t.Fatalf("%d held tasks/result made %v round trips, %v of them while waiting", n, got, got-began)
	}
	if _, err := executor.Complete(context.Background(), id, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	for range n {
		if r := <-answers; r.status != 200 || jsonAt(r.body, "result.structuredContent.n") != 1.0 {
			t.Fatalf("a held tasks/result answered %d %s", r.status, r.raw)
		}
	}
}
