package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
)

// A filter naming another principal's session or task answers exactly as a
// filter naming one that does not exist: no items and no cursor holding one
// of their ids.
func TestForeignFilterAnswersAsMissing(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, app.Config{})
	ctx := context.Background()
	alice := srv.Client(t, "alice")
	bob := srv.Client(t, "bob")
	ses, task := apptest.SessionWithTask(t, ctx, alice, client.CreateTaskInput{})
	for range 3 {
		if _, err := alice.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID}); err != nil {
			t.Fatal(err)
		}
		if _, err := alice.CreateHook(ctx, client.CreateHookInput{TaskID: task.TaskID}); err != nil {
			t.Fatal(err)
		}
	}
	missingSession := ids.New(ids.SessionPrefix, 1)
	missingTask := ids.New(ids.TaskPrefix, 1)
	same := func(what string, foreign, missing any) {
		t.Helper()
		a, _ := json.Marshal(foreign)
		b, _ := json.Marshal(missing)
		if string(a) != string(b) {
			t.Errorf("%s: another principal's answers %s, a missing one %s", what, a, b)
		}
	}
	for _, status := range []string{"", "working"} {
		foreign, err := bob.ListTasks(ctx, client.ListTasksParams{SessionID: ses.SessionID, Status: status, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		missing, err := bob.ListTasks(ctx, client.ListTasksParams{SessionID: missingSession, Status: status, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		same("tasks by session, status "+status, foreign, missing)
	}
	foreign, err := bob.ListHooks(ctx, client.ListHooksParams{TaskID: task.TaskID, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	missing, err := bob.ListHooks(ctx, client.ListHooksParams{TaskID: missingTask, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	same("hooks by task", foreign, missing)
	foreign, err = bob.ListHooks(ctx, client.ListHooksParams{SessionID: ses.SessionID, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	missing, err = bob.ListHooks(ctx, client.ListHooksParams{SessionID: missingSession, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	same("hooks by session", foreign, missing)
	// Alice still pages through her own.
	page, err := alice.ListTasks(ctx, client.ListTasksParams{SessionID: ses.SessionID, Limit: 1})
	if err != nil || len(page.Items) != 1 || page.NextCursor == "" {
		t.Fatalf("owner's page: %+v %v", page, err)
	}
}

// Another principal's large task or session is refused before its record
// leaves Redis, so the refusal costs what a missing id costs whatever the
// record's size; a filtered list reads no record it does not return.
func TestRecordsAreNotReadForNothing(t *testing.T) {
	t.Parallel()
	srv, proxy := apptest.BehindProxy(t, app.Config{})
	ctx := context.Background()
	alice := srv.Client(t, "alice")
	bob := srv.Client(t, "bob")
	big := strings.Repeat("x", 900<<10)
	ses, err := alice.CreateSession(ctx, client.CreateSessionInput{Metadata: map[string]any{"big": big}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := alice.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Input: big})
	if err != nil {
		t.Fatal(err)
	}
	read := func(what string, call func() error) int64 {
		t.Helper()
		before := proxy.ReplyBytes()
		if err := call(); !client.IsCode(err, client.CodeNotFound) {
			t.Fatalf("%s: %v, want not_found", what, err)
		}
		return proxy.ReplyBytes() - before
	}
	foreign := read("bob reads alice's task", func() error { _, err := bob.GetTask(ctx, task.TaskID); return err })
	missing := read("bob reads a missing task", func() error {
		_, err := bob.GetTask(ctx, ids.New(ids.TaskPrefix, 2))
		return err
	})
	if foreign > 1024 || missing > 1024 {
		t.Errorf("refusing a task read %d bytes from Redis (a missing one %d), want no record", foreign, missing)
	}
	foreign = read("bob reads alice's session", func() error { _, err := bob.GetSession(ctx, ses.SessionID); return err })
	if foreign > 1024 {
		t.Errorf("refusing a session read %d bytes from Redis, want no record", foreign)
	}

	// Ten large tasks, all completed: a list of working ones is empty and
	// reads none of them.
	for _, id := range apptest.StartTasksLike(t, ctx, alice, client.CreateTaskInput{SessionID: ses.SessionID, Input: big[:100<<10]}, 10) {
		if _, err := alice.Complete(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.Complete(ctx, task.TaskID, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []client.ListTasksParams{{Status: "working", Limit: 100}, {SessionID: ses.SessionID, Status: "working", Limit: 100}} {
		before := proxy.ReplyBytes()
		page, err := alice.ListTasks(ctx, p)
		if err != nil || len(page.Items) != 0 || page.NextCursor != "" {
			t.Fatalf("working tasks: %+v %v, want an empty last page", page, err)
		}
		if n := proxy.ReplyBytes() - before; n > 16<<10 {
			t.Errorf("an empty filtered list (%+v) read %d bytes from Redis", p, n)
		}
	}
	// A page holds at most a mebibyte of tasks: the 900 KiB one and the ten
	// of 100 KiB come in pages, every one once.
	seen := map[string]bool{}
	p := client.ListTasksParams{Status: "completed", Limit: 100}
	for pages := 0; ; pages++ {
		page, err := alice.ListTasks(ctx, p)
		if err != nil || pages > 11 {
			t.Fatalf("completed tasks, page %d: %v", pages, err)
		}
		for _, tk := range page.Items {
			if seen[tk.TaskID] {
				t.Fatalf("task %s listed twice", tk.TaskID)
			}
			seen[tk.TaskID] = true
		}
		if page.NextCursor == "" {
			break
		}
		p.Cursor = page.NextCursor
	}
	if len(seen) != 11 || !seen[task.TaskID] {
		t.Fatalf("completed tasks: %d, want 11 with the large one", len(seen))
	}
}

// A session holds at most TASKHOOK_MAX_TASKS_PER_SESSION live tasks (429
// too_many_tasks), and a task record at most TASKHOOK_MAX_TASK_BYTES (413
// task_too_large, the task unchanged).
func TestSessionLimits(t *testing.T) {
	t.Parallel()
	apptest.EachBackend(t, app.Config{MaxTasksPerSession: 3, MaxTaskBytes: 8192}, func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		cl := srv.Client(t, "limits")
		ses := apptest.Session(t, ctx, cl)
		live := apptest.StartTasks(t, ctx, cl, ses.SessionID, 3)
		_, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID})
		var e *client.Error
		if !asError(err, &e) || e.Status != 429 || e.Code != "too_many_tasks" {
			t.Fatalf("a fourth live task: %v, want 429 too_many_tasks", err)
		}
		if _, err := cl.Complete(ctx, live[0], nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID}); err != nil {
			t.Fatalf("a task after one finished: %v", err)
		}

		_, err = cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Input: strings.Repeat("y", 9000)})
		if !asError(err, &e) || e.Status != 413 || e.Code != "task_too_large" {
			t.Fatalf("a task above the size limit: %v, want 413 task_too_large", err)
		}
		_, err = cl.Progress(ctx, live[1], client.ProgressInput{Progress: strings.Repeat("z", 9000)})
		if !asError(err, &e) || e.Status != 413 || e.Code != "task_too_large" {
			t.Fatalf("progress past the size limit: %v, want 413 task_too_large", err)
		}
		got, err := cl.GetTask(ctx, live[1])
		if err != nil || got.Revision != 1 {
			t.Fatalf("task after a refused progress: %+v %v, want revision 1", got, err)
		}
	})
}

// A session cancel over many tasks runs as many short scripts, not one long
// one, and a cancel whose replica died after it began is finished by
// another replica's resumer.
func TestSessionCancelRunsInBatchesAndResumes(t *testing.T) {
	t.Parallel()
	srv, proxy := apptest.BehindProxy(t, app.Config{})
	ctx := context.Background()
	cl := srv.Client(t, "canceller")
	const n = 100
	open := func() (*client.Session, []string) {
		ses := apptest.Session(t, ctx, cl)
		return ses, apptest.StartTasksLike(t, ctx, cl, client.CreateTaskInput{SessionID: ses.SessionID, Input: strings.Repeat("i", 2048)}, n)
	}

	ses, taskIDs := open()
	before := proxy.Count("evalsha")
	out, err := cl.CancelSession(ctx, ses.SessionID, "done")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.CancelledTaskIDs) != n {
		t.Fatalf("cancelled %d tasks, want %d", len(out.CancelledTaskIDs), n)
	}
	if scripts := proxy.Count("evalsha") - before; scripts < n/16 {
		t.Errorf("the cancel of %d tasks ran %d scripts, want batches of at most 16 tasks", n, scripts)
	}

	// A replica began a cancel and died: the session is cancelling, its
	// tasks live, and its lease has run out.
	ses, taskIDs = open()
	part, _ := ids.PartitionOf(ses.SessionID, ids.SessionPrefix, srv.App.Store.Partitions)
	raw, err := srv.App.Store.GetJSON(ctx, srv.App.Store.Keys.Session(part, ses.SessionID))
	if err != nil {
		t.Fatal(err)
	}
	var sesJSON map[string]any
	_ = json.Unmarshal(raw, &sesJSON)
	sesJSON["status"] = "cancelled"
	raw, _ = json.Marshal(sesJSON)
	res, err := srv.App.Store.BeginCancel(ctx, part, ses.SessionID, raw, "replica died", time.Now().Add(-time.Hour))
	if err != nil || res.Outcome != store.OK {
		t.Fatalf("begin cancel: %+v %v", res, err)
	}
	if _, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID}); !client.IsCode(err, client.CodeSessionNotActive) {
		t.Fatalf("a task in a cancelling session: %v, want session_not_active", err)
	}
	srv.App.Resumer.Sweep(ctx)
	for _, id := range taskIDs {
		tk, err := cl.GetTask(ctx, id)
		if err != nil || tk.Status != "cancelled" || tk.CancelReason != "replica died" {
			t.Fatalf("task after the resumed cancel: %+v %v", tk, err)
		}
	}
	evs, err := cl.SessionEvents(ctx, ses.SessionID, client.EventsParams{After: "", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	last := evs.Events[len(evs.Events)-1]
	var data struct {
		CancelledTaskIDs []string `json:"cancelledTaskIds"`
	}
	if last.Type != wire.EventSessionCancelled || json.Unmarshal(last.Data, &data) != nil || len(data.CancelledTaskIDs) != n {
		t.Fatalf("last session event %s with %d ids, want session.cancelled with %d", last.Type, len(data.CancelledTaskIDs), n)
	}
	again, err := cl.CancelSession(ctx, ses.SessionID, "again")
	if err != nil || len(again.CancelledTaskIDs) != 0 || again.Session.Status != client.SessionCancelled {
		t.Fatalf("cancel after the resumed one: %+v %v, want a no-op", again, err)
	}
}

// A principal listing faster than TASKHOOK_LIST_RATE gets 429 rate_limited
// with Retry-After; another principal lists on.
func TestListsArePacedPerPrincipal(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, app.Config{ListRate: 0.1, ListBurst: 2})
	ctx := context.Background()
	busy := srv.Client(t, "busy")
	calm := srv.Client(t, "calm")
	for range 2 {
		if _, err := busy.ListTasks(ctx, client.ListTasksParams{Status: "working"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := busy.ListSessions(ctx, client.ListSessionsParams{})
	var e *client.Error
	if !asError(err, &e) || e.Status != 429 || e.Code != client.CodeRateLimited || e.RetryAfter < time.Second {
		t.Fatalf("a third list at once: %v, want 429 rate_limited with Retry-After", err)
	}
	if _, err := calm.ListHooks(ctx, client.ListHooksParams{}); err != nil {
		t.Fatalf("another principal's list: %v", err)
	}
}

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
