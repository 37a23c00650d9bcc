package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

// executorFixture is a task owned by owner and executed by worker, in a
// session of owner's.
type executorFixture struct {
	s                       *store.Store
	svc                     *tasks.Service
	ses                     *sessions.Service
	owner, worker, stranger authz.Principal
	session                 string
}

func newExecutorFixture(t *testing.T, sc store.Config) *executorFixture {
	t.Helper()
	s := storetest.Open(t, sc, metrics.New())
	f := &executorFixture{
		s: s, svc: replica(s),
		ses:   sessions.NewService(sessions.Config{}, s, waits.New(waits.Config{}, nil, time.Now), time.Now),
		owner: authz.Principal{ID: "exe-owner"}, worker: authz.Principal{ID: "exe-worker"}, stranger: authz.Principal{ID: "exe-stranger"},
	}
	f.svc.UseSessions(f.ses)
	raw, _, err := f.ses.Create(context.Background(), f.owner, sessions.CreateInput{}, idem.Key{})
	if err != nil {
		t.Fatal(err)
	}
	var ses sessions.Session
	if err := json.Unmarshal(raw, &ses); err != nil {
		t.Fatal(err)
	}
	f.session = ses.SessionID
	return f
}

// eachExecutor runs fn, in parallel with other tests, on a fresh fixture
// over every store backend.
func eachExecutor(t *testing.T, fn func(t *testing.T, ctx context.Context, f *executorFixture)) {
	t.Helper()
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		fn(t, context.Background(), newExecutorFixture(t, sc))
	})
}

// start makes a task of owner's that worker executes.
func (f *executorFixture) start(t *testing.T) tasks.Task {
	t.Helper()
	reply, err := f.svc.CreateWith(context.Background(), f.owner, tasks.CreateInput{SessionID: f.session, Kind: "build"},
		tasks.Start{Executor: f.worker.ID}, idem.Key{})
	if err != nil {
		t.Fatal(err)
	}
	return decodeTask(t, reply.JSON)
}

// listIDs pages through a list of p's to the end, limit at a time: the ids,
// sorted (tasks made in one millisecond have no order of their own), each
// once.
func listIDs(t *testing.T, svc *tasks.Service, p authz.Principal, f tasks.ListFilter, limit int) []string {
	t.Helper()
	var out []string
	cursor := ""
	for range 100 {
		page, err := svc.List(context.Background(), p, f, cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Items {
			out = append(out, decodeTask(t, raw).TaskID)
		}
		if page.Next == "" {
			slices.Sort(out)
			if len(slices.Compact(slices.Clone(out))) != len(out) {
				t.Fatalf("a task listed twice: %v", out)
			}
			return out
		}
		cursor = page.Next
	}
	t.Fatal("the list does not end")
	return nil
}

// The executor reads the task and does its work; the owner cancels and
// answers; anybody else meets a missing task.
func TestExecutorRunsTheTaskTheOwnerCancels(t *testing.T) {
	eachExecutor(t, func(t *testing.T, ctx context.Context, f *executorFixture) {
		task := f.start(t)
		if task.Owner != f.owner.ID || task.Executor != f.worker.ID || task.Requester != f.owner.ID {
			t.Fatalf("created: owner %q executor %q requester %q", task.Owner, task.Executor, task.Requester)
		}
		id := task.TaskID
		notFound := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, problem.ErrNotFound) {
				t.Fatalf("%s: %v, want not found", what, err)
			}
		}
		other := replica(f.s) // no snapshot cached: every check is on the stored task
		for _, svc := range []*tasks.Service{f.svc, other} {
			if _, _, err := svc.Get(ctx, f.worker, id); err != nil {
				t.Fatalf("the executor reads: %v", err)
			}
			_, _, err := svc.Get(ctx, f.stranger, id)
			notFound("a stranger reads", err)
		}
		run := func(p authz.Principal, cmd tasks.Command) error {
			_, err := other.Run(ctx, p, id, cmd, idem.Key{})
			return err
		}
		half := "half"
		progress := tasks.Command{Kind: tasks.CmdProgress, StatusMessage: &half}
		notFound("the owner reports progress", run(f.owner, progress))
		notFound("a stranger reports progress", run(f.stranger, progress))
		if err := run(f.worker, progress); err != nil {
			t.Fatalf("the executor reports progress: %v", err)
		}
		ask := tasks.Command{Kind: tasks.CmdRequireInput, Requests: []tasks.InputRequest{{RequestID: "r1", Prompt: "go?"}}}
		notFound("the owner asks", run(f.owner, ask))
		if err := run(f.worker, ask); err != nil {
			t.Fatalf("the executor asks: %v", err)
		}
		answer := func(by authz.Principal) tasks.Command {
			return tasks.Command{Kind: tasks.CmdRespond, Responses: []tasks.Answer{{RequestID: "r1", OptionID: "yes"}},
				Answerer: tasks.Answerer{By: by.ID, Via: "api"}}
		}
		notFound("the executor answers", run(f.worker, answer(f.worker)))
		notFound("a stranger answers", run(f.stranger, answer(f.stranger)))
		if err := run(f.owner, answer(f.owner)); err != nil {
			t.Fatalf("the owner answers: %v", err)
		}
		cancel := tasks.Command{Kind: tasks.CmdCancel, Reason: "no"}
		notFound("the executor cancels", run(f.worker, cancel))
		notFound("a stranger cancels", run(f.stranger, cancel))
		if _, _, _, err := other.Parent(ctx, f.worker, id); err != nil {
			t.Fatalf("the executor binds a hook: %v", err)
		}
		_, _, _, err := other.Parent(ctx, f.owner, id)
		notFound("the owner binds a hook", err)

		// The result is the owner's to collect.
		_, _, err = other.PollResult(ctx, f.worker, id, 0).Wait(ctx)
		notFound("the executor's result", err)
		if _, _, err := other.PollResult(ctx, f.owner, id, 0).Wait(ctx); err != nil {
			t.Fatalf("the owner's result: %v", err)
		}

		done := tasks.Command{Kind: tasks.CmdComplete, Result: json.RawMessage(`{"ok":true}`)}
		notFound("the owner completes", run(f.owner, done))
		if err := run(f.worker, done); err != nil {
			t.Fatalf("the executor completes: %v", err)
		}
		if err := run(f.worker, tasks.Command{Kind: tasks.CmdRelease}); err != nil {
			t.Fatalf("the executor releases: %v", err)
		}
	})
}

