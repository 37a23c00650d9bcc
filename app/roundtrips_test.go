package app_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// roundTrips is the Redis round trips that requests made on a server so far
// (the fan-in readers' own reads are counted apart).
func roundTrips(s *apptest.Server, pool string) float64 {
	return testutil.ToFloat64(s.App.Metrics.RedisRoundTrips.WithLabelValues(pool))
}

// polled is what a long-poll answered.
type polled struct {
	task *client.Task
	err  error
}

// stillWaiting fails the test when the long-poll whose answer arrives on
// done has answered already: what it answered is what.
func stillWaiting(t *testing.T, done <-chan polled, what string) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("%s: %+v %v", what, r.task, r.err)
	default:
	}
}

// parkPoll sends cl's long-poll for the change after task's revision in the
// background, and returns once srv holds it waiting after the one read it
// makes when it begins (srv's request round trips were before at the start).
func parkPoll(t *testing.T, ctx context.Context, srv *apptest.Server, cl *client.Client, task *client.Task, before float64, opts ...client.CallOption) <-chan polled {
	t.Helper()
	done := make(chan polled, 1)
	go func() {
		tk, err := cl.WaitTask(ctx, task.TaskID, task.Revision, 30*time.Second, opts...)
		done <- polled{tk, err}
	}()
	storetest.WaitFor(t, "the poll to wait", func() bool { return testutil.ToFloat64(srv.App.Metrics.Waiters) == 1 })
	storetest.WaitFor(t, "the poll's first read", func() bool { return roundTrips(srv, "requests")-before == 1 })
	return done
}

// Each task command is one Redis round trip, with or without notification
// endpoints: the outbox entries are written by the command's own script.
func TestOneRoundTripPerTaskCommand(t *testing.T) {
	t.Parallel()
	t.Run("no endpoints", func(t *testing.T) {
		t.Parallel()
		srv := apptest.Standalone(t, app.Config{})
		measureTaskCommands(t, srv, nil, nil)
	})
	t.Run("endpoints on the session and the task", func(t *testing.T) {
		t.Parallel()
		srv := apptest.Standalone(t, app.Config{AllowPrivateTargets: true})
		sesRecv, taskRecv := receivertest.New(t, nil), receivertest.New(t, nil)
		// Every type a task emits, so that each command routes its events;
		// the session has a second endpoint, of the default types.
		every := []string{
			"task.created", "task.progress", "task.message", "task.status", "task.terminal",
			"input.requested", "input.resolved",
		}
		ses := []client.EndpointRequest{{URL: sesRecv.URL, Kinds: every}, {URL: sesRecv.URL}}
		task := []client.EndpointRequest{{URL: taskRecv.URL, Kinds: every}}
		id := measureTaskCommands(t, srv, ses, task)
		// The commands routed their events, each to every endpoint that
		// takes its type.
		log, err := client.New(srv.URL, apptest.Token(t, "rt")).TaskEvents(context.Background(), id, client.EventsParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		routed, wakeWorthy := 0, 0
		for _, e := range log.Events {
			if slices.Contains(every, e.Type) {
				routed++
			}
			if slices.Contains(client.DefaultNotifyKinds, e.Type) {
				wakeWorthy++
			}
		}
		waitDeliveries(t, taskRecv, routed)
		waitDeliveries(t, sesRecv, routed+wakeWorthy)
	})
}

// measureTaskCommands runs a task's life in a session with the given
// endpoints, checks that each command took one Redis round trip, and
// returns the task's id.
func measureTaskCommands(t *testing.T, srv *apptest.Server, sesEndpoints, taskEndpoints []client.EndpointRequest) string {
	t.Helper()
	ctx := context.Background()
	cl := client.New(srv.URL, apptest.Token(t, "rt"))
	ses, err := cl.CreateSession(ctx, client.CreateSessionInput{Notify: sesEndpoints})
	if err != nil {
		t.Fatal(err)
	}
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
		task, err = cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Input: map[string]int{"n": 1}, Notify: taskEndpoints})
		return err
	})
	if len(task.Notify) != len(taskEndpoints) {
		t.Fatalf("the task has %d endpoints, want %d", len(task.Notify), len(taskEndpoints))
	}
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
		_, err := cl.Respond(ctx, id, []client.Answer{{RequestID: "go", OptionID: "yes"}})
		return err
	})
	measure("complete (with an idempotency key)", func() error {
		_, err := cl.Complete(ctx, id, "done", client.WithIdempotencyKey("c1"))
		return err
	})
	measure("get", func() error { _, err := cl.GetTask(ctx, id); return err })
	return id
}

func TestWaitingLongPollCostsNoRoundTrips(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, app.Config{WakeBlock: 20 * time.Millisecond, Partitions: 4})
	ctx := context.Background()
	cl := srv.Client(t, "lp")
	_, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{})
	before := roundTrips(srv, "requests")
	done := parkPoll(t, ctx, srv, cl, task, before)
	// While the poll waits, every fan-in reader of the partition cycles
	// through several of its own blocking reads; the request side stays
	// at the one read the poll made when it began.
	readerLoops := roundTrips(srv, "wakeups")
	storetest.WaitFor(t, "the condition", func() bool { return roundTrips(srv, "wakeups")-readerLoops >= 4*5 })
	if got := roundTrips(srv, "requests") - before; got != 1 {
		t.Fatalf("the waiting poll made %v round trips, want the 1 read at its start", got)
	}
	stillWaiting(t, done, "the poll answered before any change")
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

// A long-poll with kinds costs no Redis round trip for a change of other
// kinds: the wake-up names its event types and is left aside unread. The
// change of its kinds then answers from the wake-up's snapshot, also
// without a read.
func TestKindsPollCostsNoRoundTripsForOtherKinds(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, app.Config{WakeBlock: 20 * time.Millisecond, Partitions: 4,
		RecheckInterval: time.Hour})
	ctx := context.Background()
	cl := client.New(srv.URL, apptest.Token(t, "lp"))
	_, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{})
	before := roundTrips(srv, "requests")
	done := parkPoll(t, ctx, srv, cl, task, before, client.WithKinds(client.EventTaskMessage))

	for i, msg := range []string{"one", "two", "three"} {
		if _, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String(msg)}); err != nil {
			t.Fatal(err)
		}
		storetest.WaitFor(t, "the poll to leave the progress aside", func() bool {
			return testutil.ToFloat64(srv.App.Metrics.WakeupsIgnored) == float64(i+1)
		})
	}
	// Each progress was one round trip; the parked poll made none.
	if got := roundTrips(srv, "requests") - before; got != 1+3 {
		t.Fatalf("the poll and three progress reports made %v round trips, want 4", got)
	}
	stillWaiting(t, done, "the poll answered on progress")
	msg, err := cl.Message(ctx, task.TaskID, "look", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.task.Revision != msg.Revision || r.task.StatusMessage != "three" {
		t.Fatalf("woken poll answered %+v %v", r.task, r.err)
	}
	if got := roundTrips(srv, "requests") - before; got != 1+3+1 {
		t.Fatalf("poll, progress and message made %v round trips, want 5", got)
	}
}
