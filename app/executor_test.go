package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/endpoints"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/tasks"
)

// A task started for another executor with an endpoint of its own (as a
// tool call starts one): the endpoint hears task.created and task.terminal,
// signed with its secret, while the creator never sees it; the executor does
// the work over the API and finds it with role=executor.
func TestTaskStartedForAnExecutorNotifiesItsEndpoint(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		recv := receivertest.New(t, nil)
		eps, records, err := srv.App.Notify.NewEndpoints(ctx, endpoints.Registrant{Principal: "tool-publisher", Requester: "tool-publisher"},
			[]wire.EndpointRequest{{URL: recv.URL, Kinds: []string{wire.EventTaskCreated, wire.EventInputResolved, wire.EventTaskTerminal}}})
		if err != nil {
			t.Fatal(err)
		}
		reply, err := srv.App.Tasks.CreateWith(ctx, authz.Principal{ID: "tool-caller"}, tasks.CreateInput{Kind: "deploy"},
			tasks.Start{Executor: "tool-publisher", Endpoints: records, DefaultSession: true}, idem.Key{})
		if err != nil {
			t.Fatal(err)
		}
		for _, leak := range []string{eps[0].EndpointID, eps[0].Secret, recv.URL} {
			if strings.Contains(string(reply.JSON), leak) {
				t.Fatalf("the creator's answer shows the start's endpoint: %s", reply.JSON)
			}
		}
		var task client.Task
		if err := json.Unmarshal(reply.JSON, &task); err != nil {
			t.Fatal(err)
		}
		caller, worker := srv.Client(t, "tool-caller"), srv.Client(t, "tool-publisher")
		read, err := caller.GetTask(ctx, task.TaskID)
		if err != nil || read.Executor != "tool-publisher" || read.Owner != "tool-caller" || len(read.Notify) != 0 {
			t.Fatalf("the caller reads %+v %v", read, err)
		}
		page, err := worker.ListTasks(ctx, client.ListTasksParams{Role: client.RoleExecutor, Status: client.StatusWorking})
		if err != nil || len(page.Items) != 1 || page.Items[0].TaskID != task.TaskID {
			t.Fatalf("the executor's working tasks: %+v %v", page, err)
		}
		if _, err := worker.Complete(ctx, task.TaskID, map[string]any{"ok": true}); err != nil {
			t.Fatal(err)
		}
		waitDeliveries(t, recv, 2)
		var types []string
		for _, d := range recv.Got() {
			ev, err := client.VerifyNotification(eps[0].Secret, d.Header, d.Body)
			if err != nil {
				t.Fatalf("a delivery does not verify: %v", err)
			}
			if ev.TaskID != task.TaskID {
				t.Fatalf("a delivery of another task: %+v", ev)
			}
			types = append(types, ev.Type)
		}
		slices.Sort(types)
		if !slices.Equal(types, []string{wire.EventTaskCreated, wire.EventTaskTerminal}) {
			t.Fatalf("the start's endpoint heard %v", types)
		}
	})
}

// To a principal who is none of owner, executor and requester, a task with
// an executor of its own does not exist on any route, exactly as a missing
// one; its executor may not cancel, answer or collect the result.
func TestTaskWithAnExecutorIsMissingToOthers(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, notifyConfig())
	ctx := context.Background()
	ses := apptest.Session(t, ctx, srv.Client(t, "exe-owner"))
	reply, err := srv.App.Tasks.CreateWith(ctx, authz.Principal{ID: "exe-owner"}, tasks.CreateInput{SessionID: ses.SessionID},
		tasks.Start{Executor: "exe-worker"}, idem.Key{})
	if err != nil {
		t.Fatal(err)
	}
	var task client.Task
	if err := json.Unmarshal(reply.JSON, &task); err != nil {
		t.Fatal(err)
	}
	missing := ids.New(ids.TaskPrefix, 0)
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/tasks/{t}", ""},
		{"GET", "/v1/tasks/{t}?afterRevision=0&wait=1s", ""},
		{"GET", "/v1/tasks/{t}/result", ""},
		{"GET", "/v1/tasks/{t}/events", ""},
		{"POST", "/v1/tasks/{t}/progress", `{"statusMessage":"x"}`},
		{"POST", "/v1/tasks/{t}/messages", `{"text":"x"}`},
		{"POST", "/v1/tasks/{t}/input-requests", `{"requests":[{"prompt":"ok?","display":"confirmation"}]}`},
		{"POST", "/v1/tasks/{t}/input", `{"responses":[{"requestId":"r","optionId":"yes"}]}`},
		{"POST", "/v1/tasks/{t}/complete", `{"result":1}`},
		{"POST", "/v1/tasks/{t}/fail", `{"error":{"message":"x"}}`},
		{"POST", "/v1/tasks/{t}/cancel", `{}`},
		{"POST", "/v1/tasks/{t}/release", `{}`},
		{"POST", "/v1/hooks", `{"taskId":"{t}"}`},
	}
	do := func(who, method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+apptest.Token(t, who))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	fill := func(s, id string) string { return strings.ReplaceAll(s, "{t}", id) }
	for _, r := range routes {
		st, body := do("exe-stranger", r.method, fill(r.path, task.TaskID), fill(r.body, task.TaskID))
		noneSt, noneBody := do("exe-stranger", r.method, fill(r.path, missing), fill(r.body, missing))
		if st != 404 || noneSt != 404 || body != noneBody {
			t.Errorf("%s %s: the task %d %s; a missing one %d %s", r.method, r.path, st, body, noneSt, noneBody)
		}
	}
	// The executor's limits answer as a missing task too.
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/tasks/{t}/result", ""},
		{"POST", "/v1/tasks/{t}/cancel", `{}`},
		{"POST", "/v1/tasks/{t}/input", `{"responses":[{"requestId":"r","optionId":"yes"}]}`},
	} {
		st, body := do("exe-worker", r.method, fill(r.path, task.TaskID), fill(r.body, task.TaskID))
		noneSt, noneBody := do("exe-worker", r.method, fill(r.path, missing), fill(r.body, missing))
		if st != 404 || noneSt != 404 || body != noneBody {
			t.Errorf("the executor's %s %s: %d %s; a missing task %d %s", r.method, r.path, st, body, noneSt, noneBody)
		}
	}
	// ... and the executor reads it and does the work.
	worker := srv.Client(t, "exe-worker")
	if _, err := worker.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := worker.TaskEvents(ctx, task.TaskID, client.EventsParams{}); err != nil {
		t.Fatal(err)
	}
	if st, body := do("exe-worker", "GET", "/v1/tasks?role=boss", ""); st != 400 || !strings.Contains(body, "role") {
		t.Errorf("role=boss: %d %s", st, body)
	}
}