// role=executor lists the tasks the caller executes, whoever owns them,
// following their status; role=owner what it owns.
func TestListByRole(t *testing.T) {
	eachExecutor(t, func(t *testing.T, ctx context.Context, f *executorFixture) {
		var theirs []string
		for range 3 {
			theirs = append(theirs, f.start(t).TaskID)
		}
		slices.Sort(theirs)
		own := startTask(t, f.s, f.svc, f.worker) // the worker owns and executes this one
		exec := tasks.ListFilter{Role: tasks.RoleExecutor}
		if got, want := listIDs(t, f.svc, f.worker, exec, 2), slices.Sorted(slices.Values(append([]string{own}, theirs...))); !slices.Equal(got, want) {
			t.Fatalf("the worker executes %v, want %v", got, want)
		}
		if got := listIDs(t, f.svc, f.worker, tasks.ListFilter{}, 2); !slices.Equal(got, []string{own}) {
			t.Fatalf("the worker owns %v, want only %s", got, own)
		}
		if got := listIDs(t, f.svc, f.owner, tasks.ListFilter{Role: tasks.RoleOwner}, 2); !slices.Equal(got, theirs) {
			t.Fatalf("the owner owns %v, want %v", got, theirs)
		}
		if got := listIDs(t, f.svc, f.owner, exec, 2); len(got) != 0 {
			t.Fatalf("the owner executes %v, want none", got)
		}
		if got := listIDs(t, f.svc, f.stranger, exec, 2); len(got) != 0 {
			t.Fatalf("a stranger executes %v, want none", got)
		}
		byKind := tasks.ListFilter{Role: tasks.RoleExecutor, Kind: "build"}
		if got := listIDs(t, f.svc, f.worker, byKind, 2); !slices.Equal(got, theirs) {
			t.Fatalf("the worker executes of kind build %v, want %v", got, theirs)
		}
		inSession := tasks.ListFilter{Role: tasks.RoleExecutor, SessionID: f.session}
		if got := listIDs(t, f.svc, f.worker, inSession, 2); !slices.Equal(got, theirs) {
			t.Fatalf("the worker executes in the owner's session %v, want %v", got, theirs)
		}

		// Completing one moves it from working to completed in the
		// executor's lists.
		done := tasks.Command{Kind: tasks.CmdComplete, Result: json.RawMessage(`1`)}
		if _, err := f.svc.Run(ctx, f.worker, theirs[1], done, idem.Key{}); err != nil {
			t.Fatal(err)
		}
		working := tasks.ListFilter{Role: tasks.RoleExecutor, Status: tasks.Working}
		if got, want := listIDs(t, f.svc, f.worker, working, 1), slices.Sorted(slices.Values([]string{own, theirs[0], theirs[2]})); !slices.Equal(got, want) {
			t.Fatalf("the worker's working tasks %v, want %v", got, want)
		}
		// The index itself followed (the list's filter would hide a stale
		// entry), and it expires as the task does.
		part, _ := ids.PartitionOf(theirs[1], ids.TaskPrefix, f.s.Partitions)
		for status, want := range map[string]bool{wire.StatusWorking: false, wire.StatusCompleted: true} {
			key := f.s.Keys.ExecutorTasksByStatus(part, f.worker.ID, status)
			_, err := f.s.RDB.ZScore(ctx, key, theirs[1]).Result()
			if held := err == nil; held != want {
				t.Fatalf("the executor's %s index holds the completed task: %v (%v)", status, held, err)
			}
			if want {
				if ttl, err := f.s.RDB.PTTL(ctx, key).Result(); err != nil || ttl <= 0 {
					t.Fatalf("the executor's %s index expires in %v (%v)", status, ttl, err)
				}
			}
		}
		if _, err := f.s.RDB.ZScore(ctx, f.s.Keys.ExecutorTasks(part, f.owner.ID), own).Result(); err == nil {
			t.Fatal("a task its owner executes has an executor index entry")
		}
		completed := tasks.ListFilter{Role: tasks.RoleExecutor, Status: tasks.Completed}
		if got := listIDs(t, f.svc, f.worker, completed, 1); !slices.Equal(got, []string{theirs[1]}) {
			t.Fatalf("the worker's completed tasks %v, want %s", got, theirs[1])
		}

		// A session cancel moves the rest to cancelled.
		if _, _, err := f.ses.Cancel(ctx, f.owner, f.session, "stop", idem.Key{}); err != nil {
			t.Fatal(err)
		}
		if got := listIDs(t, f.svc, f.worker, working, 1); !slices.Equal(got, []string{own}) {
			t.Fatalf("the worker's working tasks after the cancel %v, want only %s", got, own)
		}
		if _, err := f.s.RDB.ZScore(ctx, f.s.Keys.ExecutorTasksByStatus(part, f.worker.ID, wire.StatusWorking), theirs[0]).Result(); err == nil {
			t.Fatal("the session cancel left a task in its executor's working index")
		}
		cancelled := tasks.ListFilter{Role: tasks.RoleExecutor, Status: tasks.Cancelled}
		if got, want := listIDs(t, f.svc, f.worker, cancelled, 1), []string{theirs[0], theirs[2]}; !slices.Equal(got, want) {
			t.Fatalf("the worker's cancelled tasks %v, want %v", got, want)
		}

		var verr *problem.ValidationError
		if _, err := f.svc.List(ctx, f.worker, tasks.ListFilter{Role: "boss"}, "", 10); !errors.As(err, &verr) || verr.Field != "role" {
			t.Fatalf("role=boss: %v, want invalid role", err)
		}
	})
}

