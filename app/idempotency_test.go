package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	replicas := apptest.Replicas(t, 2, app.Config{})
	a, b := replicas[0], replicas[1]
	ctx := context.Background()
	tok := apptest.Token(t, "idem")
	cl := client.New(a.URL, tok)

	var first, again client.Response
	s1, err := cl.CreateSession(ctx, client.CreateSessionInput{Metadata: map[string]any{"n": 1}},
		client.WithIdempotencyKey("ses-1"), client.WithResponse(&first))
	if err != nil {
		t.Fatal(err)
	}
	s2, err := cl.CreateSession(ctx, client.CreateSessionInput{Metadata: map[string]any{"n": 1}},
		client.WithIdempotencyKey("ses-1"), client.WithResponse(&again))
	if err != nil {
		t.Fatal(err)
	}
	if first.Replayed || !again.Replayed || again.Status != 201 || s1.SessionID != s2.SessionID {
		t.Fatalf("replay: first %+v again %+v, sessions %s %s", first, again, s1.SessionID, s2.SessionID)
	}
	_, err = cl.CreateSession(ctx, client.CreateSessionInput{Metadata: map[string]any{"n": 2}}, client.WithIdempotencyKey("ses-1"))
	if !client.IsCode(err, client.CodeIdempotencyConflict) {
		t.Fatalf("same key, different body: %v", err)
	}
	// The key is the caller's: another principal's same key is another request.
	other, err := cl.WithToken(apptest.Token(t, "idem-2")).CreateSession(ctx,
		client.CreateSessionInput{Metadata: map[string]any{"n": 1}}, client.WithIdempotencyKey("ses-1"))
	if err != nil || other.SessionID == s1.SessionID {
		t.Fatalf("another principal's key: %v %v", other, err)
	}

	task, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: s1.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	// A stored answer is replayed even when the command would now be refused.
	done, err := cl.Complete(ctx, task.TaskID, "r", client.WithIdempotencyKey("c"))
	if err != nil {
		t.Fatal(err)
	}
	var meta client.Response
	replayed, err := cl.Complete(ctx, task.TaskID, "r", client.WithIdempotencyKey("c"), client.WithResponse(&meta))
	if err != nil || !meta.Replayed || replayed.Revision != done.Revision {
		t.Fatalf("replay after completion: %+v %v %+v", replayed, err, meta)
	}
	if _, err := cl.Complete(ctx, task.TaskID, "r"); !client.IsCode(err, client.CodeTaskTerminal) {
		t.Fatalf("without the key the repeat is refused: %v", err)
	}

	// Concurrent requests with one key, spread over two replicas, execute once.
	task, err = cl.CreateTask(ctx, client.CreateTaskInput{SessionID: s1.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	const n = 24
	var wg sync.WaitGroup
	bodies := make([][]byte, n)
	replays := make([]bool, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client.New([]string{a.URL, b.URL}[i%2], tok)
			var m client.Response
			got, err := c.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("once")},
				client.WithIdempotencyKey("p-1"), client.WithResponse(&m))
			if err != nil {
				t.Error(err)
				return
			}
			bodies[i], _ = json.Marshal(got)
			replays[i] = m.Replayed
		}()
	}
	wg.Wait()
	executed := 0
	for i := range n {
		if !replays[i] {
			executed++
		}
		if !bytes.Equal(bodies[i], bodies[0]) {
			t.Fatalf("answers differ:\n%s\n%s", bodies[i], bodies[0])
		}
	}
	after, _ := cl.GetTask(ctx, task.TaskID)
	if executed != 1 || after.Revision != task.Revision+1 {
		t.Fatalf("%d of %d executed; revision %d -> %d", executed, n, task.Revision, after.Revision)
	}
}

// A repeat of a create (POST /v1/tasks, POST /v1/hooks) with the key of an
// earlier create but another session is a different body: 409, never a
// second task or hook, wherever the two sessions live; a create's key is the
// caller's across partitions.
func TestCreateKeyAcrossSessions(t *testing.T) {
	apptest.EachBackend(t, app.Config{}, func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		cl := srv.Client(t, "idem-sessions")
		first, second := sessionsInTwoPartitions(t, cl)
		task, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: first.SessionID}, client.WithIdempotencyKey("t-1"))
		if err != nil {
			t.Fatal(err)
		}
		other, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: second.SessionID}, client.WithIdempotencyKey("t-1"))
		if !client.IsCode(err, client.CodeIdempotencyConflict) {
			t.Fatalf("same key, another session: %+v %v", other, err)
		}
		var meta client.Response
		again, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: first.SessionID},
			client.WithIdempotencyKey("t-1"), client.WithResponse(&meta))
		if err != nil || !meta.Replayed || again.TaskID != task.TaskID {
			t.Fatalf("same key, same body: %+v %v %+v", again, err, meta)
		}
		page, err := cl.ListTasks(ctx, client.ListTasksParams{SessionID: second.SessionID})
		if err != nil || len(page.Items) != 0 {
			t.Fatalf("a task was created in the second session: %+v %v", page, err)
		}

		hook, err := cl.CreateHook(ctx, client.CreateHookInput{SessionID: first.SessionID}, client.WithIdempotencyKey("h-1"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.CreateHook(ctx, client.CreateHookInput{SessionID: second.SessionID}, client.WithIdempotencyKey("h-1")); !client.IsCode(err, client.CodeIdempotencyConflict) {
			t.Fatalf("a hook, same key, another session: %v", err)
		}
		var hookMeta client.Response
		againHook, err := cl.CreateHook(ctx, client.CreateHookInput{SessionID: first.SessionID}, client.WithIdempotencyKey("h-1"), client.WithResponse(&hookMeta))
		if err != nil || !hookMeta.Replayed || againHook.HookID != hook.HookID {
			t.Fatalf("a hook, same key, same body: %+v %v %+v", againHook, err, hookMeta)
		}
		hooks, err := cl.ListHooks(ctx, client.ListHooksParams{SessionID: second.SessionID})
		if err != nil || len(hooks.Items) != 0 {
			t.Fatalf("a hook was created in the second session: %+v %v", hooks, err)
		}

		// A refused create stores nothing: its key stays free for another body.
		if _, err := cl.CancelSession(ctx, first.SessionID, ""); err != nil {
			t.Fatal(err)
		}
		_, err = cl.CreateTask(ctx, client.CreateTaskInput{SessionID: first.SessionID}, client.WithIdempotencyKey("t-2"))
		if !client.IsCode(err, client.CodeSessionNotActive) {
			t.Fatalf("create in a cancelled session: %v", err)
		}
		if _, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: second.SessionID}, client.WithIdempotencyKey("t-2")); err != nil {
			t.Fatalf("the key of a refused create, another body: %v", err)
		}
	})
}

// sessionsInTwoPartitions opens sessions until two live in different
// partitions (ids carry theirs in the two characters after the prefix).
func sessionsInTwoPartitions(t *testing.T, cl *client.Client) (*client.Session, *client.Session) {
	t.Helper()
	ctx := context.Background()
	partition := func(id string) string { return id[len("ses_"):][:2] }
	first := apptest.Session(t, ctx, cl)
	second := first
	for partition(second.SessionID) == partition(first.SessionID) {
		second = apptest.Session(t, ctx, cl)
	}
	return first, second
}
