package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// event is a stored task event of a type at a revision, as the task service
// writes them: the type first, the revision before the data.
func event(typ string, rev int64) string {
	return fmt.Sprintf(`{"type":%q,"at":"2025-01-01T00:00:00.000Z","sessionId":"ses_1","taskId":"task_1","revision":%d,"data":{"task":{"revision":%d}}}`,
		typ, rev, rev+100)
}

// startFanIn runs a fan-in on s for the test.
func startFanIn(t *testing.T, s *store.Store) (*store.FanIn, *metrics.Metrics) {
	t.Helper()
	m := metrics.New()
	fan := store.NewFanIn(s, store.FanInConfig{Block: 200 * time.Millisecond}, m, nil, time.Now)
	if err := fan.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fan.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return fan, m
}

// localFanIn is a fan-in on no store: its waiters, woken by Notify only, and
// its metrics.
func localFanIn(cfg store.FanInConfig) (*store.FanIn, *metrics.Metrics) {
	m := metrics.New()
	return store.NewFanIn(nil, cfg, m, nil, time.Now), m
}

// eachBackendWithFanIn runs fn on every backend with a store, a fan-in on
// it, the fan-in's metrics and a fixture of alice's.
func eachBackendWithFanIn(t *testing.T, fn func(t *testing.T, s *store.Store, fan *store.FanIn, m *metrics.Metrics, f fixture)) {
	t.Helper()
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		fan, m := startFanIn(t, s)
		fn(t, s, fan, m, newFixture(t, s, "alice"))
	})
}

// taskWithChanges creates a task of alice's and applies each change (its
// events) at the next revision; it returns the task's id.
func taskWithChanges(t *testing.T, f fixture, changes ...[]string) string {
	t.Helper()
	id, _ := f.createTask(t, "alice", idem.Key{})
	for i, events := range changes {
		f.apply(t, id, int64(i+1), idem.Key{}, events...)
	}
	return id
}

// many is n events of a type at a revision: more than one script looks at.
func many(n int, typ string, rev int64) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = event(typ, rev)
	}
	return out
}

// awaitLive returns once fan's reader of f's partition reads the wake
// stream: it starts at the stream's end, so a change made before that wakes
// nobody.
func awaitLive(t *testing.T, fan *store.FanIn, f fixture) {
	t.Helper()
	id, _ := f.createTask(t, "alice", idem.Key{})
	w := fan.Wait(store.WaitKey(store.WakeTask, id))
	defer w.Stop()
	for rev := int64(1); rev < 1000; rev++ {
		f.apply(t, id, rev, idem.Key{}, event("task.progress", rev+1))
		if _, why := w.Next(context.Background(), time.Now().Add(200*time.Millisecond)); why == store.Woken {
			return
		}
	}
	t.Fatal("the fan-in reader does not read")
}

// A wake-up names the types of the events its change appended, in order,
// read by the scripts from the events themselves; an event whose type
// cannot be read makes the types unknown.
func TestWakesNameTheirEventTypes(t *testing.T) {
	eachBackendWithFanIn(t, func(t *testing.T, _ *store.Store, fan *store.FanIn, _ *metrics.Metrics, f fixture) {
		awaitLive(t, fan, f)
		// Every wake of the session's tasks, each read before the next
		// change: none is coalesced with another.
		w := fan.Wait(store.WaitKey(store.WakeSession, f.session))
		defer w.Stop()
		id, _ := f.createTask(t, "alice", idem.Key{})
		wakeOf := func(rev int64, events ...string) store.Wake {
			t.Helper()
			if rev > 0 {
				if r := f.apply(t, id, rev, idem.Key{}, events...); r.Outcome != store.OK {
					t.Fatalf("apply at %d: %+v", rev, r)
				}
			}
			for {
				wk, why := w.Next(context.Background(), time.Now().Add(10*time.Second))
				if why != store.Woken {
					t.Fatalf("no wake for revision %d: %v", rev+1, why)
				}
				if wk.ID == id && wk.Revision == rev+1 {
					return wk
				}
			}
		}
		if wk := wakeOf(0); !slices.Equal(wk.Types, []string{"task.created"}) || wk.First != 0 || wk.Merged {
			t.Errorf("wake of the create: %+v", wk)
		}
		if wk := wakeOf(1, event("task.status", 2), event("input.requested", 2)); !slices.Equal(wk.Types, []string{"task.status", "input.requested"}) {
			t.Errorf("wake of two events: types %q", wk.Types)
		}
		if wk := wakeOf(2, `{"nothing":"typed"}`); wk.Types != nil {
			t.Errorf("wake of an event without a readable type: types %q, want unknown (nil)", wk.Types)
		}
		if wk := wakeOf(3); wk.Types == nil || len(wk.Types) != 0 {
			t.Errorf("wake of a change without events: types %#v, want none", wk.Types)
		}
	})
}

