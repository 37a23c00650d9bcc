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
	"github.com/taskhook/taskhook/waits"
)

// event is a stored task event of a type at a revision, as the task service
// writes them: the type first, the revision before the data.
func event(typ string, rev int64) string {
	return fmt.Sprintf(`{"type":%q,"at":"2025-01-01T00:00:00.000Z","sessionId":"ses_1","taskId":"task_1","revision":%d,"data":{"task":{"revision":%d}}}`,
		typ, rev, rev+100)
}

// startFanIn runs a fan-in on s for the test, which wakes the registry it
// returns with its metrics.
func startFanIn(t *testing.T, s *store.Store) (*waits.Waiters, *metrics.Metrics) {
	t.Helper()
	m := metrics.New()
	reg := waits.New(waits.Config{}, m, time.Now)
	fan := store.NewFanIn(s, store.FanInConfig{Block: 200 * time.Millisecond}, reg.Notify, m, nil)
	if err := fan.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fan.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return reg, m
}

// eachBackendWithFanIn runs fn on every backend with a store, the registry
// a fan-in on it wakes, their metrics and a fixture of alice's.
func eachBackendWithFanIn(t *testing.T, fn func(t *testing.T, s *store.Store, reg *waits.Waiters, m *metrics.Metrics, f fixture)) {
	t.Helper()
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		reg, m := startFanIn(t, s)
		fn(t, s, reg, m, newFixture(t, s, "alice"))
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

// awaitLive returns once the fan-in reader waking reg reads f's partition's wake
// stream: it starts at the stream's end, so a change made before that wakes
// nobody.
func awaitLive(t *testing.T, reg *waits.Waiters, f fixture) {
	t.Helper()
	id, _ := f.createTask(t, "alice", idem.Key{})
	w := reg.Wait(waits.WaitKey(waits.WakeTask, id))
	defer w.Stop()
	for rev := int64(1); rev < 1000; rev++ {
		f.apply(t, id, rev, idem.Key{}, event("task.progress", rev+1))
		wk, why := w.Next(context.Background(), time.Now().Add(200*time.Millisecond))
		if why != waits.Woken {
			continue
		}
		// The reader reads. Wait for the wake of the last change too, so
		// none of the probe's wakes is still on its way to the caller's
		// waiters, where it would be coalesced with theirs.
		for wk.Revision < rev+1 {
			if wk, why = w.Next(context.Background(), time.Now().Add(10*time.Second)); why != waits.Woken {
				t.Fatalf("no wake for the probe's revision %d: %v", rev+1, why)
			}
		}
		return
	}
	t.Fatal("the fan-in reader does not read")
}

// A wake-up names the types of the events its change appended, in order,
// read by the scripts from the events themselves; an event whose type
// cannot be read makes the types unknown.
func TestWakesNameTheirEventTypes(t *testing.T) {
	eachBackendWithFanIn(t, func(t *testing.T, _ *store.Store, reg *waits.Waiters, _ *metrics.Metrics, f fixture) {
		awaitLive(t, reg, f)
		// Every wake of the session's tasks, each read before the next
		// change: none is coalesced with another.
		w := reg.Wait(waits.WaitKey(waits.WakeSession, f.session))
		defer w.Stop()
		id, _ := f.createTask(t, "alice", idem.Key{})
		wakeOf := func(rev int64, events ...string) waits.Wake {
			t.Helper()
			if rev > 0 {
				if r := f.apply(t, id, rev, idem.Key{}, events...); r.Outcome != store.OK {
					t.Fatalf("apply at %d: %+v", rev, r)
				}
			}
			for {
				wk, why := w.Next(context.Background(), time.Now().Add(10*time.Second))
				if why != waits.Woken {
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

// A read with kinds answers only those events, with a cursor past the ones
// it left aside, however many of them there are.
func TestReadLogKinds(t *testing.T) {
	eachBackendWithFanIn(t, func(t *testing.T, s *store.Store, reg *waits.Waiters, _ *metrics.Metrics, f fixture) {
		id := taskWithChanges(t, f,
			[]string{event("task.progress", 2)},
			[]string{event("task.message", 3)},
			[]string{event("task.progress", 4), event("task.status", 4)})
		key := f.taskLog(id)
		w := reg.Wait(waits.WaitKey(waits.WakeTask, id))
		defer w.Stop()
		read := func(after string, limit int, kinds ...string) waits.LogPage {
			t.Helper()
			page, err := reg.ReadLog(context.Background(), w, s.Source(key), waits.LogQuery{After: after, Limit: limit, Kinds: kinds})
			if err != nil {
				t.Fatal(err)
			}
			return page
		}
		types := func(p waits.LogPage) []string {
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
			kinds waits.Kinds
			found bool
		}{
			{0, waits.Kinds{"task.message"}, true},
			{1, waits.Kinds{"task.message"}, true},
			{2, waits.Kinds{"task.message"}, false},
			{2, waits.Kinds{"task.progress"}, true},
			{3, waits.Kinds{"task.progress"}, false},
			{3, waits.Kinds{"input.requested"}, true},
			{3, waits.Kinds{"task.message", "task.status"}, true},
			{4, waits.Kinds{"input.requested"}, false},
			{0, waits.Kinds{"task.terminal"}, false},
		}
		for _, c := range cases {
			found, task, err := s.TaskKindsAfter(ctx, f.part, id, f.session, c.after, c.kinds)
			if err != nil || found != c.found || string(task) != `{"rev":4}` {
				t.Errorf("after %d, kinds %q: found %v, task %s, %v; want found %v", c.after, c.kinds, found, task, err, c.found)
			}
		}

		// Looking back past more entries than one script looks at.
		f.apply(t, id, 4, idem.Key{}, many(1500, "task.progress", 5)...)
		if found, _, err := s.TaskKindsAfter(ctx, f.part, id, f.session, 3, waits.Kinds{"input.requested"}); err != nil || !found {
			t.Errorf("behind 1500 others: found %v, %v", found, err)
		}
		if found, task, err := s.TaskKindsAfter(ctx, f.part, id, f.session, 4, waits.Kinds{"input.requested"}); err != nil || found || string(task) != `{"rev":5}` {
			t.Errorf("none after 4: found %v, task %s, %v", found, task, err)
		}
		if _, _, err := s.TaskKindsAfter(ctx, f.part, "task_"+id[5:7]+"00000000000000000000000000", f.session, 0, waits.Kinds{"task.message"}); err != store.ErrNotFound {
			t.Errorf("a missing task: %v, want ErrNotFound", err)
		}
	})
}

// A waiting read with kinds leaves a wake-up of other types aside without a
// read, and answers the next event of its kinds.
func TestReadLogKindsWaitsThroughOtherKinds(t *testing.T) {
	eachBackendWithFanIn(t, func(t *testing.T, s *store.Store, reg *waits.Waiters, m *metrics.Metrics, f fixture) {
		awaitLive(t, reg, f)
		id, _ := f.createTask(t, "alice", idem.Key{})
		w := reg.Wait(waits.WaitKey(waits.WakeTask, id))
		defer w.Stop()
		all, err := reg.ReadLog(context.Background(), w, s.Source(f.taskLog(id)), waits.LogQuery{Limit: 10})
		if err != nil || len(all.Entries) != 1 {
			t.Fatalf("the log: %+v %v", all, err)
		}
		type read struct {
			page waits.LogPage
			err  error
		}
		done := make(chan read, 1)
		go func() {
			page, err := reg.ReadLog(context.Background(), w, s.Source(f.taskLog(id)),
				waits.LogQuery{After: all.Cursor, Limit: 10, Wait: 30 * time.Second, Kinds: waits.Kinds{"task.message"}})
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
