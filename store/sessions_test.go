package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// The session-cancel scripts: a cancel begins (the session takes no more
// tasks), its live tasks are cancelled batch by batch (a task that moved on
// since it was read is left out) and it ends only once no live task is
// left; a cancel whose replica stopped is leased to another.

// cancelOf is the cancellation of task id computed from revision rev.
func cancelOf(id string, rev int64) store.TaskCancel {
	return store.TaskCancel{
		ID: id, Owner: "alice", OldStatus: "working", ExpectRevision: rev,
		JSON:  fmt.Appendf(nil, `{"taskId":%q,"rev":%d,"status":"cancelled"}`, id, rev+1),
		Event: store.TaskEvent{JSON: fmt.Appendf(nil, `{"type":"task.terminal","taskId":%q}`, id)},
	}
}

func (f fixture) begin(t *testing.T, reason string, now time.Time) store.Result {
	t.Helper()
	res, err := f.s.BeginCancel(context.Background(), f.part, f.session, []byte(`{"status":"cancelled"}`), reason, now)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f fixture) cancelTasks(t *testing.T, now time.Time, cs ...store.TaskCancel) []string {
	t.Helper()
	ids, err := f.s.CancelTasks(context.Background(), f.part, f.session, cs, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (f fixture) endCancel(t *testing.T, cancelled int, idem idem.Key) store.Result {
	t.Helper()
	res, err := f.s.EndCancel(context.Background(), store.SessionCancelDone{
		LogWrite: store.LogWrite{Partition: f.part, Now: time.Now(), Retention: time.Hour, Idem: idem},
		ID:       f.session, Event: []byte(`{"type":"session.cancelled"}`), Response: []byte(`{"answer":1}`),
		Cancelled: cancelled,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f fixture) cancelState(t *testing.T) store.CancelState {
	t.Helper()
	st, err := f.s.CancelBatch(context.Background(), f.part, f.session, 16, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(st.Live)
	return st
}

func (f fixture) logTypes(t *testing.T, log store.Log) []string {
	t.Helper()
	entries, err := f.s.ReadLog(context.Background(), log, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range entries {
		typ, _, _ := strings.Cut(strings.TrimPrefix(string(e.JSON), `{"id":"`+e.ID+`","type":"`), `"`)
		types = append(types, typ)
	}
	return types
}

func sorted(ids ...string) []string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

func TestSessionCancelBatches(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		f := newFixture(t, s, "alice")
		var live []string
		for range 3 {
			id, _ := f.createTask(t, "alice", idem.Key{})
			live = append(live, id)
		}
		moved := live[2]

		missing := f
		missing.session = ids.New(ids.SessionPrefix, f.part)
		if r := missing.begin(t, "gone", time.Now()); r.Outcome != store.Missing {
			t.Fatalf("begin on a missing session: %+v", r)
		}
		// Nothing is cancelled before the cancel begins.
		if ids := f.cancelTasks(t, time.Now(), cancelOf(live[0], 1)); len(ids) != 0 {
			t.Fatalf("a batch before the cancel began cancelled %v", ids)
		}

		if r := f.begin(t, "done", time.Now()); r.Outcome != store.OK {
			t.Fatalf("begin: %+v", r)
		}
		if r := f.begin(t, "again", time.Now()); r.Outcome != store.AlreadyCancelled {
			t.Fatalf("a second begin: %+v", r)
		}
		if raw, err := s.GetJSON(ctx, s.Keys.Session(f.part, f.session)); err != nil || string(raw) != `{"status":"cancelled"}` {
			t.Fatalf("the session after begin: %s %v", raw, err)
		}
		if _, r := f.createTask(t, "alice", idem.Key{}); r.Outcome != store.SessionNotActive {
			t.Fatalf("a task created in a cancelling session: %+v", r)
		}
		st := f.cancelState(t)
		if !st.Cancelling || st.Reason != "done" || !slices.Equal(st.Live, sorted(live...)) {
			t.Fatalf("cancel state: %+v, want cancelling for done with %v live", st, sorted(live...))
		}

		// The third task moves on after the batch was read: the batch,
		// computed from revision 1, cancels the other two and leaves it.
		if r := f.apply(t, moved, 1, idem.Key{}, `{"type":"task.progress"}`); r.Outcome != store.OK {
			t.Fatalf("apply: %+v", r)
		}
		got := f.cancelTasks(t, time.Now(), cancelOf(live[0], 1), cancelOf(live[1], 1), cancelOf(moved, 1))
		if !slices.Equal(sorted(got...), sorted(live[0], live[1])) {
			t.Fatalf("the batch cancelled %v, want %v", got, live[:2])
		}
		for _, id := range live[:2] {
			h := storetest.RecordFields(t, s, s.Keys.Task(f.part, id))
			if h["rev"] != "2" || h["status"] != "cancelled" || h["json"] != string(cancelOf(id, 1).JSON) {
				t.Errorf("task %s after the batch: %v", id, h)
			}
			if types := f.logTypes(t, f.taskLog(id)); !slices.Equal(types, []string{"task.created", "task.terminal"}) {
				t.Errorf("task %s log: %v", id, types)
			}
			if _, err := s.RDB.ZScore(ctx, s.Keys.SessionTasksByStatus(f.part, f.session, "cancelled"), id).Result(); err != nil {
				t.Errorf("task %s is not indexed as cancelled: %v", id, err)
			}
			if _, err := s.RDB.ZScore(ctx, s.Keys.SessionTasksByStatus(f.part, f.session, "working"), id).Result(); !errors.Is(err, redis.Nil) {
				t.Errorf("task %s is still indexed as working: %v", id, err)
			}
		}
		if raw, err := s.GetJSON(ctx, s.Keys.Task(f.part, moved)); err != nil || string(raw) != `{"rev":2}` {
			t.Fatalf("the task that moved on: %s %v", raw, err)
		}
		if so, err := s.CancelledSoFar(ctx, f.part, f.session); err != nil || !slices.Equal(sorted(so...), sorted(live[0], live[1])) {
			t.Fatalf("cancelled so far: %v %v", so, err)
		}
		if st := f.cancelState(t); !st.Cancelling || !slices.Equal(st.Live, []string{moved}) {
			t.Fatalf("cancel state after the batch: %+v, want %s live", st, moved)
		}

		// The end is refused while a task is live, and when the caller read
		// fewer cancelled tasks than there are; it writes nothing then.
		sessionLog := f.logTypes(t, s.Keys.SessionEvents(f.part, f.session))
		if r := f.endCancel(t, 2, idem.Key{}); r.Outcome != store.Conflict {
			t.Fatalf("end with a live task left: %+v", r)
		}
		if ids := f.cancelTasks(t, time.Now(), cancelOf(moved, 2)); !slices.Equal(ids, []string{moved}) {
			t.Fatalf("the next batch cancelled %v, want %s", ids, moved)
		}
		if r := f.endCancel(t, 2, idem.Key{}); r.Outcome != store.Conflict {
			t.Fatalf("end with a stale count of cancelled tasks: %+v", r)
		}
		if got := f.logTypes(t, s.Keys.SessionEvents(f.part, f.session)); len(got) != len(sessionLog)+1 || slices.Contains(got, "session.cancelled") {
			t.Fatalf("the refused ends wrote to the session log: %v", got)
		}

		key := idem.Key{Scope: "alice\nPOST /v1/sessions/x/cancel\nk", BodyHash: "h"}
		if r := f.endCancel(t, 3, key); r.Outcome != store.OK {
			t.Fatalf("end: %+v", r)
		}
		types := f.logTypes(t, s.Keys.SessionEvents(f.part, f.session))
		if want := []string{"session.created", "task.created", "task.created", "task.created", "task.progress",
			"task.terminal", "task.terminal", "task.terminal", "session.cancelled"}; !slices.Equal(types, want) {
			t.Fatalf("session log %v, want %v", types, want)
		}
		if st := f.cancelState(t); st.Cancelling || st.Reason != "" || len(st.Live) != 0 {
			t.Fatalf("cancel state after the end: %+v", st)
		}
		if n, err := s.RDB.Exists(ctx, s.Keys.SessionLive(f.part, f.session), s.Keys.SessionCancelled(f.part, f.session)).Result(); err != nil || n != 0 {
			t.Fatalf("%d of the cancel's lists are left (%v)", n, err)
		}
		if _, err := s.RDB.ZScore(ctx, s.Keys.Cancels(f.part), f.session).Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("the session is still among the partition's cancels: %v", err)
		}
		// A repeat with the key gets the kept answer; without it, the cancel
		// is over; a batch after the end cancels nothing.
		if r := f.endCancel(t, 3, key); r.Outcome != store.Replayed || string(r.ReplayBody) != `{"answer":1}` {
			t.Fatalf("repeat with the key: %+v", r)
		}
		if r := f.endCancel(t, 3, idem.Key{Scope: key.Scope, BodyHash: "other"}); r.Outcome != store.IdemConflict {
			t.Fatalf("the key with another body: %+v", r)
		}
		if r := f.endCancel(t, 3, idem.Key{}); r.Outcome != store.AlreadyCancelled {
			t.Fatalf("end after the end: %+v", r)
		}
		if r := f.begin(t, "again", time.Now()); r.Outcome != store.AlreadyCancelled {
			t.Fatalf("begin after the end: %+v", r)
		}
	})
}

// A cancel is leased to the replica working on it: StalledCancels hands out
// only cancels whose lease ran out, and leases each to its caller, so two
// sweeps at one moment do not both take it; a batch renews the lease, and
// an ended cancel is never handed out.
func TestStalledCancelsAreLeased(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		f := newFixture(t, s, "alice")
		task, _ := f.createTask(t, "alice", idem.Key{})
		stalled := func(at time.Time) []string {
			t.Helper()
			ids, err := s.StalledCancels(ctx, f.part, at, 8)
			if err != nil {
				t.Fatal(err)
			}
			return ids
		}
		began := time.Now()
		if got := stalled(began.Add(time.Hour)); len(got) != 0 {
			t.Fatalf("stalled before any cancel: %v", got)
		}
		if r := f.begin(t, "done", began); r.Outcome != store.OK {
			t.Fatalf("begin: %+v", r)
		}
		lease := began.Add(store.CancelLease)
		if got := stalled(lease.Add(-time.Millisecond)); len(got) != 0 {
			t.Fatalf("handed out within its lease: %v", got)
		}
		taken := lease.Add(time.Millisecond)
		if got := stalled(taken); !slices.Equal(got, []string{f.session}) {
			t.Fatalf("stalled once the lease ran out: %v, want %s", got, f.session)
		}
		if got := stalled(taken); len(got) != 0 {
			t.Fatalf("handed out twice at one moment: %v", got)
		}
		if got := stalled(taken.Add(store.CancelLease - time.Millisecond)); len(got) != 0 {
			t.Fatalf("handed out within the taker's lease: %v", got)
		}
		if got := stalled(taken.Add(store.CancelLease + time.Millisecond)); !slices.Equal(got, []string{f.session}) {
			t.Fatalf("stalled once the taker's lease ran out: %v", got)
		}

		// A batch renews the lease from its own time.
		batch := taken.Add(time.Hour)
		if ids := f.cancelTasks(t, batch, cancelOf(task, 1)); !slices.Equal(ids, []string{task}) {
			t.Fatalf("batch: %v", ids)
		}
		if got := stalled(batch.Add(store.CancelLease - time.Millisecond)); len(got) != 0 {
			t.Fatalf("handed out within the lease a batch renewed: %v", got)
		}
		if r := f.endCancel(t, 1, idem.Key{}); r.Outcome != store.OK {
			t.Fatalf("end: %+v", r)
		}
		if got := stalled(batch.Add(24 * time.Hour)); len(got) != 0 {
			t.Fatalf("an ended cancel is handed out: %v", got)
		}
	})
}
