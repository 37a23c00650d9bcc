package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// a2aJSDir holds the A2A JavaScript SDK's client script
// (a2a/testdata/jsclient).
var a2aJSDir = filepath.Join("..", "a2a", "testdata", "jsclient")

// The official A2A JavaScript SDK, over either binding and on every store:
// it resolves the card, starts a task that answers at once, reads the
// executor's question, answers it by the option's label with a blocking
// message that returns the completed task, and reads the result as an
// artifact and its answer in the history.
func TestA2AJavaScriptSDK(t *testing.T) {
	node := nodeWith(t, "the A2A JavaScript SDK", filepath.Join(a2aJSDir, "node_modules", "@a2a-js", "sdk"))
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		pub := srv.Client(t, "a2a-pub")
		publishWeather(t, pub, "a2a-js")
		for _, binding := range a2aBindings {
			t.Run(string(binding), func(t *testing.T) {
				js := startA2AScript(t, node, srv.URL, binding)
				if e := js.next("card"); jsonStr(e, "skills.0") != "weather" || len(jsonAt(e, "interfaces").([]any)) != 2 || jsonAt(e, "streaming") != true ||
					jsonStr(e, "binding") != string(binding) || jsonStr(e, "protocolVersion") != "1.0" {
					t.Fatalf("the card the SDK resolved: %v", e)
				}
				started := js.next("started")
				id := jsonStr(started, "id")
				if jsonStr(started, "state") != "TASK_STATE_WORKING" || id == "" || jsonStr(started, "contextId") == "" {
					t.Fatalf("the started task: %v", started)
				}
				if _, err := pub.RequireInput(ctx, id, []client.InputRequest{unitQuestion}); err != nil {
					t.Fatal(err)
				}
				js.tell("ask")
				if e := js.next("asked"); jsonStr(e, "state") != "TASK_STATE_INPUT_REQUIRED" || !strings.Contains(jsonStr(e, "text"), "Which unit?") {
					t.Fatalf("the question the SDK read: %v", e)
				}
				js.next("answering")
				wantAnsweredOverA2A(t, pub, id, "a2a-js")
				if _, err := pub.Complete(ctx, id, map[string]any{"tempC": 3}); err != nil {
					t.Fatal(err)
				}
				if e := js.next("answered"); jsonStr(e, "state") != "TASK_STATE_COMPLETED" {
					t.Fatalf("the blocking answer returned %v", e)
				}
				done := js.next("completed")
				if jsonStr(done, "state") != "TASK_STATE_COMPLETED" || len(jsonAt(done, "artifacts").([]any)) != 1 ||
					jsonAt(done, "artifacts.0.data.0.tempC") != 3.0 {
					t.Fatalf("the completed task: %v", done)
				}
				if jsonStr(done, "history.0.role") != "ROLE_USER" || jsonStr(done, "history.0.text") != "c" {
					t.Fatalf("the history: %v", done)
				}
				js.next("done")
				js.wait()
			})
		}
	})
}

// a2aScript is the SDK's client script running.
type a2aScript struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  *bufio.Scanner
	stderr *strings.Builder
}

// startA2AScript runs the script against base over binding, as a2a-js.
func startA2AScript(t *testing.T, node, base string, binding a2a.TransportProtocol) *a2aScript {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), node, "client.mjs", base, string(binding))
	cmd.Dir = a2aJSDir
	cmd.Env = append(os.Environ(), "TASKHOOK_A2A_TOKEN="+apptest.Token(t, "a2a-js"))
	s := &a2aScript{t: t, cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if s.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.in.Close() })
	s.lines = bufio.NewScanner(out)
	s.lines.Buffer(make([]byte, 0, 64<<10), 1<<20)
	return s
}

// next is the script's next report, which must be the event name.
func (s *a2aScript) next(name string) map[string]any {
	s.t.Helper()
	if !s.lines.Scan() {
		s.t.Fatalf("the script ended before %q: %s", name, s.stderr.String())
	}
	var e map[string]any
	if err := json.Unmarshal(s.lines.Bytes(), &e); err != nil || e["event"] != name {
		s.t.Fatalf("want the script's %q, got %s\n%s", name, s.lines.Text(), s.stderr.String())
	}
	return e
}

// tell writes a line to the script.
func (s *a2aScript) tell(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// wait waits for the script to exit well.
func (s *a2aScript) wait() {
	s.t.Helper()
	_ = s.in.Close()
	if err := s.cmd.Wait(); err != nil {
		s.t.Fatalf("the script: %v\n%s", err, s.stderr.String())
	}
}
