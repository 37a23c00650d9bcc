package mcp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/mcp"
)

// sdkClientDir holds the script that runs the official TypeScript SDK's
// client, and the SDK pinned in its package.json (make sdk-deps installs it).
const sdkClientDir = "testdata/sdkclient"

// needNode returns the node binary, once the SDK is installed. Without
// either the test skips, saying why; under CI it fails instead.
func needNode(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: the TypeScript SDK's client cannot run")
	}
	if _, err := os.Stat(filepath.Join(sdkClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missing("the TypeScript SDK is not installed in " + sdkClientDir + ": run make sdk-deps")
	}
	return node
}

// sdkEvent is one line the script reports.
type sdkEvent = map[string]any

// sdkScript is the script running, its reports read line by line.
type sdkScript struct {
	t      *testing.T
	cmd    *exec.Cmd
	events chan sdkEvent
	stderr *lockedBuffer
	once   sync.Once
	err    error
}

// runSDKClient runs the script against h, as the principal token names.
func runSDKClient(t *testing.T, h *harness, token string) *sdkScript {
	t.Helper()
	node := needNode(t)
	cmd := exec.CommandContext(t.Context(), node, "client.mjs", h.srv.URL+mcp.Path)
	cmd.Dir = sdkClientDir
	cmd.Env = append(os.Environ(), "TASKHOOK_MCP_TOKEN="+token)
	s := &sdkScript{t: t, cmd: cmd, events: make(chan sdkEvent, 16), stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var e sdkEvent
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				e = sdkEvent{"event": "unreadable", "line": sc.Text()}
			}
			s.events <- e
		}
	}()
	t.Cleanup(func() { _ = s.wait() })
	return s
}

// wait waits for the script to exit: its error, once.
func (s *sdkScript) wait() error {
	s.once.Do(func() {
		for range s.events {
		}
		s.err = s.cmd.Wait()
	})
	return s.err
}

// next is the script's next report, which must be the named event.
func (s *sdkScript) next(name string) sdkEvent {
	s.t.Helper()
	select {
	case e, ok := <-s.events:
		if !ok {
			s.t.Fatalf("the script ended before %q: %v\n%s", name, s.wait(), s.stderr.String())
		}
		if e["event"] != name {
			s.t.Fatalf("want the script's %q, got %v\n%s", name, e, s.stderr.String())
		}
		return e
	case <-time.After(30 * time.Second):
		s.t.Fatalf("the script did not report %q\n%s", name, s.stderr.String())
	}
	return nil
}

// The official TypeScript SDK's client runs a 2025-11-25 task through to
// its result: initialize with elicitation, tools/list, a task-augmented
// call (its task API's callToolStream; one outside the tool's schema refused
// with the field named), tasks/get, tasks/result held while
// the question is answered by the client's elicitation handler (as the
// caller, through MCP), the result tied to the task, tasks/list with the
// caller's tasks only, and tasks/cancel of the ended task refused.
func TestTypeScriptSDKClient(t *testing.T) {
	h := newHarness(t)
	theirs := h.legacyTask("bob", h.initialize("bob", nil))
	s := runSDKClient(t, h, "alice")

	e := s.next("initialized")
	if str(e, "protocolVersion") != v2025 || str(e, "server.name") != "taskhook" || at(e, "capabilities.tasks.requests.tools.call") == nil ||
		str(e, "sessionId") == "" {
		t.Fatalf("initialize: %v", e)
	}
	e = s.next("tools")
	var names []string
	for _, tool := range at(e, "tools").([]any) {
		names = append(names, str(tool, "name"))
		if str(tool, "execution.taskSupport") != "optional" {
			t.Fatalf("each tool may be called as a task: %v", tool)
		}
	}
	if !slices.Equal(names, []string{"devbox", "echo", "sum"}) {
		t.Fatalf("tools/list, every page: %v", names)
	}

	// Arguments outside the schema: the SDK's task stream reads the error,
	// with the field named.
	if e = s.next("refused"); str(e, "type") != "error" || at(e, "code") != -32602.0 ||
		!strings.Contains(str(e, "message"), "arguments.repo") {
		t.Fatalf("a task-augmented call outside the schema: %v", e)
	}
	e = s.next("created")
	id := str(e, "task.taskId")
	if id == "" || id == theirs || str(e, "task.status") != "working" || at(e, "task.ttl") != 60000.0 {
		t.Fatalf("CreateTaskResult: %v", e)
	}
	if e = s.next("got"); str(e, "task.taskId") != id || str(e, "task.status") != "working" {
		t.Fatalf("tasks/get: %v", e)
	}

	s.next("holding")
	h.waitWatching(id)
	h.b.ask(id, deployQuestion)
	e = s.next("elicited")
	if str(e, "params.mode") != "form" || str(e, "params.message") != deployQuestion.Prompt ||
		str(e, "params.requestedSchema.properties.optionId.oneOf.0.const") != "yes" || relatedTask(e["params"]) != id {
		t.Fatalf("the question: %v", e)
	}
	// The answer changes the task, and the held result waits on anew.
	for len(h.b.stored(id).InputResponses) == 0 {
		h.waitWatching(id)
	}
	if a := h.b.stored(id).InputResponses[0]; a.OptionID != "yes" || a.Via != wire.ViaMCP || a.AnsweredBy != "alice" {
		t.Fatalf("the answer as recorded: %+v", a)
	}
	h.b.complete(id, `{"url":"https://x.example"}`)
	e = s.next("result")
	if str(e, "result.structuredContent.url") != "https://x.example" || at(e, "result.isError") == true || relatedTask(e["result"]) != id {
		t.Fatalf("tasks/result: %v", e)
	}
	var statuses []string
	for _, n := range at(e, "statuses").([]any) {
		if str(n, "taskId") != id {
			t.Fatalf("a status notification of another task: %v", n)
		}
		statuses = append(statuses, str(n, "status"))
	}
	// The stream tells the states it sees: "working" between the answer
	// and the end may fold into the end.
	if !slices.Equal(statuses, []string{"input_required", "working", "completed"}) && !slices.Equal(statuses, []string{"input_required", "completed"}) {
		t.Fatalf("notifications/tasks/status on the held stream: %v", statuses)
	}

	e = s.next("listed")
	listed := at(e, "tasks").([]any)
	if len(listed) != 1 || str(listed[0], "taskId") != id || str(listed[0], "status") != "completed" {
		t.Fatalf("tasks/list, the caller's tasks only: %v", e)
	}
	if e = s.next("cancel"); at(e, "code") != -32602.0 {
		t.Fatalf("tasks/cancel of an ended task: %v", e)
	}
	if e = s.next("done"); len(at(e, "problems").([]any)) != 0 {
		t.Fatalf("the SDK found messages it could not take: %v", e)
	}
	if err := s.wait(); err != nil {
		t.Fatalf("the script: %v\n%s", err, s.stderr.String())
	}
	if bytes.Contains([]byte(s.stderr.String()), []byte("Error")) {
		t.Fatalf("the script logged errors:\n%s", s.stderr.String())
	}
}