// Wakes a waiter has not read yet are coalesced: one wake stands for all of
// them, the newest revision of a task winning whatever order they came in.
func TestWaitersCoalescePendingWakes(t *testing.T) {
	fan, _ := localFanIn(store.FanInConfig{})
	// coalesced is what a waiter on key reads once the wakes came.
	coalesced := func(t *testing.T, key string, wakes ...store.Wake) store.Wake {
		t.Helper()
		w := fan.Wait(key)
		defer w.Stop()
		for _, wk := range wakes {
			fan.Notify(wk)
		}
		wk, why := w.Next(context.Background(), time.Now().Add(time.Second))
		if why != store.Woken {
			t.Fatalf("no wake: %v", why)
		}
		return wk
	}
	task := func(id string, rev int64, types ...string) store.Wake {
		return store.Wake{Kind: store.WakeTask, ID: id, SessionID: "ses_1", Revision: rev,
			Snapshot: fmt.Appendf(nil, `{"revision":%d}`, rev), Types: types}
	}

	t.Run("a late older wake of the task does not hide a newer one", func(t *testing.T) {
		wk := coalesced(t, store.WaitKey(store.WakeTask, "task_a"),
			task("task_a", 6, "task.progress"),
			task("task_a", 5, "task.message"))
		if wk.Revision != 6 || string(wk.Snapshot) != `{"revision":6}` || wk.First != 5 || wk.Merged {
			t.Errorf("coalesced wake: %+v", wk)
		}
		if !slices.Equal(wk.Types, []string{"task.message", "task.progress"}) && !slices.Equal(wk.Types, []string{"task.progress", "task.message"}) {
			t.Errorf("coalesced types %q, want both", wk.Types)
		}
		if !wk.FollowsOn(4) || wk.FollowsOn(3) {
			t.Errorf("a wake for revisions 5 to 6 follows on 4 and not on 3: %v %v", wk.FollowsOn(4), wk.FollowsOn(3))
		}
	})
	t.Run("wakes of several tasks of a session", func(t *testing.T) {
		wk := coalesced(t, store.WaitKey(store.WakeSession, "ses_1"),
			task("task_a", 2, "task.message"),
			task("task_b", 3, "task.progress"))
		if wk.ID != "task_b" || !wk.Merged || !slices.Contains(wk.Types, "task.message") || !slices.Contains(wk.Types, "task.progress") {
			t.Errorf("coalesced wake: %+v", wk)
		}
		if (store.Kinds{"task.message"}).MayConcern(wk) != true || wk.FollowsOn(2) {
			t.Errorf("a merged wake concerns the types of both and follows on nothing")
		}
	})
	t.Run("a gap between two wakes of the task makes the types unknown", func(t *testing.T) {
		wk := coalesced(t, store.WaitKey(store.WakeTask, "task_d"),
			task("task_d", 5, "task.progress"),
			task("task_d", 7, "task.progress"))
		if wk.Revision != 7 || wk.First != 5 || wk.Types != nil || wk.FollowsOn(4) {
			t.Errorf("coalesced wake over a gap: %+v", wk)
		}
	})
	t.Run("unknown types stay unknown", func(t *testing.T) {
		wk := coalesced(t, store.WaitKey(store.WakeTask, "task_c"),
			task("task_c", 2, "task.progress"),
			store.Wake{Kind: store.WakeTask, ID: "task_c", Revision: 3})
		if wk.Types != nil || !(store.Kinds{"task.message"}).MayConcern(wk) {
			t.Errorf("coalesced wake with unknown types: %+v", wk)
		}
	})
}

