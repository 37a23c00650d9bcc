package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// The servers of these tests re-check a waiting request only once an hour, so
// a wait can end early only through a real wake-up.
var noRecheck = app.Config{RecheckInterval: time.Hour}

// longWait is the wait of the calls these tests wake. Each is made with a
// context that ends well before it (beforeTheWaitEnds): an answer that comes
// at all came from a wake-up, not from the wait running out.
const longWait = 30 * time.Second

func beforeTheWaitEnds(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, longWait*2/3)
}

// awaitWaiting waits until srv holds one waiting request: a change made
// after that reaches the request only as a wake-up, where a change made
// before it would be found by the request's first read.
func awaitWaiting(t *testing.T, srv *apptest.Server) {
	t.Helper()
	storetest.WaitFor(t, "the request to wait on the server", func() bool {
		return testutil.ToFloat64(srv.App.Metrics.Waiters) == 1
	})
}

type waited[T any] struct {
	v   T
	err error
}

// inBackground makes call, with a context that ends before longWait does,
// in a goroutine; its answer arrives on the channel.
func inBackground[T any](ctx context.Context, call func(context.Context) (T, error)) <-chan waited[T] {
	done := make(chan waited[T], 1)
	go func() {
		cctx, cancel := beforeTheWaitEnds(ctx)
		defer cancel()
		v, err := call(cctx)
		done <- waited[T]{v, err}
	}()
	return done
}

// stillWaiting fails the test when the call whose answer arrives on done
// has answered already: what it answered is what.
func stillWaiting[T any](t *testing.T, done <-chan waited[T], what string) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("%s: %+v %v", what, r.v, r.err)
	default:
	}
}

// A wakeCheck has waiter, a client of srv, wait for a change that poster
// makes.
type wakeCheck func(t *testing.T, ctx context.Context, srv *apptest.Server, waiter, poster *client.Client)

// onEveryTopology runs the test in parallel with the others, and check on
// every store with one client as both waiter and poster, and on every
// shared store with the waiter on one replica and the poster on another.
func onEveryTopology(t *testing.T, check wakeCheck) {
	t.Helper()
	t.Parallel()
	t.Run("one server", func(t *testing.T) {
		t.Parallel()
		eachStore(t, noRecheck, func(t *testing.T, e *env) {
			check(t, testContext(t), e.srv, e.alice, e.alice)
		})
	})
	t.Run("across replicas", func(t *testing.T) {
		t.Parallel()
		storetest.EachSharedBackend(t, func(t *testing.T, sc store.Config) {
			a := apptest.Start(t, sc, withTestDefaults(noRecheck))
			b := apptest.Start(t, sc, withTestDefaults(noRecheck))
			token := apptest.Token(t, "alice")
			check(t, testContext(t), a, newClient(t, a.URL, token), newClient(t, b.URL, token))
		})
	})
}

// await receives from ch, failing the test when ctx ends first.
func await[T any](t *testing.T, ctx context.Context, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("%s: %v", what, ctx.Err())
		panic("unreachable")
	}
}

// waitWakesOn checks that a WaitTask sent to waiter, a client of srv, wakes
// when poster posts progress.
func waitWakesOn(t *testing.T, ctx context.Context, srv *apptest.Server, waiter, poster *client.Client) {
	task := newTask(t, ctx, poster)
	done := inBackground(ctx, func(ctx context.Context) (*client.Task, error) {
		return waiter.WaitTask(ctx, task.TaskID, task.Revision, longWait)
	})
	awaitWaiting(t, srv)
	if _, err := poster.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("halfway")}); err != nil {
		t.Fatalf("Progress: %v", err)
	}
	r := await(t, ctx, done, "WaitTask did not answer")
	if r.err != nil {
		t.Fatalf("WaitTask was not woken: %v", r.err)
	}
	if r.v.Revision != task.Revision+1 || r.v.StatusMessage != "halfway" {
		t.Fatalf("WaitTask answered revision %d %q, want %d \"halfway\"", r.v.Revision, r.v.StatusMessage, task.Revision+1)
	}
}

