package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// roundTrips is the Redis round trips that requests made on a server so far
// (the fan-in readers' own reads are counted apart).
func roundTrips(s *apptest.Server, pool string) float64 {
	return testutil.ToFloat64(s.App.Metrics.RedisRoundTrips.WithLabelValues(pool))
}

func TestOneRoundTripPerTaskCommand(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, app.Config{})
	ctx := context.Background()
	cl := srv.Client(t, "rt")
	ses := apptest.Session(t, ctx, cl)
	measure := func(name string, call func() error) {
		t.Helper()
		before := roundTrips(srv, "requests")
		if err := call(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := roundTrips(srv, "requests") - before; got != 1 {
			t.Errorf("%s took %v Redis round trips, want 1", name, got)
		}
	}
	var task *client.Task
	measure("create", func() (err error) {
		task, err = cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Input: map[string]int{"n": 1}})
		return err
	})
	id := task.TaskID
	measure("progress", func() error {
		_, err := cl.Progress(ctx, id, client.ProgressInput{StatusMessage: client.String("half")})
		return err
	})
	measure("message", func() error { _, err := cl.Message(ctx, id, "hello", nil); return err })
	measure("require_input", func() error {
		_, err := cl.RequireInput(ctx, id, []client.InputRequest{{RequestID: "go", Prompt: "Go?", Display: "confirmation"}})
		return err
	})
	measure("respond", func() error {
		_, err := cl.Respond(ctx, id, []client.InputResponse{{RequestID: "go", OptionID: "yes"}})
		return err
	})
	measure("complete (with an idempotency key)", func() error {
		_, err := cl.Complete(ctx, id, "done", client.WithIdempotencyKey("c1"))
		return err
	})
	measure("get", func() error { _, err := cl.GetTask(ctx, id); return err })
}

func TestWaitingLongPollCostsNoRoundTrips(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, app.Config{WakeBlock: 20 * time.Millisecond, Partitions: 4})
	ctx := context.Background()
	cl := srv.Client(t, "lp")
	_, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{})
	before := roundTrips(srv, "requests")
	type result struct {
		task *client.Task
		err  error
	}
	done := make(chan result, 1)
	go func() {
		tk, err := cl.WaitTask(ctx, task.TaskID, task.Revision, 30*time.Second)
		done <- result{tk, err}
	}()
	// While the poll waits, every fan-in reader of the partition cycles
	// through several of its own blocking reads; the request side stays
	// at the one read the poll made when it began.
	storetest.WaitFor(t, "the condition", func() bool { return testutil.ToFloat64(srv.App.Metrics.Waiters) == 1 })
	storetest.WaitFor(t, "the condition", func() bool { return roundTrips(srv, "requests")-before == 1 })
	readerLoops := roundTrips(srv, "wakeups")
	storetest.WaitFor(t, "the condition", func() bool { return roundTrips(srv, "wakeups")-readerLoops >= 4*5 })
	if got := roundTrips(srv, "requests") - before; got != 1 {
		t.Fatalf("the waiting poll made %v round trips, want the 1 read at its start", got)
	}
	select {
	case r := <-done:
		t.Fatalf("the poll answered before any change: %+v %v", r.task, r.err)
	default:
	}
	if _, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("moved")}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.task.Revision != task.Revision+1 || r.task.StatusMessage != "moved" {
		t.Fatalf("woken poll answered %+v %v", r.task, r.err)
	}
	// The wake-up carried the new task: answering cost no read.
	if got := roundTrips(srv, "requests") - before; got != 2 {
		t.Fatalf("poll + progress made %v round trips, want 2", got)
	}
}
