package client_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// wakesTheParent are the kinds a parent agent waits for.
var wakesTheParent = client.WithKinds(client.EventTaskMessage, client.EventInputRequested, client.EventTaskTerminal)

// ignored is how many wake-ups srv's waiting requests left aside for their
// kinds.
func ignored(srv *apptest.Server) float64 { return testutil.ToFloat64(srv.App.Metrics.WakeupsIgnored) }

// waitSleepsThroughProgress checks that a WaitTask with kinds, sent to
// waiter (a client of srv), stays parked through progress that poster
// reports, and wakes on a message.
func waitSleepsThroughProgress(t *testing.T, ctx context.Context, srv *apptest.Server, waiter, poster *client.Client) {
	task := newTask(t, ctx, poster)
	done := inBackground(ctx, func(ctx context.Context) (*client.Task, error) {
		return waiter.WaitTask(ctx, task.TaskID, task.Revision, longWait, wakesTheParent)
	})
	awaitWaiting(t, srv)
	left := ignored(srv)
	progressed, err := poster.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("halfway")})
	if err != nil {
		t.Fatalf("Progress: %v", err)
	}
	// The progress is applied, and the waiting request has seen its
	// wake-up and left it aside: it is still parked.
	storetest.WaitFor(t, "the poll to leave the progress aside", func() bool { return ignored(srv) > left })
	if n := testutil.ToFloat64(srv.App.Metrics.Waiters); n != 1 {
		t.Fatalf("%v waiting requests after the progress, want the poll still waiting", n)
	}
	stillWaiting(t, done, "the poll answered on progress")

	messaged, err := poster.Message(ctx, task.TaskID, "need a decision", nil)
	if err != nil {
		t.Fatalf("Message: %v", err)
	}
	r := await(t, ctx, done, "WaitTask did not answer the message")
	if r.err != nil {
		t.Fatalf("WaitTask: %v", r.err)
	}
	if messaged.Revision != progressed.Revision+1 || r.v.Revision != messaged.Revision || r.v.StatusMessage != "halfway" {
		t.Fatalf("WaitTask answered revision %d (%q), want the message's %d", r.v.Revision, r.v.StatusMessage, messaged.Revision)
	}
}

// Across replicas too: the waiting replica learns the event types from the
// wake-ups the scripts write, not from its own writes.
func TestWaitTaskKindsSleepsThroughProgress(t *testing.T) {
	onEveryTopology(t, waitSleepsThroughProgress)
}

// A wait with kinds answers at once when an event of its kinds is in the
// log after the revision already, and only then.
func TestWaitTaskKindsLooksAtTheLogFirst(t *testing.T) {
	eachTask(t, noRecheck, func(t *testing.T, ctx context.Context, e *env, task *client.Task) {
		msg, err := e.alice.Message(ctx, task.TaskID, "hello", nil)
		if err != nil {
			t.Fatal(err)
		}
		last, err := e.alice.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("later")})
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.alice.WaitTask(ctx, task.TaskID, task.Revision, longWait, client.WithKinds(client.EventTaskMessage))
		if err != nil || got.Revision != last.Revision {
			t.Fatalf("a message after the revision is in the log: %+v %v, want the task at once", got, err)
		}
		// After the message only progress: the wait runs out (short, and
		// not timed) and answers the task as it is.
		got, err = e.alice.WaitTask(ctx, task.TaskID, msg.Revision, 200*time.Millisecond, client.WithKinds(client.EventTaskMessage))
		if err != nil || got.Revision != last.Revision {
			t.Fatalf("no message after revision %d: %+v %v", msg.Revision, got, err)
		}

		wantCode(t, mustErr(e.alice.WaitTask(ctx, task.TaskID, 0, time.Second, client.WithKinds("task.nope"))),
			http.StatusBadRequest, client.CodeInvalidRequest)
	})
}

func mustErr[T any](_ T, err error) error { return err }

