package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	gomcp "github.com/mark3labs/mcp-go/mcp"

	"github.com/taskhook/taskhook/api/wire"
)

// elicitAnswers is an elicitation handler of mcp-go's client: it hands each
// elicitation/create to the test and answers what the test tells it.
type elicitAnswers struct {
	asked   chan gomcp.ElicitationRequest
	answers chan *gomcp.ElicitationResult
}

func (e *elicitAnswers) Elicit(ctx context.Context, req gomcp.ElicitationRequest) (*gomcp.ElicitationResult, error) {
	e.asked <- req
	select {
	case res := <-e.answers:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// lockedBuffer collects a client's log lines from its goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// newMCPGoClient is mcp-go's Streamable HTTP client of h, speaking
// 2025-11-25 with token as the bearer, taking elicitations with e.
func newMCPGoClient(t *testing.T, h *harness, token string, e *elicitAnswers, logs *lockedBuffer) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(h.srv.URL+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
		transport.WithHTTPLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		t.Fatal(err)
	}
	var opts []client.ClientOption
	opts = append(opts, client.WithProtocolVersion(v2025))
	if e != nil {
		opts = append(opts, client.WithElicitationHandler(e))
	}
	c := client.NewClient(tr, opts...)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := gomcp.InitializeRequest{}
	req.Params.ProtocolVersion = v2025
	req.Params.ClientInfo = gomcp.Implementation{Name: "mcp-go-test", Version: "0"}
	res, err := c.Initialize(t.Context(), req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != v2025 || res.ServerInfo.Name != "taskhook" || res.Capabilities.Tasks == nil {
		t.Fatalf("initialize: %+v", res)
	}
	return c
}

// rawCall sends a request through the client's transport, for what the
// client has no method that reads the answer.
func rawCall(t *testing.T, c *client.Client, id int64, method string, params any) json.RawMessage {
	t.Helper()
	resp, err := c.GetTransport().SendRequest(t.Context(), transport.JSONRPCRequest{JSONRPC: "2.0",
		ID: gomcp.NewRequestId(id), Method: method, Params: params})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if resp.Error != nil {
		t.Fatalf("%s: error %d %s", method, resp.Error.Code, resp.Error.Message)
	}
	return resp.Result
}

// mcp-go's client runs a 2025-11-25 task through to its result: a
// task-augmented call, tasks/get, tasks/result held while the task's
// question is asked of the client's elicitation handler (whose answer
// reaches the task as the caller's, through MCP), the result tied to the
// task, tasks/list and tasks/cancel.
func TestMCPGoClient(t *testing.T) {
	h := newHarness(t)
	var logs lockedBuffer
	e := &elicitAnswers{asked: make(chan gomcp.ElicitationRequest, 4), answers: make(chan *gomcp.ElicitationResult, 4)}
	c := newMCPGoClient(t, h, "alice", e, &logs)
	ctx := t.Context()

	tools, err := c.ListTools(ctx, gomcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Execution == nil || tool.Execution.TaskSupport != gomcp.TaskSupportOptional {
			t.Fatalf("tool %s may be called as a task: %+v", tool.Name, tool.Execution)
		}
	}
	if !slices.Equal(names, []string{"devbox", "echo", "sum"}) {
		t.Fatalf("tools/list, every page: %v", names)
	}

	// mcp-go 1.2.1's CallTool reads only a CallToolResult (it refuses one
	// without content), so the task-augmented call goes through the
	// transport and its CreateTaskResult is decoded here.
	ttl := int64(60000)
	raw := rawCall(t, c, 100, "tools/call", gomcp.CallToolParams{Name: "devbox", Arguments: map[string]any{"repo": "r"},
		Task: &gomcp.TaskParams{TTL: &ttl}})
	var created gomcp.CreateTaskResult
	if err := json.Unmarshal(raw, &created); err != nil {
		t.Fatalf("CreateTaskResult: %v: %s", err, raw)
	}
	id := created.Task.TaskId
	if id == "" || created.Task.Status != gomcp.TaskStatusWorking || created.Task.TTL == nil || *created.Task.TTL != ttl {
		t.Fatalf("CreateTaskResult: %s", raw)
	}

	got, err := c.GetTask(ctx, gomcp.GetTaskRequest{Params: gomcp.GetTaskParams{TaskId: id}})
	if err != nil || got.TaskId != id || got.Status != gomcp.TaskStatusWorking {
		t.Fatalf("tasks/get: %+v %v", got, err)
	}

	// The held stream's status notifications reach the client's handler
	// before the result.
	var mu sync.Mutex
	var statuses []string
	c.OnNotification(func(n gomcp.JSONRPCNotification) {
		if n.Method == "notifications/tasks/status" {
			mu.Lock()
			defer mu.Unlock()
			statuses = append(statuses, n.Params.AdditionalFields["taskId"].(string)+" "+n.Params.AdditionalFields["status"].(string))
		}
	})
	type outcome struct {
		res *gomcp.TaskResultResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.TaskResult(ctx, gomcp.TaskResultRequest{Params: gomcp.TaskResultParams{TaskId: id}})
		done <- outcome{res, err}
	}()
	h.waitWatching(id)
	h.b.ask(id, deployQuestion)
	select {
	case req := <-e.asked:
		if req.Params.Mode != "form" || req.Params.Message != deployQuestion.Prompt {
			t.Fatalf("the question: %+v", req.Params)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no elicitation while tasks/result is held; client log: %s", logs.String())
	}
	e.answers <- &gomcp.ElicitationResult{ElicitationResponse: gomcp.ElicitationResponse{
		Action: gomcp.ElicitationResponseActionAccept, Content: map[string]any{"optionId": "yes"}}}
	// The answer changes the task, and the held result waits on anew.
	for len(h.b.stored(id).InputResponses) == 0 {
		h.waitWatching(id)
	}
	answered := h.b.stored(id).InputResponses[0]
	if answered.OptionID != "yes" || answered.Via != wire.ViaMCP || answered.AnsweredBy != "alice" {
		t.Fatalf("the answer as recorded: %+v", answered)
	}
	h.b.complete(id, `{"url":"https://x.example"}`)
	var out outcome
	select {
	case out = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("tasks/result did not end; client log: %s", logs.String())
	}
	if out.err != nil {
		t.Fatalf("tasks/result: %v", out.err)
	}
	structured, _ := out.res.StructuredContent.(map[string]any)
	if out.res.IsError || structured["url"] != "https://x.example" || out.res.Meta == nil ||
		relatedTask(map[string]any{"_meta": out.res.Meta.AdditionalFields}) != id {
		t.Fatalf("tasks/result: %+v", out.res)
	}

	// The stream tells the states it sees: "working" between the answer
	// and the end may fold into the end.
	mu.Lock()
	if !slices.Equal(statuses, []string{id + " input_required", id + " working", id + " completed"}) &&
		!slices.Equal(statuses, []string{id + " input_required", id + " completed"}) {
		t.Fatalf("notifications/tasks/status: %v", statuses)
	}
	mu.Unlock()

	// Another principal's task is not listed.
	bob := newMCPGoClient(t, h, "bob", nil, &logs)
	rawCall(t, bob, 100, "tools/call", gomcp.CallToolParams{Name: "echo", Task: &gomcp.TaskParams{TTL: &ttl}})
	list, err := c.ListTasks(ctx, gomcp.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].TaskId != id || list.Tasks[0].Status != gomcp.TaskStatusCompleted {
		t.Fatalf("tasks/list: %+v %v", list, err)
	}

	// An ended task is not cancelled: invalid params.
	_, err = c.CancelTask(ctx, gomcp.CancelTaskRequest{Params: gomcp.CancelTaskParams{TaskId: id}})
	if !errors.Is(err, gomcp.ErrInvalidParams) {
		t.Fatalf("tasks/cancel of an ended task: %v", err)
	}
	// The client cancels its posting of the elicitation's answer once the
	// stream it came on has ended: that post may be cut off after the
	// server took it (the answer is recorded, as checked above). Anything
	// else the client logs is something it found wrong.
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if line != "" && !(strings.Contains(line, "failed to send response to server") && strings.Contains(line, "context canceled")) {
			t.Fatalf("the client logged: %s", line)
		}
	}
}
