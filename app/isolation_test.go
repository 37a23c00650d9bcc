package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/ids"
)

// Another principal's objects do not exist for them: every route answers
// exactly as for a missing id.
func TestOtherPrincipalsSeeNotFound(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, app.Config{})
	ctx := context.Background()
	alice := srv.Client(t, "alice")
	ses, task := apptest.SessionWithTask(t, ctx, alice, client.CreateTaskInput{})
	missing := strings.NewReplacer("{s}", ids.New(ids.SessionPrefix, 0), "{t}", ids.New(ids.TaskPrefix, 0))
	routes := append([]route{
		{"GET", "/v1/sessions/{s}", ""},
		{"GET", "/v1/sessions/{s}/events", ""},
		{"POST", "/v1/tasks", `{"sessionId":"{s}"}`},
	}, taskRoutes...)
	answersAsMissing(t, srv, "mallory", "alice's object", routes, strings.NewReplacer("{s}", ses.SessionID, "{t}", task.TaskID), missing)
	// Nothing mallory sent changed alice's task.
	after, err := alice.GetTask(ctx, task.TaskID)
	if err != nil || after.Revision != task.Revision {
		t.Fatalf("alice's task changed: %+v %v", after, err)
	}
	// Lists are per owner.
	m := alice.WithToken(apptest.Token(t, "mallory"))
	if _, err := m.CreateSession(ctx, client.CreateSessionInput{}); err != nil {
		t.Fatal(err)
	}
	sessions, tasks := owned(t, ctx, m)
	if len(sessions) != 1 || sessions[0].Owner != "mallory" {
		t.Fatalf("mallory's sessions: %+v", sessions)
	}
	if len(tasks) != 0 {
		t.Fatalf("mallory's tasks: %+v", tasks)
	}
	tl, err := m.ListTasks(ctx, client.ListTasksParams{SessionID: ses.SessionID})
	if err != nil || len(tl.Items) != 0 {
		t.Fatalf("mallory listing alice's session: %+v %v", tl, err)
	}
	// The requester may read and answer, not run the task.
	aliceForBob := alice.WithToken(apptest.TokenActingFor(t, "alice", []string{"bob"}))
	task2, err := aliceForBob.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Requester: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	bob := alice.WithToken(apptest.Token(t, "bob"))
	if _, err := bob.GetTask(ctx, task2.TaskID); err != nil {
		t.Fatalf("requester read: %v", err)
	}
	if _, err := bob.Complete(ctx, task2.TaskID, nil); !client.IsCode(err, client.CodeNotFound) {
		t.Fatalf("requester completing: %v", err)
	}
	if _, err := alice.RequireInput(ctx, task2.TaskID, []client.InputRequest{{RequestID: "q", Prompt: "ok?", Display: "confirmation"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := bob.Respond(ctx, task2.TaskID, []client.Answer{{RequestID: "q", OptionID: "yes"}}); err != nil || got.Status != client.StatusWorking {
		t.Fatalf("requester answering: %+v %v", got, err)
	}
	// An admin may read anybody's task.
	if _, err := alice.WithToken(apptest.Token(t, "ops", "admin")).GetTask(ctx, task.TaskID); err != nil {
		t.Fatalf("admin read: %v", err)
	}
}

// owned is the first page of cl's sessions and of its tasks, or fails the
// test.
func owned(t *testing.T, ctx context.Context, cl *client.Client) ([]client.Session, []client.Task) {
	t.Helper()
	sessions, err := cl.ListSessions(ctx, client.ListSessionsParams{})
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	tasks, err := cl.ListTasks(ctx, client.ListTasksParams{})
	if err != nil {
		t.Fatalf("ListTasks: %v", err)
	}
	return sessions.Items, tasks.Items
}

// route is one request: {s} in its path and body stands for a session id,
// {t} for a task id.
type route struct{ method, path, body string }

// taskRoutes are the routes of one task, read and written.
var taskRoutes = []route{
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
}

// answersAsMissing checks that each route, sent as who with the ids of
// theirs (the objects of whose) and then with the ids of missing, answers
// 404 both times with the same body.
func answersAsMissing(t *testing.T, srv *apptest.Server, who, whose string, routes []route, theirs, missing *strings.Replacer) {
	t.Helper()
	for _, r := range routes {
		st, body := callAs(t, srv, who, r.method, theirs.Replace(r.path), theirs.Replace(r.body))
		noneSt, noneBody := callAs(t, srv, who, r.method, missing.Replace(r.path), missing.Replace(r.body))
		if st != 404 || noneSt != 404 || string(body) != string(noneBody) {
			t.Errorf("%s %s: %s %d %s; a missing one %d %s", r.method, r.path, whose, st, body, noneSt, noneBody)
		}
	}
}
