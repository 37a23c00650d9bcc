package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	gomcp "github.com/mark3labs/mcp-go/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// The official clients of other hands, against the real server: what the
// mcp package's tests show over an in-memory backend holds over Redis and
// the server's own middleware too (its streams flushed, its bodies read).

// nodeWith is the path of node, with the SDK (named sdk) installed in the
// package folder pkg. Where either is missing the test is skipped, or, in
// CI, fails.
func nodeWith(t *testing.T, sdk, pkg string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(pkg, "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node and %s are needed (make sdk-deps): %v", sdk, err)
		}
		t.Skipf("node or %s is missing (make sdk-deps installs it): %v", sdk, err)
	}
	return node
}

// sdkDir holds the TypeScript SDK's client script (mcp/testdata/sdkclient).
var sdkDir = filepath.Join("..", "mcp", "testdata", "sdkclient")

// The official TypeScript SDK runs a task-augmented call through to its
// result on every store: its elicitation handler answers the executor's
// question while tasks/result is held, tasks/list shows the caller's tasks
// only, and the cancel of the ended task is refused.
func TestMCPTypeScriptSDKThroughTheServer(t *testing.T) {
	node := nodeWith(t, "the TypeScript SDK", filepath.Join(sdkDir, "node_modules", "@modelcontextprotocol", "sdk"))
	apptest.EachBackend(t, mcpConfig(), func(t *testing.T, srv *apptest.Server) {
		executor := offerDevbox(t, srv, "ts-pub")
		ctx := context.Background()
		if _, err := srv.Client(t, "ts-other").CallTool(ctx, "devbox", client.CallToolInput{Arguments: map[string]any{"repo": "theirs"}}); err != nil {
			t.Fatal(err)
		}

		cmd := exec.CommandContext(t.Context(), node, "client.mjs", srv.URL+"/mcp")
		cmd.Dir = sdkDir
		cmd.Env = append(os.Environ(), "TASKHOOK_MCP_TOKEN="+apptest.Token(t, "ts-user"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		lines.Buffer(make([]byte, 0, 64<<10), 1<<20)
		next := func(name string) map[string]any {
			t.Helper()
			if !lines.Scan() {
				t.Fatalf("the script ended before %q: %s", name, stderr.String())
			}
			var e map[string]any
			if err := json.Unmarshal(lines.Bytes(), &e); err != nil || e["event"] != name {
				t.Fatalf("want the script's %q, got %s\n%s", name, lines.Text(), stderr.String())
			}
			return e
		}
		next("initialized")
		next("tools")
		if e := next("refused"); jsonAt(e, "code") != -32602.0 || !strings.Contains(jsonStr(e, "message"), "arguments.repo") {
			t.Fatalf("a call outside the schema: %v", e)
		}
		id := jsonStr(next("created"), "task.taskId")
		if e := next("got"); jsonStr(e, "task.status") != "working" {
			t.Fatalf("tasks/get: %v", e)
		}
		next("holding")
		asked, err := executor.RequireInput(ctx, id, []client.InputRequest{{RequestID: "ship", Kind: "ask", Prompt: "Ship it?",
			Options: []client.Choice{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if e := next("elicited"); jsonStr(e, "params.message") != "Ship it?" {
			t.Fatalf("the question: %v", e)
		}
		answeredThroughMCP(t, executor, id, asked.Revision, "ts-user", "yes")
		if _, err := executor.Complete(ctx, id, map[string]any{"url": "https://x.example"}); err != nil {
			t.Fatal(err)
		}
		if e := next("result"); jsonStr(e, "result.structuredContent.url") != "https://x.example" {
			t.Fatalf("tasks/result: %v", e)
		}
		if e := next("listed"); len(jsonAt(e, "tasks").([]any)) != 1 || jsonStr(e, "tasks.0.taskId") != id {
			t.Fatalf("tasks/list, the caller's tasks only: %v", e)
		}
		if e := next("cancel"); jsonAt(e, "code") != -32602.0 {
			t.Fatalf("tasks/cancel of an ended task: %v", e)
		}
		if e := next("done"); len(jsonAt(e, "problems").([]any)) != 0 {
			t.Fatalf("the SDK found messages it could not take: %v", e)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the script: %v\n%s", err, stderr.String())
		}
	})
}

// mcp-go's client, against the real server: initialize, list, a
// task-augmented call, tasks/result held while its elicitation handler
// answers the question, the result tied to the task.
func TestMCPGoThroughTheServer(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, mcpConfig())
	executor := offerDevbox(t, srv, "go-pub")
	ctx := t.Context()
	tr, err := transport.NewStreamableHTTP(srv.URL+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + apptest.Token(t, "go-user")}))
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan gomcp.ElicitationRequest, 1)
	c := mcpgo.NewClient(tr, mcpgo.WithProtocolVersion(mcpTasks), mcpgo.WithElicitationHandler(elicitFirst(asked)))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := gomcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcpTasks
	init.Params.ClientInfo = gomcp.Implementation{Name: "mcp-go", Version: "0"}
	if res, err := c.Initialize(ctx, init); err != nil || res.Capabilities.Tasks == nil {
		t.Fatalf("initialize: %+v %v", res, err)
	}
	tools, err := c.ListTools(ctx, gomcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "devbox" {
		t.Fatalf("tools/list: %+v %v", tools, err)
	}
	// mcp-go 1.2.1's CallTool reads only a CallToolResult: the
	// task-augmented call goes through its transport.
	ttl := int64(60000)
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: gomcp.NewRequestId(int64(5)),
		Method: "tools/call", Params: gomcp.CallToolParams{Name: "devbox", Arguments: map[string]any{"repo": "r"}, Task: &gomcp.TaskParams{TTL: &ttl}}})
	if err != nil || resp.Error != nil {
		t.Fatalf("tools/call: %+v %v", resp, err)
	}
	var created gomcp.CreateTaskResult
	if err := json.Unmarshal(resp.Result, &created); err != nil || created.Task.TaskId == "" {
		t.Fatalf("CreateTaskResult: %v %s", err, resp.Result)
	}
	id := created.Task.TaskId
	type outcome struct {
		res *gomcp.TaskResultResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.TaskResult(ctx, gomcp.TaskResultRequest{Params: gomcp.TaskResultParams{TaskId: id}})
		done <- outcome{res, err}
	}()
	storetest.WaitFor(t, "tasks/result to be held", func() bool { return waiting(srv) == 1 })
	if _, err := executor.RequireInput(ctx, id, []client.InputRequest{{RequestID: "ship", Kind: "ask", Prompt: "Ship it?",
		Options: []client.Choice{{ID: "yes", Label: "Yes"}}}}); err != nil {
		t.Fatal(err)
	}
	if req := <-asked; req.Params.Message != "Ship it?" {
		t.Fatalf("the question: %+v", req.Params)
	}
	answeredThroughMCP(t, executor, id, 0, "go-user", "yes")
	if _, err := executor.Complete(ctx, id, map[string]any{"n": 3}); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.err != nil {
		t.Fatalf("tasks/result: %v", out.err)
	}
	if s, _ := out.res.StructuredContent.(map[string]any); s["n"] != 3.0 || out.res.IsError {
		t.Fatalf("the result: %+v", out.res)
	}
}

// elicitFirst answers each elicitation with the first option its form
// offers, and hands the request to asked.
type elicitFirst chan gomcp.ElicitationRequest

func (e elicitFirst) Elicit(_ context.Context, req gomcp.ElicitationRequest) (*gomcp.ElicitationResult, error) {
	e <- req
	var first string
	if props, ok := req.Params.RequestedSchema.(map[string]any)["properties"].(map[string]any); ok {
		if opt, ok := props["optionId"].(map[string]any); ok {
			if one, ok := opt["oneOf"].([]any); ok && len(one) > 0 {
				first, _ = one[0].(map[string]any)["const"].(string)
			}
		}
	}
	return &gomcp.ElicitationResult{ElicitationResponse: gomcp.ElicitationResponse{
		Action: gomcp.ElicitationResponseActionAccept, Content: map[string]any{"optionId": first}}}, nil
}

// waiting is how many long-polls and held answers the server has waiting.
func waiting(srv *apptest.Server) float64 { return testutil.ToFloat64(srv.App.Metrics.Waiters) }

// answeredThroughMCP waits, as the executor, for the first answer to task
// id after revision after, and checks it is who's choice of option, given
// through MCP.
func answeredThroughMCP(t *testing.T, executor *client.Client, id string, after int64, who, option string) {
	t.Helper()
	task, err := executor.WaitTask(context.Background(), id, after, 30*time.Second)
	for err == nil && len(task.InputResponses) == 0 {
		task, err = executor.WaitTask(context.Background(), id, task.Revision, 30*time.Second)
	}
	if err != nil || task.InputResponses[0].Via != "mcp" || task.InputResponses[0].AnsweredBy != who ||
		task.InputResponses[0].OptionID != option {
		t.Fatalf("the answer as recorded: %+v %v", task, err)
	}
}
