package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// serverCPU is the CPU time, user and system, that the server process pid
// has used, from /proc (in clock ticks of 10 ms).
func serverCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("no /proc here: %v", err)
	}
	// The fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th of them.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// BenchmarkToolLifecycle drives one lifecycle of a tool's task, through MCP
// (tools/call in the stateless generation, tasks/get, the executor's
// complete by REST) and through REST alone (POST /v1/tools/{name}/call, GET
// the task, complete), from parallel clients against real Redis, and
// reports the server's CPU time per lifecycle (the server runs as a process
// of its own, so the clients' work is not counted): the MCP face's cost over
// the REST one is the ratio of the two.
func BenchmarkToolLifecycle(b *testing.B) {
	ctx := context.Background()
	callerToken := apptest.Token(b, "bench-caller")
	for _, face := range []string{"rest", "mcp"} {
		b.Run(face, func(b *testing.B) {
			// A server and a store of its own for each run: what one run
			// left stored does not weigh on the next.
			cmd, url := apptest.StartProcess(b, storetest.Standalone(b), "TASKHOOK_ALLOW_PRIVATE_TARGETS=true")
			srv := &apptest.Server{URL: url}
			offerDevbox(b, srv, "bench-pub")
			b.SetParallelism(8)
			cpu0, t0 := serverCPU(b, cmd.Process.Pid), time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				executor := client.New(srv.URL, apptest.Token(b, "bench-pub"))
				caller := client.New(srv.URL, callerToken)
				rpc := &benchRPC{url: srv.URL + "/mcp", token: callerToken}
				for pb.Next() {
					var id string
					var err error
					if face == "mcp" {
						id, err = rpc.callAndGet()
					} else {
						id, err = restCallAndGet(ctx, srv.URL, callerToken, caller)
					}
					if err != nil {
						b.Error(err)
						return
					}
					if _, err := executor.Complete(ctx, id, map[string]any{"ok": true}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			elapsed, cpu := time.Since(t0), serverCPU(b, cmd.Process.Pid)-cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "server-cpu-µs/lifecycle")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "lifecycles/s")
		})
	}
}

// restCallAndGet calls the tool over REST and reads the task back.
func restCallAndGet(ctx context.Context, base, token string, cl *client.Client) (string, error) {
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/tools/devbox/call", strings.NewReader(`{"arguments":{"repo":"r"}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	var task client.Task
	err = decodeJSON(res, &task)
	if err != nil || res.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("call: %d %v", res.StatusCode, err)
	}
	_, err = cl.GetTask(ctx, task.TaskID)
	return task.TaskID, err
}

// benchRPC is the stateless generation's calls, made by hand.
type benchRPC struct{ url, token string }

func (c *benchRPC) post(method, name, params string) (map[string]any, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := decodeJSON(res, &m); err != nil || res.StatusCode != 200 || m["error"] != nil {
		return nil, fmt.Errorf("%s: %d %v %v", method, res.StatusCode, err, m["error"])
	}
	return m, nil
}

func (c *benchRPC) callAndGet() (string, error) {
	m, err := c.post("tools/call", "devbox", `"name":"devbox","arguments":{"repo":"r"}`)
	if err != nil {
		return "", err
	}
	id := jsonStr(m, "result.taskId")
	_, err = c.post("tasks/get", id, `"taskId":"`+id+`"`)
	return id, err
}

// decodeJSON reads a response's JSON body into v and closes it.
func decodeJSON(res *http.Response, v any) error {
	defer res.Body.Close()
	return json.NewDecoder(res.Body).Decode(v)
}