// A wait wakes on progress, also on one replica when the change is made
// through another replica of the same Redis.
func TestWaitTaskWakesOnProgress(t *testing.T) {
	onEveryTopology(t, waitWakesOn)
}

func TestResultWakesOnComplete(t *testing.T) {
	eachTask(t, noRecheck, func(t *testing.T, ctx context.Context, e *env, task *client.Task) {
		type result struct {
			task     *client.Task
			terminal bool
			err      error
		}
		done := make(chan result, 1)
		go func() {
			rctx, cancel := beforeTheWaitEnds(ctx)
			defer cancel()
			got, terminal, err := e.alice.Result(rctx, task.TaskID, longWait)
			done <- result{got, terminal, err}
		}()
		awaitWaiting(t, e.srv)
		if _, err := e.alice.Complete(ctx, task.TaskID, "ok"); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		r := await(t, ctx, done, "Result did not answer")
		if r.err != nil || !r.terminal || r.task.Status != client.StatusCompleted || !jsonEqual(t, r.task.Result, `"ok"`) {
			t.Fatalf("Result: %+v, %v, %v", r.task, r.terminal, r.err)
		}
	})
}

func TestTaskEventsWaitForTheNextEvent(t *testing.T) {
	eachTask(t, noRecheck, func(t *testing.T, ctx context.Context, e *env, task *client.Task) {
		first, err := e.alice.TaskEvents(ctx, task.TaskID, client.EventsParams{})
		if err != nil || len(first.Events) != 1 {
			t.Fatalf("TaskEvents: %+v, %v", first, err)
		}
		done := inBackground(ctx, func(ctx context.Context) (*client.EventPage, error) {
			return e.alice.TaskEvents(ctx, task.TaskID, client.EventsParams{After: first.Cursor, Wait: longWait})
		})
		awaitWaiting(t, e.srv)
		if _, err := e.alice.Message(ctx, task.TaskID, "hello", nil); err != nil {
			t.Fatalf("Message: %v", err)
		}
		r := await(t, ctx, done, "TaskEvents did not answer")
		if r.err != nil || len(r.v.Events) != 1 || r.v.Events[0].Type != client.EventTaskMessage || r.v.Cursor != r.v.Events[0].ID {
			t.Fatalf("TaskEvents with wait: %+v, %v", r.v, r.err)
		}
	})
}

// A long-poll is not cut short by an HTTP client whose own timeout is
// shorter than the wait; without a change it answers the task as it is.
func TestWaitOutlastsTheHTTPTimeout(t *testing.T) {
	eachTask(t, app.Config{}, func(t *testing.T, ctx context.Context, e *env, task *client.Task) {
		short := client.New(e.url, apptest.Token(t, "alice"), client.WithHTTPClient(&http.Client{Timeout: 100 * time.Millisecond}))

		got, err := short.WaitTask(ctx, task.TaskID, task.Revision, 500*time.Millisecond)
		if err != nil || got.Revision != task.Revision {
			t.Fatalf("WaitTask: %+v, %v", got, err)
		}
		got, terminal, err := short.Result(ctx, task.TaskID, 500*time.Millisecond)
		if err != nil || terminal || got.Status != client.StatusWorking {
			t.Fatalf("Result: %+v, %v, %v", got, terminal, err)
		}
		// A read that does not wait is held to the client's timeout; only
		// waits outlast it, so the cursor comes from a client without one.
		all, err := e.alice.TaskEvents(ctx, task.TaskID, client.EventsParams{})
		if err != nil {
			t.Fatalf("TaskEvents: %v", err)
		}
		page, err := short.TaskEvents(ctx, task.TaskID, client.EventsParams{After: all.Cursor, Wait: 500 * time.Millisecond})
		if err != nil || len(page.Events) != 0 || page.Cursor != all.Cursor {
			t.Fatalf("TaskEvents: %+v, %v", page, err)
		}
	})
}