// types are the types of events, in order.
func types(evs []client.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// A read with kinds answers only those events, and its cursor moves past
// the others; with a wait, it sleeps through the others.
func TestTaskEventsKinds(t *testing.T) {
	eachTask(t, noRecheck, func(t *testing.T, ctx context.Context, e *env, task *client.Task) {
		if _, err := e.alice.Message(ctx, task.TaskID, "one", nil); err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"a", "b"} {
			if _, err := e.alice.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String(m)}); err != nil {
				t.Fatal(err)
			}
		}
		all, err := e.alice.TaskEvents(ctx, task.TaskID, client.EventsParams{})
		if err != nil || len(all.Events) != 4 {
			t.Fatalf("the log: %+v %v", all, err)
		}
		page, err := e.alice.TaskEvents(ctx, task.TaskID, client.EventsParams{}, client.WithKinds(client.EventTaskMessage))
		if err != nil || !slices.Equal(types(page.Events), []string{client.EventTaskMessage}) || page.Cursor != all.Cursor {
			t.Fatalf("kinds read: %q, cursor %s (%v), want the message and cursor %s", types(page.Events), page.Cursor, err, all.Cursor)
		}

		done := inBackground(ctx, func(ctx context.Context) (*client.EventPage, error) {
			return e.alice.TaskEvents(ctx, task.TaskID, client.EventsParams{After: page.Cursor, Wait: longWait},
				client.WithKinds(client.EventTaskMessage, client.EventTaskTerminal))
		})
		awaitWaiting(t, e.srv)
		before := ignored(e.srv)
		if _, err := e.alice.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("c")}); err != nil {
			t.Fatal(err)
		}
		storetest.WaitFor(t, "the read to leave the progress aside", func() bool { return ignored(e.srv) > before })
		stillWaiting(t, done, "the read answered on progress")
		if _, err := e.alice.Complete(ctx, task.TaskID, "ok"); err != nil {
			t.Fatal(err)
		}
		r := await(t, ctx, done, "TaskEvents did not answer")
		if r.err != nil || !slices.Equal(types(r.v.Events), []string{client.EventTaskTerminal}) || r.v.Cursor != r.v.Events[0].ID {
			t.Fatalf("the waiting read: %+v %v", r.v, r.err)
		}

		_, err = e.alice.TaskEvents(ctx, task.TaskID, client.EventsParams{}, client.WithKinds(client.EventTaskMessage, "progress"))
		wantCode(t, err, http.StatusBadRequest, client.CodeInvalidRequest)
		if d := asError(t, err).Details; len(d) != 1 || d[0].Field != "kinds" {
			t.Errorf("the refusal names %+v, want kinds", d)
		}
	})
}

func TestSessionEventsKinds(t *testing.T) {
	t.Parallel()
	eachStore(t, noRecheck, func(t *testing.T, e *env) {
		ctx := testContext(t)
		ses, ended := sessionWithTasks(t, ctx, e.alice, 2)
		for _, id := range ended {
			if _, err := e.alice.Progress(ctx, id, client.ProgressInput{StatusMessage: client.String("x")}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.alice.Complete(ctx, id, nil); err != nil {
				t.Fatal(err)
			}
		}
		page, err := e.alice.SessionEvents(ctx, ses.SessionID, client.EventsParams{}, client.WithKinds(client.EventTaskTerminal))
		if err != nil || !slices.Equal(types(page.Events), []string{client.EventTaskTerminal, client.EventTaskTerminal}) ||
			page.Events[0].TaskID != ended[0] || page.Events[1].TaskID != ended[1] {
			t.Fatalf("the session's terminal events: %+v %v", page, err)
		}
	})
}

// A stream with kinds sends only those events, and resumes after the last
// one it sent.
func TestStreamKinds(t *testing.T) {
	eachTask(t, noRecheck, func(t *testing.T, ctx context.Context, e *env, task *client.Task) {
		if _, err := e.alice.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("a")}); err != nil {
			t.Fatal(err)
		}
		first, err := e.alice.Message(ctx, task.TaskID, "first", nil)
		if err != nil {
			t.Fatal(err)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		t.Cleanup(tr.CloseIdleConnections)
		plain := client.New(e.url, apptest.Token(t, "alice"), client.WithHTTPClient(&http.Client{Transport: tr}))
		kinds := client.WithKinds(client.EventTaskMessage, client.EventTaskTerminal)

		var got []client.Event
		for ev, err := range plain.StreamTaskEvents(ctx, task.TaskID, "", kinds) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ev)
			if len(got) == 1 {
				// Live: progress is not sent, the message and the end are.
				if _, err := e.alice.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("b")}); err != nil {
					t.Fatal(err)
				}
				if _, err := e.alice.Message(ctx, task.TaskID, "second", nil); err != nil {
					t.Fatal(err)
				}
				if _, err := e.alice.Complete(ctx, task.TaskID, "ok"); err != nil {
					t.Fatal(err)
				}
			}
			if ev.Type == client.EventTaskTerminal {
				break
			}
		}
		want := []string{client.EventTaskMessage, client.EventTaskMessage, client.EventTaskTerminal}
		if !slices.Equal(types(got), want) || got[0].Revision != first.Revision {
			t.Fatalf("streamed %q (first at revision %d), want %q", types(got), got[0].Revision, want)
		}

		// Resuming after the first message (Last-Event-ID) sends the rest
		// of its kinds, nothing twice.
		var resumed []client.Event
		for ev, err := range plain.StreamTaskEvents(ctx, task.TaskID, got[0].ID, kinds) {
			if err != nil {
				t.Fatal(err)
			}
			resumed = append(resumed, ev)
			if ev.Type == client.EventTaskTerminal {
				break
			}
		}
		if len(resumed) != 2 || resumed[0].ID != got[1].ID || resumed[1].ID != got[2].ID {
			t.Fatalf("resumed with %q: %+v", got[0].ID, resumed)
		}
	})
}
