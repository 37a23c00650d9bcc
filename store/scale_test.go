package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// The conformance suite at the sizes of real use, on every backend: lists of
// thousands of records read a hundred a page, records near the largest a
// task may be, hook reads of a hundred large bodies. Writes go concurrently,
// so the group commit sends them many to a pipeline.

// eachFixtureAtLength is eachFixture with a per-command timeout long enough
// for megabytes through the race detector on a busy machine: the tests that
// use it are about what the store answers, not how fast.
func eachFixtureAtLength(t *testing.T, fn func(t *testing.T, s *store.Store, f fixture)) {
	t.Helper()
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		cfg.Timeout = 30 * time.Second
		s := open(t, cfg)
		fn(t, s, newFixture(t, s, "alice"))
	})
}

// inParallel runs do(i) for every i below n on a few goroutines and fails
// the test with the first error.
func inParallel(t *testing.T, n int, do func(i int) error) {
	t.Helper()
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	go func() {
		defer close(next)
		for i := range n {
			select {
			case next <- i:
			case err := <-errs:
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// createTasks creates a task of the fixture's session for each of jsons,
// concurrently, the ith created at now + i%500 ms (so that some share a
// creation time); it returns their ids and creation times.
func (f fixture) createTasks(t *testing.T, jsons func(i int) []byte, n int) ([]string, []time.Time) {
	t.Helper()
	taskIDs, created := make([]string, n), make([]time.Time, n)
	inParallel(t, n, func(i int) error {
		id := ids.New(ids.TaskPrefix, f.part)
		at := f.now.Add(time.Duration(i%500) * time.Millisecond)
		res, err := f.s.CreateTask(context.Background(), store.TaskCreate{
			LogWrite:  store.LogWrite{Partition: f.part, Now: at, Retention: time.Hour},
			NewRecord: store.NewRecord{ID: id, JSON: jsons(i), Event: []byte(`{"type":"task.created"}`), ExpiresAt: f.now.Add(time.Hour)},
			SessionID: f.session, Principal: "alice", Kind: fmt.Sprint("k", i%3),
		})
		if err == nil && res.Outcome != store.OK {
			err = fmt.Errorf("create task %d: %+v", i, res)
		}
		taskIDs[i], created[i] = id, at
		return err
	})
	return taskIDs, created
}

// pageThrough reads a list a hundred at a time until its end, checking
// each page's length and the cursor's progress; each page's items go to
// got (with the page's number), and all of them are returned.
func pageThrough[T any](t *testing.T, list func(after *paging.Position) ([]T, string, error), got func(page int, items []T)) []T {
	t.Helper()
	var all []T
	var after *paging.Position
	for page := 1; ; page++ {
		if page > 1000 {
			t.Fatal("more than 1000 pages: the cursor does not advance")
		}
		items, next, err := list(after)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if len(items) > 100 {
			t.Fatalf("page %d holds %d items, limit 100", page, len(items))
		}
		if got != nil {
			got(page, items)
		}
		all = append(all, items...)
		if next == "" {
			return all
		}
		if after, err = paging.After(next); err != nil {
			t.Fatalf("page %d: cursor %q: %v", page, next, err)
		}
	}
}

// listIndexed is ListIndexed with a limit of 100, as pageThrough reads it.
func listIndexed(s *store.Store, indexes []string, record func(id string) string, f store.ListFilter) func(after *paging.Position) ([][]byte, string, error) {
	return func(after *paging.Position) ([][]byte, string, error) {
		page, err := s.ListIndexed(context.Background(), indexes, record, after, 100, f)
		return page.Items, page.Next, err
	}
}

// Thousands of tasks (in a few sessions of hundreds) page a hundred at a
// time through the owner's indexes of every partition, with and without a
// filter, and through one session's index: each task once, newest first,
// every page within the store's own timeout (2 s: a page that takes longer
// is a 503).
func TestListsPageThroughThousandsOfTasks(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		const sessions, perSession = 4, 500
		const n = sessions * perSession
		jsonOf := func(i int) []byte { return fmt.Appendf(nil, `{"n":%d,"pad":%q}`, i, strings.Repeat("p", 200)) }
		var taskIDs []string
		var created []time.Time
		for k := range sessions {
			fk := f
			if k > 0 {
				fk = newFixture(t, s, "alice")
			}
			ids, at := fk.createTasks(t, func(i int) []byte { return jsonOf(k*perSession + i) }, perSession)
			taskIDs, created = append(taskIDs, ids...), append(created, at...)
		}
		number := make(map[string]int, n)
		for i := range n {
			number[string(jsonOf(i))] = i
		}
		// check wants each task that want keeps once, newest first (by
		// creation time, then id).
		check := func(what string, items [][]byte, want func(i int) bool) {
			t.Helper()
			seen := make(map[int]bool, len(items))
			for k, it := range items {
				i, ok := number[string(it)]
				switch {
				case !ok:
					t.Fatalf("%s: item %d is no task written: %.80s", what, k, it)
				case seen[i]:
					t.Fatalf("%s: task %d listed twice", what, i)
				case !want(i):
					t.Fatalf("%s: task %d does not belong", what, i)
				}
				seen[i] = true
				if k > 0 {
					p := number[string(items[k-1])]
					tp, ti := created[p].UnixMilli(), created[i].UnixMilli() // a list orders by the millisecond
					if tp < ti || tp == ti && taskIDs[p] < taskIDs[i] {
						t.Fatalf("%s: task %d listed before the newer %d", what, p, i)
					}
				}
			}
			wanted := 0
			for i := range n {
				if want(i) {
					wanted++
				}
			}
			if len(seen) != wanted {
				t.Fatalf("%s: %d tasks listed, want %d", what, len(seen), wanted)
			}
		}
		record := func(id string) string { return s.Keys.Task(f.part, id) }
		list := func(indexes []string, filter store.ListFilter) [][]byte {
			return pageThrough(t, listIndexed(s, indexes, record, filter), nil)
		}

		owner := make([]string, s.Partitions)
		for p := range owner {
			owner[p] = s.Keys.OwnerTasks(p, "alice")
		}
		check("alice's tasks", list(owner, store.ListFilter{}), func(int) bool { return true })
		byKind := store.ListFilter{Fields: []string{"owner", "kind"}, Keep: func(v []string) bool { return v[0] == "alice" && v[1] == "k1" }}
		check("alice's tasks of kind k1", list(owner, byKind), func(i int) bool { return i%perSession%3 == 1 })
		check("a session's tasks", list(s.Keys.SessionTaskIndexes(f.part, f.session), store.ListFilter{}),
			func(i int) bool { return i < perSession })
	})
}

// Records from a KiB to nearly the largest a task may be (1 MiB) list
// intact, each once, in pages of at most a MiB of records, through a filter
// (which reads a few fields of every record first).
func TestListsOfLargeRecords(t *testing.T) {
	eachFixtureAtLength(t, func(t *testing.T, s *store.Store, f fixture) {
		sizes := []int{1 << 10, 1 << 10, 1 << 10, 60 << 10, 250 << 10, 1<<20 - 4<<10}
		const n = 48
		jsonOf := func(i int) []byte {
			return fmt.Appendf(nil, `{"n":%d,"pad":%q}`, i, strings.Repeat(string(rune('a'+i%26)), sizes[i%len(sizes)]))
		}
		f.createTasks(t, jsonOf, n)
		want := make(map[string]bool, n)
		for i := range n {
			want[string(jsonOf(i))] = true
		}
		index := s.Keys.SessionTaskIndexes(f.part, f.session)
		record := func(id string) string { return s.Keys.Task(f.part, id) }
		alices := store.ListFilter{Fields: []string{"owner", "status"}, Keep: func(v []string) bool { return v[0] == "alice" }}
		all := pageThrough(t, listIndexed(s, index, record, alices), func(page int, items [][]byte) {
			bytes := 0
			for _, it := range items {
				if !want[string(it)] {
					t.Fatalf("page %d holds a record of %d bytes that is not one written, or twice", page, len(it))
				}
				delete(want, string(it))
				bytes += len(it)
			}
			if len(items) > 1 && bytes > 1<<20 {
				t.Fatalf("page %d holds %d records of %d bytes, more than a MiB", page, len(items), bytes)
			}
		})
		if len(all) != n {
			t.Fatalf("%d records listed, want %d", len(all), n)
		}
	})
}

// Hundreds of large requests to one hook, posted concurrently, are read a
// hundred at a time through a group, each once and intact, acked a hundred
// at a time, and page through the hook's log a hundred at a time.
func TestHookReadsOfAHundredLargeBodies(t *testing.T) {
	eachFixtureAtLength(t, func(t *testing.T, s *store.Store, fx fixture) {
		f := hookFixture{fixture: fx}
		var res store.Result
		if f.task, res = f.createTask(t, "alice", idem.Key{}); res.Outcome != store.OK {
			t.Fatalf("create task: %+v", res)
		}
		if res, f.hook = f.createHook(t, "alice", f.now.Add(time.Hour), idem.Key{}); res.Outcome != store.OK {
			t.Fatalf("create hook: %+v", res)
		}
		ctx := context.Background()
		const n = 250
		bodyOf := func(i int) string { return fmt.Sprintf("%05d", i) + strings.Repeat(string(rune('a'+i%26)), 64<<10) }
		inParallel(t, n, func(i int) error {
			now := time.Now()
			res, err := s.IngestHook(ctx, store.HookIngest{
				Partition: f.part, HookID: f.hook, TaskID: f.task, SessionID: f.session, ProviderEventID: fmt.Sprint("p", i),
				Burst: 1000, Method: "POST", ContentType: "text/plain", Headers: []byte(`{}`), Body: []byte(bodyOf(i)),
				Event: []byte(`{"type":"hook.received","sessionId":"` + f.session + `","data":{"hookId":"` + f.hook +
					`","eventId":"` + store.FillQueueID + `","seq":` + store.FillSeq + `}}`),
				Now: now, ReceivedAt: now.UTC().Format(time.RFC3339), Retention: time.Hour,
			})
			if err == nil && res.Outcome != store.OK {
				err = fmt.Errorf("post %d: %+v", i, res)
			}
			return err
		})

		seen := map[string]bool{}
		checkBody := func(what string, body string) {
			t.Helper()
			var i int
			if _, err := fmt.Sscanf(body, "%05d", &i); err != nil || i >= n || body != bodyOf(i) {
				t.Fatalf("%s: a body of %d bytes that is no post's", what, len(body))
			}
		}
		for _, want := range []int{100, 100, 50, 0} {
			b := f.read(t, readOpts{consumer: "c", count: 100})
			if b.Outcome != store.OK || len(b.Entries) != want {
				t.Fatalf("a read of 100: %d entries (%v), want %d", len(b.Entries), b.Outcome, want)
			}
			acks := make([]string, 0, len(b.Entries))
			for _, e := range b.Entries {
				checkBody("read", e.Body)
				if seen[e.Body[:5]] {
					t.Fatalf("post %s delivered twice", e.Body[:5])
				}
				seen[e.Body[:5]] = true
				acks = append(acks, e.ID)
			}
			if len(acks) > 0 {
				if res := f.ack(t, "alice", "g", acks...); res.Outcome != store.OK || res.Acked != int64(len(acks)) {
					t.Fatalf("ack of %d: %+v", len(acks), res)
				}
			}
		}
		if len(seen) != n {
			t.Fatalf("%d posts delivered, want %d", len(seen), n)
		}

		logged, after := 0, ""
		for pages := 0; logged < n; pages++ {
			if pages > n/100+1 {
				t.Fatalf("the log's pages end at %d of %d posts", logged, n)
			}
			l, err := s.ReadHookLog(ctx, f.part, f.hook, after, 100, 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range l.Entries {
				checkBody("log", e.Body)
				after = e.ID
			}
			logged += len(l.Entries)
		}
		if logged != n {
			t.Fatalf("the log holds %d posts, want %d", logged, n)
		}
	})
}

// Hundreds of hooks list a hundred a page, each read with its status (one
// script per hook in one pipeline).
func TestListHooksOfHundreds(t *testing.T) {
	eachFixtureAtLength(t, func(t *testing.T, s *store.Store, f fixture) {
		const n = 250
		hookIDs := make([]string, n)
		inParallel(t, n, func(i int) error {
			id := ids.New(ids.HookPrefix, f.part)
			hookIDs[i] = id
			res, err := s.CreateHook(context.Background(), store.HookCreate{
				Partition: f.part, ID: id, SessionID: f.session, Principal: "alice",
				TokenHash: "hash-" + id, JSON: []byte(`{"hookId":"` + id + `"}`), Config: []byte(`{}`),
				Replay: []byte(`{}`), Now: f.now.Add(time.Duration(i) * time.Millisecond), ClosesAt: f.now.Add(time.Hour), ExpiresAt: f.now.Add(2 * time.Hour),
			})
			if err == nil && res.Outcome != store.OK {
				err = fmt.Errorf("create hook %d: %+v", i, res)
			}
			return err
		})
		want := make(map[string]bool, n)
		for _, id := range hookIDs {
			want[`{"hookId":"`+id+`"}`] = true
		}
		indexes := make([]string, s.Partitions)
		for p := range indexes {
			indexes[p] = s.Keys.OwnerHooks(p, "alice")
		}
		list := func(after *paging.Position) ([]store.HookStatus, string, error) {
			page, err := s.ListHooks(context.Background(), indexes, after, 100, "alice", false, time.Now())
			return page.Hooks, page.Next, err
		}
		all := pageThrough(t, list, func(_ int, hooks []store.HookStatus) {
			for _, h := range hooks {
				if !want[string(h.JSON)] || h.Outcome != store.OK || h.Closed {
					t.Fatalf("a hook listed that is not one open hook written, or twice: %+v", h)
				}
				delete(want, string(h.JSON))
			}
		})
		if len(all) != n {
			t.Fatalf("%d hooks listed, want %d", len(all), n)
		}
	})
}