// Concurrent first calls without a session agree on one default session of
// the caller's, an ordinary one; once the caller cancels it, the next call
// makes another. A repeat under an Idempotency-Key is the same task.
func TestCreateWithDefaultSession(t *testing.T) {
	eachExecutor(t, func(t *testing.T, ctx context.Context, f *executorFixture) {
		caller := authz.Principal{ID: "default-caller"}
		start := tasks.Start{Executor: f.worker.ID, DefaultSession: true}
		const n = 8
		got := make([]tasks.Task, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				svc := replica(f.s) // each its own replica: no hint shared
				svc.UseSessions(f.ses)
				reply, err := svc.CreateWith(ctx, caller, tasks.CreateInput{}, start, idem.Key{})
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = decodeTask(t, reply.JSON)
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		first := got[0].SessionID
		for _, task := range got {
			if task.SessionID != first || task.Owner != caller.ID || task.Executor != f.worker.ID {
				t.Fatalf("task %s in %s, owner %s, executor %s; want all in %s", task.TaskID, task.SessionID, task.Owner, task.Executor, first)
			}
		}
		listSessions := func() []string {
			page, err := f.ses.List(ctx, caller, "", "", 10)
			if err != nil {
				t.Fatal(err)
			}
			return sessionIDs(t, page)
		}
		if ids := listSessions(); !slices.Equal(ids, []string{first}) {
			t.Fatalf("the caller's sessions %v, want only %s", ids, first)
		}

		// A repeat under a key is the same task.
		key := idem.KeyFor("default-caller POST tool", []byte(`{"a":1}`))
		one, err := f.svc.CreateWith(ctx, caller, tasks.CreateInput{}, start, key)
		if err != nil {
			t.Fatal(err)
		}
		fresh := replica(f.s)
		fresh.UseSessions(f.ses)
		again, err := fresh.CreateWith(ctx, caller, tasks.CreateInput{}, start, key)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := decodeTask(t, one.JSON), decodeTask(t, again.JSON); a.TaskID != b.TaskID || !again.Replayed {
			t.Fatalf("a repeat made %s (replayed %v), want %s again", b.TaskID, again.Replayed, a.TaskID)
		}

		// The caller cancels its default session: the next call (on a
		// replica whose hint names the cancelled one) makes another.
		if _, _, err := f.ses.Cancel(ctx, caller, first, "done", idem.Key{}); err != nil {
			t.Fatal(err)
		}
		reply, err := f.svc.CreateWith(ctx, caller, tasks.CreateInput{}, start, idem.Key{})
		if err != nil {
			t.Fatal(err)
		}
		next := decodeTask(t, reply.JSON).SessionID
		if next == first {
			t.Fatalf("a task went to the cancelled default session %s", first)
		}
		if ids := listSessions(); len(ids) != 2 || !slices.Contains(ids, next) {
			t.Fatalf("the caller's sessions %v, want %s and %s", ids, first, next)
		}
	})
}

// sessionIDs reads the ids of a page of sessions.
func sessionIDs(t *testing.T, page paging.Page) []string {
	t.Helper()
	var out []string
	for _, raw := range page.Items {
		var s sessions.Session
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s.SessionID)
	}
	return out
}