// A read with kinds answers only those events, with a cursor past the ones
// it left aside, however many of them there are.
func TestReadLogKinds(t *testing.T) {
	eachBackendWithFanIn(t, func(t *testing.T, s *store.Store, fan *store.FanIn, _ *metrics.Metrics, f fixture) {
		id := taskWithChanges(t, f,
			[]string{event("task.progress", 2)},
			[]string{event("task.message", 3)},
			[]string{event("task.progress", 4), event("task.status", 4)})
		key := f.taskLog(id)
		w := fan.Wait(store.WaitKey(store.WakeTask, id))
		defer w.Stop()
		read := func(after string, limit int, kinds ...string) store.LogPage {
			t.Helper()
			page, err := fan.ReadLog(context.Background(), w, key, store.LogQuery{After: after, Limit: limit, Kinds: kinds})
			if err != nil {
				t.Fatal(err)
			}
			return page
		}
		types := func(p store.LogPage) []string {
			var out []string
			for _, e := range p.Entries {
				var ev struct{ Type string }
				if err := json.Unmarshal(e.JSON, &ev); err != nil {
					t.Fatal(err)
				}
				out = append(out, ev.Type)
			}
			return out
		}
		all := read("", 100)
		if len(all.Entries) != 5 {
			t.Fatalf("the whole log: %d events", len(all.Entries))
		}
		last := all.Entries[4].ID

		got := read("", 100, "task.message", "task.status")
		if !slices.Equal(types(got), []string{"task.message", "task.status"}) || got.Cursor != last {
			t.Errorf("kinds read: %q, cursor %s, want the message and the status, cursor %s", types(got), got.Cursor, last)
		}
		got = read("", 1, "task.message", "task.status")
		if !slices.Equal(types(got), []string{"task.message"}) || got.Cursor != got.Entries[0].ID {
			t.Errorf("kinds read of 1: %q, cursor %s", types(got), got.Cursor)
		}
		got = read(got.Cursor, 100, "task.message")
		if len(got.Entries) != 0 || got.Cursor != last {
			t.Errorf("after the message: %q, cursor %s, want none and the cursor past the rest (%s)", types(got), got.Cursor, last)
		}
		if again := read(last, 100, "task.message"); len(again.Entries) != 0 || again.Cursor != last {
			t.Errorf("at the end: %+v, want none and the same cursor", again)
		}
		if unread := read(last, 100, "task.message"); unread.Cursor != last {
			t.Errorf("cursor moved with nothing new: %s", unread.Cursor)
		}

		// More events of other kinds than one script looks at: the read
		// goes on until it finds the one asked for.
		f.apply(t, id, 4, idem.Key{}, many(1500, "task.progress", 5)...)
		f.apply(t, id, 5, idem.Key{}, event("task.terminal", 6))
		got = read(last, 100, "task.terminal")
		if !slices.Equal(types(got), []string{"task.terminal"}) {
			t.Errorf("after 1500 others: %q", types(got))
		}
	})
}

