package client_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/taskhook/taskhook/client"
)

// TestRelease: only a task that has ended can be released, once; the
// release is a revision with a task.released event in both logs, and
// changes nothing else.
func TestRelease(t *testing.T) {
	eachTask(t, noRecheck, func(t *testing.T, ctx context.Context, e *env, task *client.Task) {

		_, err := e.alice.Release(ctx, task.TaskID)
		if te := wantCode(t, err, http.StatusConflict, client.CodeTaskNotTerminal); te.Task == nil || te.Task.Status != client.StatusWorking {
			t.Errorf("release of a working task: the error shows %+v", te.Task)
		}
		done, err := e.alice.Complete(ctx, task.TaskID, map[string]string{"url": "x"})
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, mustErr(e.bob.Release(ctx, task.TaskID)), http.StatusNotFound, client.CodeNotFound)

		var meta client.Response
		rel, err := e.alice.Release(ctx, task.TaskID, client.WithIdempotencyKey("rel-1"), client.WithResponse(&meta))
		if err != nil {
			t.Fatal(err)
		}
		if rel.ReleasedAt == nil || rel.Revision != done.Revision+1 || rel.Status != client.StatusCompleted ||
			!jsonEqual(t, rel.Result, `{"url":"x"}`) || meta.Replayed {
			t.Fatalf("released: %+v", rel)
		}
		again, err := e.alice.Release(ctx, task.TaskID)
		if err != nil || again.Revision != rel.Revision || !again.ReleasedAt.Equal(*rel.ReleasedAt) {
			t.Fatalf("a second release: %+v %v, want the task unchanged", again, err)
		}
		if _, err := e.alice.Release(ctx, task.TaskID, client.WithIdempotencyKey("rel-1"), client.WithResponse(&meta)); err != nil || !meta.Replayed {
			t.Fatalf("a repeat with the key: %v, replayed %v", err, meta.Replayed)
		}
		// Cancelling a released task is still a read.
		if c, err := e.alice.Cancel(ctx, task.TaskID, "late"); err != nil || c.Revision != rel.Revision || c.Status != client.StatusCompleted {
			t.Fatalf("cancel after release: %+v %v", c, err)
		}

		for name, read := range map[string]func() (*client.EventPage, error){
			"task": func() (*client.EventPage, error) { return e.alice.TaskEvents(ctx, task.TaskID, client.EventsParams{}) },
			"session": func() (*client.EventPage, error) {
				return e.alice.SessionEvents(ctx, task.SessionID, client.EventsParams{})
			},
		} {
			page, err := read()
			if err != nil {
				t.Fatal(err)
			}
			var released []client.Event
			for _, ev := range page.Events {
				if ev.Type == client.EventTaskReleased {
					released = append(released, ev)
				}
			}
			if len(released) != 1 || released[0].Revision != rel.Revision {
				t.Fatalf("%s log: task.released events %+v, want one at revision %d", name, released, rel.Revision)
			}
			if snap, err := released[0].Task(); err != nil || snap.ReleasedAt == nil {
				t.Fatalf("%s log: task.released carries %+v %v", name, snap, err)
			}
		}
	})
}

