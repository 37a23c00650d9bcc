package sessions_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
)

func (e env) partition(t *testing.T, session string) int {
	t.Helper()
	p, err := ids.PartitionOf(session, ids.SessionPrefix, e.store.Partitions)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// beginCancel does what a replica does first when it cancels a session, as
// of the time now: the session is marked cancelled and cancelling, and the
// cancel is leased to that replica until now plus the lease.
func (e env) beginCancel(t *testing.T, session, reason string, now time.Time) {
	t.Helper()
	ses, _, err := e.sessions.Get(context.Background(), alice, session)
	if err != nil {
		t.Fatal(err)
	}
	ses.Status, ses.LastUpdatedAt = sessions.Cancelled, events.At(now)
	raw, err := json.Marshal(ses)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.store.BeginCancel(context.Background(), e.partition(t, session), session, raw, reason, now)
	if err != nil || res.Outcome != store.OK {
		t.Fatalf("begin the cancel: %+v %v", res, err)
	}
}

// cancelling reports whether the session's cancel is still in progress.
func (e env) cancelling(t *testing.T, session string) bool {
	t.Helper()
	st, err := e.store.CancelBatch(context.Background(), e.partition(t, session), session, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return st.Cancelling
}

// A replica that began a session cancel and stopped midway (it died) leaves
// it to the others: once its lease has run out, a Resumer cancels the tasks
// left and ends the cancel, as the first replica would have. A cancel whose
// lease still runs is left to the replica that holds it.
func TestResumerFinishesAStalledCancel(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		e := newEnv(t, cfg)
		ctx := context.Background()

		// The replica began this cancel more than a lease ago, cancelled
		// one batch of one task, and died.
		stalled := e.create(t, alice, "").SessionID
		var live []string
		for range 20 {
			live = append(live, e.task(t, alice, stalled).TaskID)
		}
		began := time.Now().Add(-store.CancelLease - time.Second)
		e.beginCancel(t, stalled, "replica died", began)
		part := e.partition(t, stalled)
		raws, err := e.store.TaskJSONs(ctx, part, live[:1])
		if err != nil {
			t.Fatal(err)
		}
		first, ok, err := tasks.CancelChange(raws[0], "replica died", began)
		if err != nil || !ok {
			t.Fatalf("cancel change: %v %v", ok, err)
		}
		if ids, err := e.store.CancelTasks(ctx, part, stalled, []store.TaskCancel{first}, began, time.Hour); err != nil || !slices.Equal(ids, live[:1]) {
			t.Fatalf("the first batch: %v %v", ids, err)
		}

		// Another replica is working on this one: its lease runs for an
		// hour yet.
		held := e.create(t, alice, "").SessionID
		heldTask := e.task(t, alice, held).TaskID
		e.beginCancel(t, held, "in hand", time.Now().Add(time.Hour))

		r := sessions.NewResumer(e.sessions, sessions.ResumerConfig{Interval: 10 * time.Millisecond}, nil)
		for range 2 { // a second Start does nothing
			if err := r.Start(ctx); err != nil {
				t.Fatal(err)
			}
		}
		storetest.WaitFor(t, "the stalled cancel to end", func() bool { return !e.cancelling(t, stalled) })
		for range 2 { // nor does a second Stop
			if err := r.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}

		for _, id := range live {
			if task := e.getTask(t, id); task.Status != tasks.Cancelled || task.CancelReason != "replica died" {
				t.Fatalf("task %s after the resumer: %s %q", id, task.Status, task.CancelReason)
			}
		}
		e.wantCancelEnded(t, stalled, "replica died", live)
		if got, _, err := e.sessions.Get(ctx, alice, stalled); err != nil || got.Status != sessions.Cancelled {
			t.Fatalf("the session after the resumer: %+v %v", got, err)
		}

		if !e.cancelling(t, held) {
			t.Fatal("the resumer took a cancel whose lease still runs")
		}
		if task := e.getTask(t, heldTask); task.Status != tasks.Working {
			t.Fatalf("the resumer cancelled a task of a cancel another replica holds: %s", task.Status)
		}
		// The owner's repeat of the request finishes a cancel too.
		raw, _, err := e.sessions.Cancel(ctx, alice, held, "", idem.Key{})
		if answer := decode[sessions.CancelAnswer](t, raw); err != nil || !slices.Equal(answer.CancelledTaskIDs, []string{heldTask}) {
			t.Fatalf("the repeated cancel: %s %v", raw, err)
		}
		e.wantCancelEnded(t, held, "in hand", []string{heldTask})
	})
}