// TaskKindsAfter says whether the log holds an event of kinds after a
// revision, looking back only as far as that revision.
func TestTaskKindsAfter(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		id := taskWithChanges(t, f,
			[]string{event("task.message", 2)},
			[]string{event("task.progress", 3)},
			[]string{event("task.status", 4), event("input.requested", 4)})
		ctx := context.Background()
		cases := []struct {
			after int64
			kinds store.Kinds
			found bool
		}{
			{0, store.Kinds{"task.message"}, true},
			{1, store.Kinds{"task.message"}, true},
			{2, store.Kinds{"task.message"}, false},
			{2, store.Kinds{"task.progress"}, true},
			{3, store.Kinds{"task.progress"}, false},
			{3, store.Kinds{"input.requested"}, true},
			{3, store.Kinds{"task.message", "task.status"}, true},
			{4, store.Kinds{"input.requested"}, false},
			{0, store.Kinds{"task.terminal"}, false},
		}
		for _, c := range cases {
			found, task, err := s.TaskKindsAfter(ctx, f.part, id, f.session, c.after, c.kinds)
			if err != nil || found != c.found || string(task) != `{"rev":4}` {
				t.Errorf("after %d, kinds %q: found %v, task %s, %v; want found %v", c.after, c.kinds, found, task, err, c.found)
			}
		}

		// Looking back past more entries than one script looks at.
		f.apply(t, id, 4, idem.Key{}, many(1500, "task.progress", 5)...)
		if found, _, err := s.TaskKindsAfter(ctx, f.part, id, f.session, 3, store.Kinds{"input.requested"}); err != nil || !found {
			t.Errorf("behind 1500 others: found %v, %v", found, err)
		}
		if found, task, err := s.TaskKindsAfter(ctx, f.part, id, f.session, 4, store.Kinds{"input.requested"}); err != nil || found || string(task) != `{"rev":5}` {
			t.Errorf("none after 4: found %v, task %s, %v", found, task, err)
		}
		if _, _, err := s.TaskKindsAfter(ctx, f.part, "task_"+id[5:7]+"00000000000000000000000000", f.session, 0, store.Kinds{"task.message"}); err != store.ErrNotFound {
			t.Errorf("a missing task: %v, want ErrNotFound", err)
		}
	})
}

// A waiting read with kinds leaves a wake-up of other types aside without a
// read, and answers the next event of its kinds.
func TestReadLogKindsWaitsThroughOtherKinds(t *testing.T) {
	eachBackendWithFanIn(t, func(t *testing.T, s *store.Store, fan *store.FanIn, m *metrics.Metrics, f fixture) {
		awaitLive(t, fan, f)
		id, _ := f.createTask(t, "alice", idem.Key{})
		w := fan.Wait(store.WaitKey(store.WakeTask, id))
		defer w.Stop()
		all, err := fan.ReadLog(context.Background(), w, f.taskLog(id), store.LogQuery{Limit: 10})
		if err != nil || len(all.Entries) != 1 {
			t.Fatalf("the log: %+v %v", all, err)
		}
		type read struct {
			page store.LogPage
			err  error
		}
		done := make(chan read, 1)
		go func() {
			page, err := fan.ReadLog(context.Background(), w, f.taskLog(id),
				store.LogQuery{After: all.Cursor, Limit: 10, Wait: 30 * time.Second, Kinds: store.Kinds{"task.message"}})
			done <- read{page, err}
		}()
		f.apply(t, id, 1, idem.Key{}, event("task.progress", 2))
		storetest.WaitFor(t, "the read to leave the progress aside", func() bool {
			return testutil.ToFloat64(m.WakeupsIgnored) >= 1
		})
		select {
		case r := <-done:
			t.Fatalf("the read answered on progress: %+v %v", r.page, r.err)
		default:
		}
		f.apply(t, id, 2, idem.Key{}, event("task.message", 3))
		r := <-done
		if r.err != nil || len(r.page.Entries) != 1 || r.page.Cursor != r.page.Entries[0].ID {
			t.Fatalf("the read after the message: %+v %v", r.page, r.err)
		}
	})
}