// A cancel with a wait answers once the executor released the task.
func TestCancelWaitAnswersWhenReleased(t *testing.T) {
	eachTask(t, noRecheck, func(t *testing.T, ctx context.Context, e *env, task *client.Task) {
		done := inBackground(ctx, func(ctx context.Context) (*client.Task, error) {
			return e.alice.Cancel(ctx, task.TaskID, "not needed", client.WithReleaseWait(longWait))
		})
		// The executor learns of the cancel, stops its work and releases.
		got, terminal, err := e.alice.Result(ctx, task.TaskID, longWait)
		if err != nil || !terminal || got.Status != client.StatusCancelled {
			t.Fatalf("the executor's wait for the end: %+v %v %v", got, terminal, err)
		}
		awaitWaiting(t, e.srv) // the cancel, waiting for the release
		stillWaiting(t, done, "the cancel answered before the release")
		rel, err := e.alice.Release(ctx, task.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		r := await(t, ctx, done, "the cancel did not answer the release")
		if r.err != nil || r.v.ReleasedAt == nil || r.v.Revision != rel.Revision || r.v.Status != client.StatusCancelled ||
			r.v.CancelReason != "not needed" {
			t.Fatalf("the cancel answered %+v %v", r.v, r.err)
		}
	})
}

// When the wait runs out first, the answer is the cancelled task, without
// releasedAt; a task released already answers at once.
func TestCancelWaitRunsOut(t *testing.T) {
	eachTask(t, noRecheck, func(t *testing.T, ctx context.Context, e *env, task *client.Task) {
		got, err := e.alice.Cancel(ctx, task.TaskID, "", client.WithReleaseWait(200*time.Millisecond))
		if err != nil || got.Status != client.StatusCancelled || got.ReleasedAt != nil {
			t.Fatalf("cancel with a short wait: %+v %v", got, err)
		}
		if _, err := e.alice.Release(ctx, task.TaskID); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := beforeTheWaitEnds(ctx)
		defer cancel()
		got, err = e.alice.Cancel(wctx, task.TaskID, "", client.WithReleaseWait(longWait))
		if err != nil || got.ReleasedAt == nil {
			t.Fatalf("cancel with a wait of a released task: %+v %v", got, err)
		}
		wantCode(t, mustErr(e.bob.Cancel(ctx, task.TaskID, "", client.WithReleaseWait(time.Second))), http.StatusNotFound, client.CodeNotFound)
	})
}

// A session cancel with a wait answers once every task it cancelled is
// released, and lists those that were not when the wait ran out.
func TestCancelSessionWaitsForReleases(t *testing.T) {
	t.Parallel()
	eachStore(t, noRecheck, func(t *testing.T, e *env) {
		ctx := testContext(t)
		ses, ids := sessionWithTasks(t, ctx, e.alice, 2)
		slices.Sort(ids)
		done := inBackground(ctx, func(ctx context.Context) (*client.CancelledSession, error) {
			return e.alice.CancelSession(ctx, ses.SessionID, "user left", client.WithReleaseWait(longWait))
		})
		for _, id := range ids {
			if got, terminal, err := e.alice.Result(ctx, id, longWait); err != nil || !terminal {
				t.Fatalf("task %s: %+v %v %v", id, got, terminal, err)
			}
		}
		awaitWaiting(t, e.srv)
		if _, err := e.alice.Release(ctx, ids[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := e.alice.Release(ctx, ids[1]); err != nil {
			t.Fatal(err)
		}
		r := await(t, ctx, done, "the session cancel did not answer the releases")
		if r.err != nil || !slices.Equal(r.v.CancelledTaskIDs, ids) || r.v.UnreleasedTaskIDs == nil || len(r.v.UnreleasedTaskIDs) != 0 {
			t.Fatalf("the session cancel answered %+v %v", r.v, r.err)
		}
	})
}

func TestCancelSessionWaitRunsOut(t *testing.T) {
	t.Parallel()
	eachStore(t, noRecheck, func(t *testing.T, e *env) {
		ctx := testContext(t)
		ses, ids := sessionWithTasks(t, ctx, e.alice, 3)
		first, err := e.alice.CancelSession(ctx, ses.SessionID, "", client.WithIdempotencyKey("end"))
		if err != nil || len(first.CancelledTaskIDs) != 3 || first.UnreleasedTaskIDs != nil {
			t.Fatalf("cancel: %+v %v", first, err)
		}
		if _, err := e.alice.Release(ctx, ids[1]); err != nil {
			t.Fatal(err)
		}
		// The repeat with the key is the first cancel: it waits (shortly,
		// not timed) for the tasks that one cancelled.
		var meta client.Response
		got, err := e.alice.CancelSession(ctx, ses.SessionID, "", client.WithIdempotencyKey("end"),
			client.WithReleaseWait(200*time.Millisecond), client.WithResponse(&meta))
		want := []string{ids[0], ids[2]}
		slices.Sort(want)
		if err != nil || !meta.Replayed || !slices.Equal(got.CancelledTaskIDs, first.CancelledTaskIDs) || !slices.Equal(got.UnreleasedTaskIDs, want) {
			t.Fatalf("repeat with a wait: %+v %v (replayed %v), want unreleased %q", got, err, meta.Replayed, want)
		}
		// Without the key, a repeat cancelled nothing: nothing to wait for.
		got, err = e.alice.CancelSession(ctx, ses.SessionID, "", client.WithReleaseWait(time.Minute))
		if err != nil || len(got.CancelledTaskIDs) != 0 || got.UnreleasedTaskIDs == nil || len(got.UnreleasedTaskIDs) != 0 {
			t.Fatalf("repeat without the key: %+v %v", got, err)
		}
	})
}
