package app_test

import (
	"context"
	"encoding/json"
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
	theirs := strings.NewReplacer("{t}", task.TaskID)
	missing := strings.NewReplacer("{t}", ids.New(ids.TaskPrefix, 0))
	answersAsMissing(t, srv, "exe-stranger", "the task", append(taskRoutes,
		route{"POST", "/v1/tasks/{t}/release", `{}`},
		route{"POST", "/v1/hooks", `{"taskId":"{t}"}`},
	), theirs, missing)
	// The executor's limits answer as a missing task too.
	answersAsMissing(t, srv, "exe-worker", "the executor's task", []route{
		{"GET", "/v1/tasks/{t}/result", ""},
		{"POST", "/v1/tasks/{t}/cancel", `{}`},
		{"POST", "/v1/tasks/{t}/input", `{"responses":[{"requestId":"r","optionId":"yes"}]}`},
	}, theirs, missing)
	// ... and the executor reads it and does the work.
	worker := srv.Client(t, "exe-worker")
	if _, err := worker.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := worker.TaskEvents(ctx, task.TaskID, client.EventsParams{}); err != nil {
		t.Fatal(err)
	}
	if st, body := callAs(t, srv, "exe-worker", "GET", "/v1/tasks?role=boss", ""); st != 400 || !strings.Contains(string(body), "role") {
		t.Errorf("role=boss: %d %s", st, body)
	}
}
