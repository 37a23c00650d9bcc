package client_test

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// The servers of these tests re-check a waiting request only once an hour, so
// a wait can end early only through a real wake-up.
var noRecheck = app.Config{RecheckInterval: time.Hour}

// afterSent returns a context whose request signals sent once it is on the wire.
func afterSent(ctx context.Context) (context.Context, <-chan struct{}) {
	sent := make(chan struct{})
	var once sync.Once
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(sent) }) },
	}), sent
}

type waited[T any] struct {
	v   T
	err error
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

// waitWakesOn checks that a WaitTask sent to waiter wakes when poster posts
// progress.
func waitWakesOn(t *testing.T, ctx context.Context, waiter, poster *client.Client) {
	task := newTask(t, ctx, poster)
	wctx, sent := afterSent(ctx)
	done := make(chan waited[*client.Task], 1)
	go func() {
		got, err := waiter.WaitTask(wctx, task.TaskID, task.Revision, 30*time.Second)
		done <- waited[*client.Task]{got, err}
	}()
	await(t, ctx, sent, "the wait was not sent")
	if _, err := poster.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("halfway")}); err != nil {
		t.Fatalf("Progress: %v", err)
	}
	r := await(t, ctx, done, "WaitTask did not answer")
	if r.err != nil {
		t.Fatalf("WaitTask: %v", r.err)
	}
	if r.v.Revision != task.Revision+1 || r.v.StatusMessage != "halfway" {
		t.Fatalf("WaitTask answered revision %d %q, want %d \"halfway\"", r.v.Revision, r.v.StatusMessage, task.Revision+1)
	}
}

func TestWaitTaskWakesOnProgress(t *testing.T) {
	t.Parallel()
	eachStore(t, noRecheck, func(t *testing.T, e *env) {
		waitWakesOn(t, testContext(t), e.alice, e.alice)
	})
}

// A wait on one replica wakes on a change made through another replica of
// the same Redis.
func TestWaitTaskWakesAcrossReplicas(t *testing.T) {
	t.Parallel()
	storetest.EachSharedBackend(t, func(t *testing.T, sc store.Config) {
		a := apptest.Start(t, sc, withTestDefaults(noRecheck))
		b := apptest.Start(t, sc, withTestDefaults(noRecheck))
		token := apptest.Token(t, "alice")
		waitWakesOn(t, testContext(t), newClient(t, a.URL, token), newClient(t, b.URL, token))
	})
}

func TestResultWakesOnComplete(t *testing.T) {
	t.Parallel()
	eachStore(t, noRecheck, func(t *testing.T, e *env) {
		ctx := testContext(t)
		task := newTask(t, ctx, e.alice)
		rctx, sent := afterSent(ctx)
		type result struct {
			task     *client.Task
			terminal bool
			err      error
		}
		done := make(chan result, 1)
		go func() {
			got, terminal, err := e.alice.Result(rctx, task.TaskID, 30*time.Second)
			done <- result{got, terminal, err}
		}()
		await(t, ctx, sent, "the wait was not sent")
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
	t.Parallel()
	eachStore(t, noRecheck, func(t *testing.T, e *env) {
		ctx := testContext(t)
		task := newTask(t, ctx, e.alice)
		first, err := e.alice.TaskEvents(ctx, task.TaskID, client.EventsParams{})
		if err != nil || len(first.Events) != 1 {
			t.Fatalf("TaskEvents: %+v, %v", first, err)
		}
		rctx, sent := afterSent(ctx)
		done := make(chan waited[*client.EventPage], 1)
		go func() {
			page, err := e.alice.TaskEvents(rctx, task.TaskID, client.EventsParams{After: first.Cursor, Wait: 30 * time.Second})
			done <- waited[*client.EventPage]{page, err}
		}()
		await(t, ctx, sent, "the read was not sent")
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
	t.Parallel()
	eachStore(t, app.Config{}, func(t *testing.T, e *env) {
		ctx := testContext(t)
		task := newTask(t, ctx, e.alice)
		short := client.New(e.url, apptest.Token(t, "alice"), client.WithHTTPClient(&http.Client{Timeout: 100 * time.Millisecond}))

		got, err := short.WaitTask(ctx, task.TaskID, task.Revision, 500*time.Millisecond)
		if err != nil || got.Revision != task.Revision {
			t.Fatalf("WaitTask: %+v, %v", got, err)
		}
		got, terminal, err := short.Result(ctx, task.TaskID, 500*time.Millisecond)
		if err != nil || terminal || got.Status != client.StatusWorking {
			t.Fatalf("Result: %+v, %v, %v", got, terminal, err)
		}
		all, err := short.TaskEvents(ctx, task.TaskID, client.EventsParams{})
		if err != nil {
			t.Fatalf("TaskEvents: %v", err)
		}
		page, err := short.TaskEvents(ctx, task.TaskID, client.EventsParams{After: all.Cursor, Wait: 500 * time.Millisecond})
		if err != nil || len(page.Events) != 0 || page.Cursor != all.Cursor {
			t.Fatalf("TaskEvents: %+v, %v", page, err)
		}
	})
}
