package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/snapdelta"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/waits"
)

// The conformance suite: every test here runs on real standalone Redis, a
// real Redis Cluster and the embedded store (storetest.EachBackend), through
// the same code and Lua.

func open(t *testing.T, cfg store.Config) *store.Store {
	t.Helper()
	return storetest.Open(t, cfg, metrics.New())
}

type fixture struct {
	s       *store.Store
	part    int
	session string
	now     time.Time
}

// eachFixture runs fn on every backend with a fixture of alice's session.
func eachFixture(t *testing.T, fn func(t *testing.T, s *store.Store, f fixture)) {
	t.Helper()
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		fn(t, s, newFixture(t, s, "alice"))
	})
}

// taskLog is the log of a task of the fixture's session, to read.
func (f fixture) taskLog(id string) store.Log { return f.s.Keys.TaskEvents(f.part, id, f.session) }

func newFixture(t *testing.T, s *store.Store, owner string) fixture {
	t.Helper()
	part := 3 % s.Partitions
	f := fixture{s: s, part: part, session: ids.New(ids.SessionPrefix, part), now: time.Now()}
	res, err := s.CreateSession(context.Background(), store.SessionCreate{
		LogWrite:  store.LogWrite{Partition: part, Now: f.now, Retention: time.Hour},
		NewRecord: store.NewRecord{ID: f.session, JSON: []byte(`{"s":1}`), Event: []byte(`{"type":"session.created"}`), ExpiresAt: f.now.Add(time.Hour)},
		Owner:     owner,
	})
	if err != nil || res.Outcome != store.OK {
		t.Fatalf("create session: %v %+v", err, res)
	}
	return f
}

func (f fixture) createTask(t *testing.T, principal string, idem idem.Key) (string, store.Result) {
	t.Helper()
	id := ids.New(ids.TaskPrefix, f.part)
	res, err := f.s.CreateTask(context.Background(), store.TaskCreate{
		LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour, Idem: idem},
		NewRecord: store.NewRecord{ID: id, JSON: []byte(`{"rev":1}`), Event: []byte(`{"type":"task.created"}`), ExpiresAt: f.now.Add(time.Hour)},
		SessionID: f.session, Principal: principal,
	})
	if err != nil {
		t.Fatal(err)
	}
	return id, res
}

// createLoggedTask creates a task of alice's and reads its log: its
// task.created event alone.
func (f fixture) createLoggedTask(t *testing.T) (string, []waits.LogEntry) {
	t.Helper()
	id, _ := f.createTask(t, "alice", idem.Key{})
	created, err := f.s.ReadLog(context.Background(), f.taskLog(id), "", 10)
	if err != nil || len(created) != 1 {
		t.Fatalf("task log: %+v %v", created, err)
	}
	return id, created
}

func (f fixture) apply(t *testing.T, id string, expect int64, idem idem.Key, events ...string) store.Result {
	t.Helper()
	evs := make([]store.TaskEvent, len(events))
	for i, e := range events {
		evs[i] = store.TaskEvent{JSON: []byte(e)}
	}
	res, err := f.s.ApplyTask(context.Background(), store.TaskUpdate{
		LogWrite: store.LogWrite{Partition: f.part, Now: time.Now(), Retention: time.Hour, Idem: idem},
		ID:       id, SessionID: f.session, ExpectRevision: expect, OldStatus: "working", Status: "working",
		JSON: fmt.Appendf(nil, `{"rev":%d}`, expect+1), Events: evs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// complete moves a working task of alice's at revision 1 to completed.
func (f fixture) complete(t *testing.T, id string) {
	t.Helper()
	res, err := f.s.ApplyTask(context.Background(), store.TaskUpdate{
		LogWrite: store.LogWrite{Partition: f.part, Now: time.Now(), Retention: time.Hour},
		ID:       id, SessionID: f.session, ExpectRevision: 1, Status: wire.StatusCompleted, Ends: true,
		JSON: []byte(`{"rev":2}`), Events: []store.TaskEvent{{JSON: []byte(`{}`)}},
		ExpiresAt: f.now.Add(time.Hour), Owner: "alice", OldStatus: wire.StatusWorking,
	})
	if err != nil || res.Outcome != store.OK {
		t.Fatal(res, err)
	}
}

// A task command without an Idempotency-Key is recorded in the task's
// hash: its id, short, and its answer, for the last three such commands, a
// line each.
func TestTaskHashRecordsTheLastThreeCommands(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		id, _ := f.createTask(t, "alice", idem.Key{})
		var last []string
		for rev := int64(1); rev <= 4; rev++ {
			r := f.apply(t, id, rev, idem.Key{}, `{"type":"a"}`)
			last = append(last, r.EventIDs[0])
		}
		raw, _ := storetest.RecordField(t, s, s.Keys.Task(f.part, id), store.TaskFieldCommands)
		records := strings.Split(raw, "\n")
		if len(records) != 3 {
			t.Fatalf("the task's command records %q, want three", raw)
		}
		for i, rec := range records {
			words := strings.Split(rec, " ")
			if len(words) != 3 || len(words[0]) != store.TaskCommandIDLen || words[1] != "ok" {
				t.Fatalf("record %d is %q: want a %d-character id and the answer", i, rec, store.TaskCommandIDLen)
			}
			if want := last[len(last)-3+i]; words[2] != want {
				t.Errorf("record %d answers %q, want the event %s", i, rec, want)
			}
		}
	})
}

// A task whose commands were recorded as an older version kept them (JSON)
// keeps them on: the next command adds its own, and a command run again
// after its reply was lost still answers what its first run did.
func TestTaskCommandsRecordedAsJSONStillRead(t *testing.T) {
	s, f, proxy := behindProxy(t)
	ctx := context.Background()
	id, _ := f.createTask(t, "alice", idem.Key{})
	first := f.apply(t, id, 1, idem.Key{}, `{"type":"a"}`).EventIDs[0]
	rec := s.Keys.Task(f.part, id)
	old := `[["aaaaaaaaaaaaa",["ok","1-1"]],["bbbbbbbbbbbbb",["ok","` + first + `"]]]`
	storetest.RecordAsHash(t, s, rec)
	storetest.SetRecordFields(t, s, rec, store.TaskFieldCommands, old)
	proxy.CutAfterReply("evalsha")
	r := f.apply(t, id, 2, idem.Key{}, `{"type":"b"}`)
	if r.Outcome != store.OK || proxy.Cuts() != 1 {
		t.Fatalf("apply with its reply lost: %+v (%d cuts), want ok", r, proxy.Cuts())
	}
	raw, _ := storetest.RecordField(t, s, rec, store.TaskFieldCommands)
	records := strings.Split(raw, "\n")
	if len(records) != 3 || records[0] != "aaaaaaaaaaaaa ok 1-1" || records[1] != "bbbbbbbbbbbbb ok "+first ||
		!strings.HasSuffix(records[2], " ok "+r.EventIDs[0]) {
		t.Fatalf("the records after a command on the JSON ones: %q", raw)
	}
	if got, err := s.GetJSON(ctx, rec); err != nil || string(got) != `{"rev":3}` {
		t.Fatalf("task: %s %v, want revision 3", got, err)
	}
}

func TestTaskWritesCompareAndSet(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		id, res := f.createTask(t, "alice", idem.Key{})
		if res.Outcome != store.OK || len(res.EventIDs) != 1 {
			t.Fatalf("create: %+v", res)
		}
		if r := f.apply(t, id, 1, idem.Key{}, `{"type":"a"}`, `{"type":"b"}`); r.Outcome != store.OK || len(r.EventIDs) != 2 {
			t.Fatalf("apply at 1: %+v", r)
		}
		// A change computed from revision 1 again has lost the race: the
		// script returns the current task and writes nothing.
		r := f.apply(t, id, 1, idem.Key{}, `{"type":"late"}`)
		if r.Outcome != store.Conflict || string(r.Current) != `{"rev":2}` {
			t.Fatalf("stale apply: %+v", r)
		}
		raw, err := s.GetJSON(context.Background(), s.Keys.Task(f.part, id))
		if err != nil || string(raw) != `{"rev":2}` {
			t.Fatalf("task after stale apply: %s %v", raw, err)
		}
		if r := f.apply(t, ids.New(ids.TaskPrefix, f.part), 1, idem.Key{}, `{}`); r.Outcome != store.Missing {
			t.Fatalf("missing task: %+v", r)
		}
	})
}

// A change sent as edits of the stored snapshot writes the new one byte for
// byte; edits made for other bytes than the hash holds, at the right
// revision, are a conflict that writes nothing.
func TestTaskChangeSentAsEdits(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		id, _ := f.createTask(t, "alice", idem.Key{})
		older := []byte(`{"rev":1}`)
		newer := []byte(`{"rev":2,"statusMessage":"working on it, \"quoted\" and }"}`)
		edits, err := snapdelta.Edits(older, newer)
		if err != nil {
			t.Fatal(err)
		}
		// JSON, which goes when the edits are not shorter, is not the new
		// snapshot: only the edits write it.
		apply := func(edits []byte, expect int64) store.Result {
			res, err := s.ApplyTask(ctx, store.TaskUpdate{
				LogWrite: store.LogWrite{Partition: f.part, Now: time.Now(), Retention: time.Hour},
				ID:       id, SessionID: f.session, ExpectRevision: expect, OldStatus: "working", Status: "working",
				JSON: append(newer, make([]byte, 64)...), Edits: edits, Events: []store.TaskEvent{{JSON: []byte(`{"type":"task.progress"}`)}},
			})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if res := apply(edits, 1); res.Outcome != store.OK {
			t.Fatalf("apply edits: %+v", res)
		}
		raw, err := s.GetJSON(ctx, s.Keys.Task(f.part, id))
		if err != nil || !bytes.Equal(raw, newer) {
			t.Fatalf("after the edits the task is %s (%v), want %s", raw, err, newer)
		}
		// The same edits again, at the revision the hash is at now: made
		// for the bytes of revision 1, not these.
		if res := apply(edits, 2); res.Outcome != store.Conflict || !bytes.Equal(res.Current, newer) {
			t.Fatalf("edits for other bytes: %+v", res)
		}
		if raw, _ := s.GetJSON(ctx, s.Keys.Task(f.part, id)); !bytes.Equal(raw, newer) {
			t.Fatalf("edits for other bytes wrote %s", raw)
		}
	})
}

// A task's record names its requester, executor and kind only when they are
// not its owner or none, as most tasks' are not; each party may read it.
func TestTaskHashKeepsOnlyThePartiesThatDiffer(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		create := func(requester, executor, kind string) string {
			id := ids.New(ids.TaskPrefix, f.part)
			res, err := s.CreateTask(ctx, store.TaskCreate{
				LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
				NewRecord: store.NewRecord{ID: id, JSON: []byte(`{"rev":1}`), Event: []byte(`{"type":"task.created"}`), ExpiresAt: f.now.Add(time.Hour)},
				SessionID: f.session, Principal: "alice", Requester: requester, Executor: executor, Kind: kind,
			})
			if err != nil || res.Outcome != store.OK {
				t.Fatalf("create: %+v %v", res, err)
			}
			return id
		}
		field := func(id, name string) (string, bool) {
			return storetest.RecordField(t, s, s.Keys.Task(f.part, id), name)
		}
		own := create("alice", "alice", "")
		for _, name := range []string{"requester", "executor", "kind"} {
			if v, ok := field(own, name); ok {
				t.Errorf("a task its owner requests and executes, of no kind, keeps %s %q", name, v)
			}
		}
		other := create("bob", "carol", "deploy")
		for name, want := range map[string]string{"requester": "bob", "executor": "carol", "kind": "deploy"} {
			if v, _ := field(other, name); v != want {
				t.Errorf("a task bob requests and carol executes, of a kind, keeps %s %q, want %q", name, v, want)
			}
		}
		for _, who := range []string{"alice", "bob", "carol"} {
			if raw, err := s.GetOwned(ctx, s.Keys.Task(f.part, other), who, false, true); err != nil || string(raw) != `{"rev":1}` {
				t.Errorf("%s reads the task as %s (%v)", who, raw, err)
			}
		}
		if raw, err := s.GetOwned(ctx, s.Keys.Task(f.part, own), "bob", false, true); err == nil {
			t.Errorf("bob, no party to alice's task, reads it: %s", raw)
		}
	})
}

func TestEventsShareIDsAcrossLogs(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		a, _ := f.createTask(t, "alice", idem.Key{})
		b, _ := f.createTask(t, "alice", idem.Key{})
		f.apply(t, a, 1, idem.Key{}, `{"type":"a2"}`)
		f.apply(t, b, 1, idem.Key{}, `{"type":"b2"}`, `{"type":"b3"}`)
		f.apply(t, a, 2, idem.Key{}, `{"type":"a3"}`)

		sessionLog, err := s.ReadLog(ctx, s.Keys.SessionEvents(f.part, f.session), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(sessionLog) != 7 { // session.created + 2 creates + 4 changes
			t.Fatalf("session log has %d events, want 7", len(sessionLog))
		}
		inSession := map[string]string{}
		for i, e := range sessionLog {
			if i > 0 && !idLess(sessionLog[i-1].ID, e.ID) {
				t.Fatalf("session log ids not increasing: %s then %s", sessionLog[i-1].ID, e.ID)
			}
			if !strings.HasPrefix(string(e.JSON), `{"id":"`+e.ID+`"`) {
				t.Fatalf("event json does not carry its id: %s", e.JSON)
			}
			inSession[e.ID] = string(e.JSON)
		}
		for _, task := range []string{a, b} {
			log, err := s.ReadLog(ctx, f.taskLog(task), "", 100)
			if err != nil || len(log) != 3 {
				t.Fatalf("task log: %d events, %v", len(log), err)
			}
			for _, e := range log {
				if inSession[e.ID] != string(e.JSON) {
					t.Fatalf("task event %s is not in the session log under the same id", e.ID)
				}
			}
			// Reading after a cursor returns exactly what follows it.
			rest, err := s.ReadLog(ctx, f.taskLog(task), log[0].ID, 100)
			if err != nil || len(rest) != 2 || rest[0].ID != log[1].ID {
				t.Fatalf("read after %s: %+v %v", log[0].ID, rest, err)
			}
		}
	})
}

// A write takes the next id from Redis (XADD *), with no read of the
// log's last: when that last is ahead of the writer's clock (a replica whose
// clock is ahead wrote it), the write's ids still follow it, and each event
// carries the same id in the task's log as in the session's.
func TestEventIDsFollowALogAheadOfTheClock(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		id, _ := f.createTask(t, "alice", idem.Key{})
		ahead := fmt.Sprintf("%d-5", time.Now().Add(time.Hour).UnixMilli())
		if err := s.RDB.XAdd(ctx, &redis.XAddArgs{
			Stream: s.Keys.SessionLog(f.part, f.session), ID: ahead, Values: []string{"e", `{"type":"ahead"}`},
		}).Err(); err != nil {
			t.Fatal(err)
		}
		r := f.apply(t, id, 1, idem.Key{}, `{"type":"a"}`, `{"type":"b"}`)
		if r.Outcome != store.OK || len(r.EventIDs) != 2 {
			t.Fatalf("apply: %+v", r)
		}
		if !idLess(ahead, r.EventIDs[0]) || !idLess(r.EventIDs[0], r.EventIDs[1]) {
			t.Fatalf("ids %v do not follow the log's last, %s", r.EventIDs, ahead)
		}
		sessionLog, err := s.ReadLog(ctx, s.Keys.SessionEvents(f.part, f.session), ahead, 100)
		if err != nil || len(sessionLog) != 2 || sessionLog[0].ID != r.EventIDs[0] || sessionLog[1].ID != r.EventIDs[1] {
			t.Fatalf("session log after %s: %+v %v; want %v", ahead, sessionLog, err, r.EventIDs)
		}
		taskLog, err := s.ReadLog(ctx, f.taskLog(id), "", 100)
		if err != nil || len(taskLog) != 3 || taskLog[1].ID != r.EventIDs[0] || taskLog[2].ID != r.EventIDs[1] {
			t.Fatalf("task log: %+v %v; want the created event, then %v", taskLog, err, r.EventIDs)
		}
	})
}

// A task's events are stored once, in its session's log: the task's log is
// an index of their ids (no stream of its own), which reads join with the
// session log in id order, seq digits and all (ids 10 apart in one
// millisecond sort as numbers, not as text). The ids are kept in the task's
// hash, with no key of their own, until there are more than 64: then in a
// sorted set. Either way a read pages forward and back through them alike.
func TestTaskLogStoresNoEventTwice(t *testing.T) {
	for _, n := range []int{12, 80} {
		t.Run(fmt.Sprintf("%d events", n+1), func(t *testing.T) {
			eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
				ctx := context.Background()
				id, _ := f.createTask(t, "alice", idem.Key{})
				events := make([]string, n) // one script: ids of one millisecond, seq 0 up
				for i := range events {
					events[i] = fmt.Sprintf(`{"type":"e%d"}`, i)
				}
				f.apply(t, id, 1, idem.Key{}, events...)
				typ, err := s.RDB.Type(ctx, s.Keys.TaskLog(f.part, id)).Result()
				_, inRecord := storetest.RecordField(t, s, s.Keys.Task(f.part, id), store.TaskFieldLog)
				switch {
				case err != nil:
					t.Fatal(err)
				case n < 64 && (typ != "none" || !inRecord):
					t.Fatalf("a log of %d events: a key of type %q, kept in the hash: %v; want the hash alone", n+1, typ, inRecord)
				case n >= 64 && (typ != "zset" || inRecord):
					t.Fatalf("a log of %d events: a key of type %q, kept in the hash: %v; want a sorted set alone", n+1, typ, inRecord)
				}
				if n >= 64 {
					at, err := s.RDB.PExpireTime(ctx, s.Keys.TaskLog(f.part, id)).Result()
					if err != nil || at <= 0 {
						t.Fatalf("the moved log expires at %v (%v), want the task's end", at, err)
					}
				}
				log, err := s.ReadLog(ctx, f.taskLog(id), "", 100)
				if err != nil || len(log) != n+1 {
					t.Fatalf("task log: %d events, %v; want %d", len(log), err, n+1)
				}
				for i, e := range log[1:] {
					if want := fmt.Sprintf(`"type":"e%d"`, i); !strings.Contains(string(e.JSON), want) {
						t.Fatalf("event %d is %s, want %s", i+1, e.JSON, want)
					}
					if !idLess(log[i].ID, e.ID) {
						t.Fatalf("ids out of order: %s then %s", log[i].ID, e.ID)
					}
				}
				// Pages after a cursor go on where they stopped.
				var paged []string
				for after := ""; ; {
					page, err := s.ReadLog(ctx, f.taskLog(id), after, 5)
					if err != nil {
						t.Fatal(err)
					}
					if len(page) == 0 {
						break
					}
					for _, e := range page {
						paged = append(paged, e.ID)
					}
					after = page[len(page)-1].ID
				}
				if len(paged) != n+1 || paged[n] != log[n].ID {
					t.Fatalf("paged %d ids ending %v, want the %d of the log", len(paged), paged, n+1)
				}
				// Looking back from the newest event: the last, the first, none.
				for kind, want := range map[string]bool{fmt.Sprintf("e%d", n-1): true, "e0": true, "none": false} {
					found, _, err := s.TaskKindsAfter(ctx, f.part, id, f.session, 1, waits.Kinds{kind})
					if err != nil || found != want {
						t.Fatalf("kind %s after revision 1: found %v, %v; want %v", kind, found, err, want)
					}
				}
			})
		})
	}
}

// When retention has trimmed a task's first events from the session log, a
// read of the task's log passes over their ids and answers the rest, a full
// page of them, in order.
func TestTaskLogPassesOverTrimmedEvents(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		id, _ := f.createTask(t, "alice", idem.Key{})
		events := make([]string, 8)
		for i := range events {
			events[i] = fmt.Sprintf(`{"type":"e%d"}`, i)
		}
		f.apply(t, id, 1, idem.Key{}, events...)
		all, err := s.ReadLog(ctx, f.taskLog(id), "", 100)
		if err != nil || len(all) != 9 {
			t.Fatalf("task log: %d events, %v", len(all), err)
		}
		// Trim everything up to the task's fourth event (e2) from the session log.
		if err := s.RDB.XTrimMinID(ctx, s.Keys.SessionLog(f.part, f.session), all[4].ID).Err(); err != nil {
			t.Fatal(err)
		}
		page, err := s.ReadLog(ctx, f.taskLog(id), "", 3)
		if err != nil || len(page) != 3 || page[0].ID != all[4].ID || page[2].ID != all[6].ID {
			t.Fatalf("first page after the trim: %+v %v; want the 3 events from %s", page, err, all[4].ID)
		}
		r, err := s.ReadLog(ctx, f.taskLog(id), page[2].ID, 3)
		if err != nil || len(r) != 2 || r[1].ID != all[8].ID {
			t.Fatalf("next page: %+v %v; want the last 2 events", r, err)
		}
	})
}

// A task whose log was written as a sorted set of ids (before the ids were
// kept in the task's hash) keeps it: later events go into it, and reads,
// forward and back, find them all in order.
func TestTaskLogWrittenAsAnIndexStillReads(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		id, created := f.createLoggedTask(t)
		rec, key := s.Keys.Task(f.part, id), s.Keys.TaskLog(f.part, id)
		ttl, _ := s.RDB.PTTL(ctx, rec).Result()
		var ms, seq int64
		fmt.Sscanf(created[0].ID, "%d-%d", &ms, &seq)
		storetest.RecordAsHash(t, s, rec)
		s.RDB.HDel(ctx, rec, store.TaskFieldLog)
		s.RDB.ZAdd(ctx, key, redis.Z{Member: fmt.Sprintf("%016d-%010d", ms, seq)})
		s.RDB.PExpire(ctx, key, ttl)

		f.apply(t, id, 1, idem.Key{}, `{"type":"later"}`, `{"type":"last"}`)
		if n, _ := s.RDB.ZCard(ctx, key).Result(); n != 3 {
			t.Fatalf("the old index holds %d ids, want 3", n)
		}
		if in, _ := s.RDB.HExists(ctx, rec, store.TaskFieldLog).Result(); in {
			t.Fatal("a task with an index of before got its log in its hash too")
		}
		log, err := s.ReadLog(ctx, f.taskLog(id), "", 10)
		if err != nil || len(log) != 3 || log[0].ID != created[0].ID || !strings.Contains(string(log[2].JSON), `"last"`) {
			t.Fatalf("old-layout log: %+v %v", log, err)
		}
		if found, _, err := s.TaskKindsAfter(ctx, f.part, id, f.session, 1, waits.Kinds{"later"}); err != nil || !found {
			t.Fatalf("looking back through the old index: found %v, %v", found, err)
		}
	})
}

// A task whose log was written as a stream of its own (before the index)
// keeps it: later events are appended to that stream and reads find them
// all, in order.
func TestTaskLogWrittenAsAStreamStillReads(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		id, created := f.createLoggedTask(t)
		key := s.Keys.TaskLog(f.part, id)
		ttl, _ := s.RDB.PTTL(ctx, s.Keys.Task(f.part, id)).Result()
		stored, _ := s.RDB.XRange(ctx, s.Keys.SessionLog(f.part, f.session), created[0].ID, created[0].ID).Result()
		if len(stored) != 1 {
			t.Fatalf("the created event is not in the session log: %+v", stored)
		}
		storetest.RecordAsHash(t, s, s.Keys.Task(f.part, id))
		s.RDB.HDel(ctx, s.Keys.Task(f.part, id), store.TaskFieldLog)
		s.RDB.Del(ctx, key)
		s.RDB.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: created[0].ID, Values: stored[0].Values})
		s.RDB.PExpire(ctx, key, ttl)

		f.apply(t, id, 1, idem.Key{}, `{"type":"later"}`)
		if typ, _ := s.RDB.Type(ctx, key).Result(); typ != "stream" {
			t.Fatalf("the old log became a %q", typ)
		}
		log, err := s.ReadLog(ctx, f.taskLog(id), "", 10)
		if err != nil || len(log) != 2 || log[0].ID != created[0].ID || !strings.Contains(string(log[1].JSON), `"later"`) {
			t.Fatalf("old-layout log: %+v %v", log, err)
		}
	})
}

// idLess reports whether stream id a comes before b.
func idLess(a, b string) bool {
	var am, as, bm, bs uint64
	fmt.Sscanf(a, "%d-%d", &am, &as)
	fmt.Sscanf(b, "%d-%d", &bm, &bs)
	return am < bm || (am == bm && as < bs)
}

func TestIdempotentWrites(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		key := idem.Key{Scope: "alice\nPOST /v1/tasks\nk1", BodyHash: "h1"}
		id, first := f.createTask(t, "alice", key)
		if first.Outcome != store.OK {
			t.Fatalf("first: %+v", first)
		}
		_, again := f.createTask(t, "alice", key)
		if again.Outcome != store.Replayed || string(again.ReplayBody) != `{"rev":1}` {
			t.Fatalf("replay: %+v", again)
		}
		_, other := f.createTask(t, "alice", idem.Key{Scope: key.Scope, BodyHash: "h2"})
		if other.Outcome != store.IdemConflict {
			t.Fatalf("different body: %+v", other)
		}
		// A replayed command writes nothing, even computed from a stale revision.
		ckey := idem.Key{Scope: "alice\nPOST /x\nk2", BodyHash: "c"}
		if r := f.apply(t, id, 1, ckey, `{"type":"x"}`); r.Outcome != store.OK {
			t.Fatalf("apply: %+v", r)
		}
		if r := f.apply(t, id, 1, ckey, `{"type":"x"}`); r.Outcome != store.Replayed || string(r.ReplayBody) != `{"rev":2}` {
			t.Fatalf("apply replay: %+v", r)
		}
		log, _ := s.ReadLog(context.Background(), f.taskLog(id), "", 100)
		if len(log) != 2 {
			t.Fatalf("task log has %d events after a replay, want 2", len(log))
		}
		if r, ok, err := s.Replay(context.Background(), f.part, ckey); err != nil || !ok || r.Outcome != store.Replayed {
			t.Fatalf("Replay lookup: %+v %v %v", r, ok, err)
		}
	})
}

func TestCreateTaskChecksTheSession(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		if _, r := f.createTask(t, "mallory", idem.Key{}); r.Outcome != store.SessionMissing {
			t.Fatalf("another principal's session: %+v", r)
		}
		id := ids.New(ids.TaskPrefix, f.part)
		res, err := s.CreateTask(context.Background(), store.TaskCreate{
			LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
			NewRecord: store.NewRecord{ID: id, JSON: []byte(`{}`), Event: []byte(`{}`), ExpiresAt: f.now.Add(time.Hour)},
			SessionID: f.session, Principal: "root", Admin: true,
		})
		if err != nil || res.Outcome != store.OK {
			t.Fatalf("admin create: %+v %v", res, err)
		}
		g := f
		g.session = ids.New(ids.SessionPrefix, f.part)
		if _, r := g.createTask(t, "alice", idem.Key{}); r.Outcome != store.SessionMissing {
			t.Fatalf("missing session: %+v", r)
		}
		if _, err := s.GetJSON(context.Background(), s.Keys.Task(f.part, ids.New(ids.TaskPrefix, f.part))); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing task read: %v", err)
		}
	})
}

func TestTasksExpire(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		id := ids.New(ids.TaskPrefix, f.part)
		now := time.Now()
		res, err := s.CreateTask(context.Background(), store.TaskCreate{
			LogWrite:  store.LogWrite{Partition: f.part, Now: now, Retention: time.Hour},
			NewRecord: store.NewRecord{ID: id, JSON: []byte(`{}`), Event: []byte(`{}`), ExpiresAt: now.Add(300 * time.Millisecond)},
			SessionID: f.session, Principal: "alice",
		})
		if err != nil || res.Outcome != store.OK {
			t.Fatal(res, err)
		}
		keys := []string{s.Keys.Task(f.part, id), s.Keys.TaskLog(f.part, id)}
		storetest.WaitFor(t, "the task to expire", func() bool {
			n, err := s.RDB.Exists(context.Background(), keys...).Result()
			return err == nil && n == 0
		})
		if _, err := s.GetJSON(context.Background(), keys[0]); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("expired task still readable: %v", err)
		}
	})
}

func TestListIndexedPages(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		var ids []string
		for i := 0; i < 7; i++ {
			id, _ := f.createTask(t, "alice", idem.Key{})
			ids = append(ids, id)
		}
		index := s.Keys.SessionTaskIndexes(f.part, f.session)
		record := func(id string) string { return s.Keys.Task(f.part, id) }
		seen := map[string]bool{}
		var got []string
		var pos *paging.Position
		pages := 0
		for {
			page, err := s.ListIndexed(context.Background(), index, record, pos, 3, store.ListFilter{})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, it := range page.Items {
				got = append(got, string(it))
			}
			if len(page.Items) > 3 {
				t.Fatalf("page of %d items, limit 3", len(page.Items))
			}
			if page.Next == "" {
				break
			}
			if pos, err = paging.After(page.Next); err != nil {
				t.Fatal(err)
			}
			if seen[pos.ID] {
				t.Fatalf("cursor repeats %s", pos.ID)
			}
			seen[pos.ID] = true
			if pages > 10 {
				t.Fatal("paging does not end")
			}
		}
		// 7 items, 3 a page: the last cursor is at the 6th item.
		if pages != 3 || len(got) != len(ids) {
			t.Fatalf("%d pages with %d items, want 3 pages with %d", pages, len(got), len(ids))
		}
	})
}

// A session's tasks are the union of its indexes by status: a task listed
// once, whatever status it is in, and once too when it is also in the
// session's index of all tasks that tasks created before went into.
func TestSessionTasksListOnceAcrossTheirIndexes(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		var created []string
		for range 7 {
			id, _ := f.createTask(t, "alice", idem.Key{})
			created = append(created, id)
		}
		for _, id := range created[:3] {
			f.complete(t, id)
		}
		// Tasks of before, in the index of all as well.
		old := s.Keys.SessionTasks(f.part, f.session)
		for _, id := range created[2:5] {
			score, err := s.RDB.ZScore(ctx, s.Keys.SessionTasksByStatus(f.part, f.session, wire.StatusWorking), id).Result()
			if err != nil {
				score, err = s.RDB.ZScore(ctx, s.Keys.SessionTasksByStatus(f.part, f.session, wire.StatusCompleted), id).Result()
			}
			if err != nil {
				t.Fatalf("task %s is in no status index: %v", id, err)
			}
			if err := s.RDB.ZAdd(ctx, old, redis.Z{Score: score, Member: id}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		record := func(id string) string { return s.Keys.Task(f.part, id) }
		for _, limit := range []int{1, 2, 3, 100} {
			var got []string
			var pos *paging.Position
			for range 20 {
				page, err := s.ListIndexed(ctx, s.Keys.SessionTaskIndexes(f.part, f.session), record, pos, limit, store.ListFilter{})
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page.Items {
					got = append(got, string(it))
				}
				if page.Next == "" {
					break
				}
				if pos, err = paging.After(page.Next); err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != len(created) {
				t.Fatalf("pages of %d: %d tasks listed, want each of %d once: %q", limit, len(got), len(created), got)
			}
		}
	})
}

// A task's record is one string, its small fields first; one an earlier
// version kept as a hash is read and written as a hash until it expires.
// Either reads alike through every reader: the record, a list filtered on
// its head (read from the string's first bytes, or whole when the head is
// longer), its log with the snapshot of each event, and its status moves.
func TestTaskRecordFormsReadAlike(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		for _, c := range []struct {
			name, requester, form string
			asHash                bool
		}{
			{"string", "alice", "string", false},
			// Longer than what a list reads of a record (512 bytes), then
			// than what a script does (4 KiB): each reads it whole.
			{"string with a long head", strings.Repeat("r", 600), "string", false},
			{"string with a longer head", strings.Repeat("r", 5000), "string", false},
			{"hash of before", "alice", "hash", true},
		} {
			t.Run(c.name, func(t *testing.T) {
				id := ids.New(ids.TaskPrefix, f.part)
				big := `{"rev":1,"input":"` + strings.Repeat("x", 4000) + `"}`
				res, err := s.CreateTask(ctx, store.TaskCreate{
					LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
					NewRecord: store.NewRecord{ID: id, JSON: []byte(big), Event: []byte(`{"type":"task.created"}`), ExpiresAt: f.now.Add(time.Hour)},
					SessionID: f.session, Principal: "alice", Requester: c.requester, Kind: "k",
				})
				if err != nil || res.Outcome != store.OK {
					t.Fatalf("create: %+v %v", res, err)
				}
				rec := s.Keys.Task(f.part, id)
				if c.asHash {
					storetest.RecordAsHash(t, s, rec)
				}
				f.apply(t, id, 1, idem.Key{}, `{"type":"progress"}`)
				res, err = s.ApplyTask(ctx, store.TaskUpdate{
					LogWrite: store.LogWrite{Partition: f.part, Now: time.Now(), Retention: time.Hour},
					ID:       id, SessionID: f.session, ExpectRevision: 2, Status: wire.StatusCompleted, Ends: true,
					JSON: []byte(`{"rev":3}`), Events: []store.TaskEvent{{JSON: []byte(`{"type":"done"}`)}},
					ExpiresAt: f.now.Add(time.Hour), Owner: "alice", OldStatus: wire.StatusWorking,
				})
				if err != nil || res.Outcome != store.OK {
					t.Fatalf("complete: %+v %v", res, err)
				}
				if typ := s.RDB.Type(ctx, rec).Val(); typ != c.form {
					t.Errorf("the record is a %s, want a %s", typ, c.form)
				}
				if raw, err := s.GetOwned(ctx, rec, c.requester, false, true); err != nil || string(raw) != `{"rev":3}` {
					t.Errorf("the requester reads %.40s (%v), want the task", raw, err)
				}
				if raw, err := s.GetOwned(ctx, rec, "mallory", false, true); err == nil {
					t.Errorf("another principal reads %.40s", raw)
				}
				completed := s.Keys.OwnerTasksByStatus(f.part, "alice", wire.StatusCompleted)
				record := func(id string) string { return s.Keys.Task(f.part, id) }
				filter := store.ListFilter{Fields: []string{"owner", "status", "kind", "requester"}, Keep: func(v []string) bool {
					return v[0] == "alice" && v[1] == wire.StatusCompleted && v[2] == "k" && (v[3] == "" || v[3] == c.requester)
				}}
				page, err := s.ListIndexed(ctx, []string{completed}, record, nil, 100, filter)
				if err != nil || !slices.ContainsFunc(page.Items, func(b []byte) bool { return string(b) == `{"rev":3}` }) {
					t.Errorf("the filtered list of completed tasks: %d items, %v; want the task", len(page.Items), err)
				}
				log, err := s.ReadLog(ctx, f.taskLog(id), "", 10)
				if err != nil || len(log) != 3 || !strings.Contains(string(log[2].JSON), `"done"`) {
					t.Fatalf("the task's log: %d events, %v", len(log), err)
				}
			})
		}
	})
}

// A task record keeps its snapshot up to the first newline, so a snapshot
// that holds one (not compact JSON) is refused before anything is written.
func TestSnapshotsWithANewlineAreRefused(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		id := ids.New(ids.TaskPrefix, f.part)
		_, err := s.CreateTask(ctx, store.TaskCreate{
			LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
			NewRecord: store.NewRecord{ID: id, JSON: []byte("{\n\"rev\":1}"), Event: []byte(`{"type":"task.created"}`), ExpiresAt: f.now.Add(time.Hour)},
			SessionID: f.session, Principal: "alice",
		})
		if err == nil {
			t.Fatal("a snapshot with a newline was taken")
		}
		if n := s.RDB.Exists(ctx, s.Keys.Task(f.part, id)).Val(); n != 0 {
			t.Fatal("the refused task was written")
		}
		id, _ = f.createTask(t, "alice", idem.Key{})
		_, err = s.ApplyTask(ctx, store.TaskUpdate{
			LogWrite: store.LogWrite{Partition: f.part, Now: time.Now(), Retention: time.Hour},
			ID:       id, SessionID: f.session, ExpectRevision: 1, Status: wire.StatusWorking,
			JSON: []byte("{\"rev\":2,\n}"), Events: []store.TaskEvent{{JSON: []byte(`{}`)}},
			ExpiresAt: f.now.Add(time.Hour), Owner: "alice", OldStatus: wire.StatusWorking,
		})
		if err == nil {
			t.Fatal("a change to a snapshot with a newline was taken")
		}
		if raw, err := s.GetJSON(ctx, s.Keys.Task(f.part, id)); err != nil || string(raw) != `{"rev":1}` {
			t.Fatalf("the task after the refused change: %s %v", raw, err)
		}
	})
}

// A task moved to another status keeps its creation time as its score in
// the new indexes, read from the old: its hash keeps no creation time of
// its own. A hash an earlier version wrote with one loses it on its next
// move, and a task in no status index (written before the indexes
// existed) moves into none.
func TestStatusMovesKeepTheCreationScore(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		ownerWorking := s.Keys.OwnerTasksByStatus(f.part, "alice", wire.StatusWorking)
		indexes := []string{s.Keys.OwnerTasksByStatus(f.part, "alice", wire.StatusCompleted),
			s.Keys.SessionTasksByStatus(f.part, f.session, wire.StatusCompleted)}
		fresh, _ := f.createTask(t, "alice", idem.Key{})
		older, _ := f.createTask(t, "alice", idem.Key{})
		unindexed, _ := f.createTask(t, "alice", idem.Key{})
		// Scores as the tasks were created at other times than now.
		for i, id := range []string{fresh, older} {
			score := float64(f.now.Add(-time.Duration(i+1) * time.Minute).UnixMilli())
			for _, ix := range []string{ownerWorking, s.Keys.SessionTasksByStatus(f.part, f.session, wire.StatusWorking)} {
				if err := s.RDB.ZAdd(ctx, ix, redis.Z{Score: score, Member: id}).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		rec := func(id string) string { return s.Keys.Task(f.part, id) }
		storetest.RecordAsHash(t, s, rec(older))
		if err := s.RDB.HSet(ctx, rec(older), "created", "1").Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.RDB.ZRem(ctx, ownerWorking, unindexed).Err(); err != nil {
			t.Fatal(err)
		}
		if v, n := storetest.RecordField(t, s, rec(fresh), "created"); n {
			t.Fatalf("a new task's record keeps a creation time (%s)", v)
		}
		want := map[string]float64{}
		for _, id := range []string{fresh, older} {
			score, err := s.RDB.ZScore(ctx, ownerWorking, id).Result()
			if err != nil {
				t.Fatal(err)
			}
			want[id] = score
			f.complete(t, id)
		}
		f.complete(t, unindexed)
		for _, ix := range indexes {
			for id, score := range want {
				if got, err := s.RDB.ZScore(ctx, ix, id).Result(); err != nil || got != score {
					t.Errorf("%s scores %s %v (%v), want its creation time %v", ix, id, got, err, score)
				}
			}
			if err := s.RDB.ZScore(ctx, ix, unindexed).Err(); !errors.Is(err, redis.Nil) {
				t.Errorf("%s holds the task of no index (%v)", ix, err)
			}
		}
		if n, err := s.RDB.HExists(ctx, rec(older), "created").Result(); err != nil || n {
			t.Errorf("the earlier version's creation time is still kept after a move (%v %v)", n, err)
		}
	})
}

// Entries created in one millisecond share their score: paging through
// more of them than one read of the index holds returns each once, and the
// list does not end before they do.
func TestListIndexedPagesThroughOneMillisecond(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		index := s.Keys.SessionTasks(f.part, f.session)
		record := func(id string) string { return s.Keys.Task(f.part, id) }
		const n = 450
		pipe := s.RDB.Pipeline()
		for i := range n {
			id := fmt.Sprintf("task_same_ms_%04d", i)
			pipe.ZAdd(ctx, index, redis.Z{Score: 1_700_000_000_000, Member: id})
			pipe.HSet(ctx, record(id), "json", `"`+id+`"`)
			pipe.Expire(ctx, record(id), time.Hour)
		}
		pipe.Expire(ctx, index, time.Hour)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		var pos *paging.Position
		for pages := 0; ; pages++ {
			if pages > n/100+2 {
				t.Fatalf("paging does not end after %d pages", pages)
			}
			page, err := s.ListIndexed(ctx, []string{index}, record, pos, 100, store.ListFilter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				if seen[string(it)] {
					t.Fatalf("%s listed twice", it)
				}
				seen[string(it)] = true
			}
			if page.Next == "" {
				break
			}
			if pos, err = paging.After(page.Next); err != nil {
				t.Fatal(err)
			}
		}
		if len(seen) != n {
			t.Fatalf("paged through %d of %d entries of one millisecond", len(seen), n)
		}
	})
}

// A page of large records stops at a mebibyte of them with a cursor to go
// on, and paging on returns every record once, in order.
func TestListIndexedBoundsPageBytes(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		big := `{"pad":"` + strings.Repeat("x", 300<<10) + `"}`
		var want []string
		for range 7 {
			id := ids.New(ids.TaskPrefix, f.part)
			res, err := s.CreateTask(context.Background(), store.TaskCreate{
				LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
				NewRecord: store.NewRecord{ID: id, JSON: []byte(big), Event: []byte(`{"type":"task.created"}`), ExpiresAt: f.now.Add(time.Hour)},
				SessionID: f.session, Principal: "alice",
			})
			if err != nil || res.Outcome != store.OK {
				t.Fatal(res, err)
			}
			want = append(want, id)
		}
		index := s.Keys.SessionTaskIndexes(f.part, f.session)
		record := func(id string) string { return s.Keys.Task(f.part, id) }
		var pos *paging.Position
		var sizes []int
		seen := 0
		for range 10 {
			page, err := s.ListIndexed(context.Background(), index, record, pos, 100, store.ListFilter{})
			if err != nil {
				t.Fatal(err)
			}
			bytes := 0
			for _, it := range page.Items {
				if string(it) != big {
					t.Fatalf("record %d is not the one stored", seen)
				}
				bytes += len(it)
				seen++
			}
			sizes = append(sizes, len(page.Items))
			if bytes > 1<<20 {
				t.Fatalf("a page of %d bytes, want at most 1 MiB", bytes)
			}
			if page.Next == "" {
				break
			}
			if pos, err = paging.After(page.Next); err != nil {
				t.Fatal(err)
			}
		}
		// 300 KiB records: three to a page.
		if seen != len(want) || len(sizes) != 3 || sizes[0] != 3 {
			t.Fatalf("pages of %v records (%d in all), want 3, 3, 1", sizes, seen)
		}
	})
}

// Another replica's fan-in wakes its waiters with a hint of what changed:
// the task, its revision and the types of its events, and no record.
func TestFanInWakesOtherReplicas(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		writer := open(t, cfg)
		reader := writer // the embedded store is one process's own
		if cfg.URL != "" {
			reader = open(t, cfg) // another replica: its own client and readers
		}
		reg, _ := startFanIn(t, reader)

		f := newFixture(t, writer, "alice")
		id, _ := f.createTask(t, "alice", idem.Key{})
		w := reg.Wait(waits.WaitKey(waits.WakeTask, id), waits.WaitKey(waits.WakeSession, f.session))
		defer w.Stop()
		// The reader may start after the first writes: write until a wake for
		// a change we made after registering arrives (the create's own wake
		// may still be in flight, and is skipped).
		deadline := time.Now().Add(10 * time.Second)
		for rev := int64(1); time.Now().Before(deadline); rev++ {
			f.apply(t, id, rev, idem.Key{}, `{"type":"x"}`)
			for {
				wk, why := w.Next(context.Background(), time.Now().Add(500*time.Millisecond))
				if why != waits.Woken {
					break
				}
				if wk.Revision < 2 {
					continue
				}
				// A hint names the change, never carries the record: a
				// replica with a waiter on it reads what it needs.
				if wk.ID != id || wk.SessionID != f.session || wk.Snapshot != nil || !slices.Contains(wk.Types, "x") {
					t.Fatalf("wake: %+v", wk)
				}
				return
			}
		}
		t.Fatal("no wake-up from another replica's writes")
	})
}

// A write whose caller wakes this replica's waiters itself (WakesHere) is
// passed over by this replica's own fan-in: its waiters get the record from
// the writer, not a hint that would cost them a read. The next write,
// whose caller does not, is the first wake-up the fan-in hands on.
func TestFanInPassesOverWakesItsWriterGives(t *testing.T) {
	eachBackendWithFanIn(t, func(t *testing.T, s *store.Store, reg *waits.Waiters, _ *metrics.Metrics, f fixture) {
		ctx := context.Background()
		id, _ := f.createTask(t, "alice", idem.Key{})
		w := reg.Wait(waits.WaitKey(waits.WakeTask, id))
		defer w.Stop()
		// Writes until the fan-in is known to read: a wake-up arrives.
		rev := int64(1)
		storetest.WaitFor(t, "the fan-in to read", func() bool {
			f.apply(t, id, rev, idem.Key{}, `{"type":"x"}`)
			rev++
			wk, why := w.Next(ctx, time.Now().Add(200*time.Millisecond))
			return why == waits.Woken && wk.Revision >= 2
		})
		res, err := s.ApplyTask(ctx, store.TaskUpdate{
			LogWrite: store.LogWrite{Partition: f.part, Now: time.Now(), Retention: time.Hour},
			ID:       id, SessionID: f.session, ExpectRevision: rev, OldStatus: "working", Status: "working",
			JSON: fmt.Appendf(nil, `{"rev":%d}`, rev+1), Events: []store.TaskEvent{{JSON: []byte(`{"type":"y"}`)}},
			WakesHere: true,
		})
		if err != nil || res.Outcome != store.OK {
			t.Fatalf("the write its caller wakes for: %+v %v", res, err)
		}
		f.apply(t, id, rev+1, idem.Key{}, `{"type":"z"}`)
		for {
			wk, why := w.Next(ctx, time.Now().Add(10*time.Second))
			if why != waits.Woken {
				t.Fatalf("no wake-up after the writes: %v", why)
			}
			if wk.Revision <= rev { // what the first writes woke
				continue
			}
			if wk.Revision != rev+2 {
				t.Fatalf("the first wake-up after the write its caller wakes for is revision %d, want %d", wk.Revision, rev+2)
			}
			return
		}
	})
}

// The keys no script empties are extended past a task's end once an hour
// at most: a create within the time the session records leaves them as
// they are (a key shortened by hand shows it), while a key that can empty
// and come back without an expiry is looked at on every create. A task
// that outlives the recorded time extends them again.
func TestCreatesExtendTheLastingKeysOnceAnHour(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		f := newFixture(t, s, "alice")
		create := func(expires time.Time) {
			t.Helper()
			res, err := s.CreateTask(ctx, store.TaskCreate{
				LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
				NewRecord: store.NewRecord{ID: ids.New(ids.TaskPrefix, f.part), JSON: []byte(`{}`), Event: []byte(`{}`), ExpiresAt: expires},
				SessionID: f.session, Principal: "alice",
			})
			if err != nil || res.Outcome != store.OK {
				t.Fatal(res, err)
			}
		}
		expiresAt := func(key string) time.Time {
			t.Helper()
			at, err := s.RDB.PExpireTime(ctx, key).Result()
			if err != nil || at <= 0 {
				t.Fatalf("%s: expiry %v, %v", key, at, err)
			}
			return time.UnixMilli(at.Milliseconds())
		}
		slog, live := s.Keys.SessionLog(f.part, f.session), s.Keys.SessionLive(f.part, f.session)
		later := f.now.Add(48 * time.Hour)
		create(later)
		if at := expiresAt(slog); at.Before(later.Add(time.Hour - time.Second)) {
			t.Fatalf("the session log expires at %v, want an hour past the task's %v", at, later)
		}
		shortened := f.now.Add(10 * time.Minute)
		if err := s.RDB.PExpireAt(ctx, slog, shortened).Err(); err != nil {
			t.Fatal(err)
		}
		create(later.Add(30 * time.Minute))
		if at := expiresAt(slog); at.After(shortened.Add(time.Second)) {
			t.Errorf("a create within the recorded hour extended the session log to %v", at)
		}
		if at := expiresAt(live); at.Before(later.Add(30*time.Minute - time.Second)) {
			t.Errorf("the live tasks expire at %v, before the second task", at)
		}
		create(later.Add(2 * time.Hour))
		if at := expiresAt(slog); at.Before(later.Add(3*time.Hour - time.Second)) {
			t.Errorf("a task past the recorded hour left the session log at %v", at)
		}
	})
}

// An index that scripts take tasks out of keeps its own expiry in a mark,
// scored below every task: emptied of tasks, it is not deleted (to come back
// with no expiry); a write whose task ends within the span the mark names
// looks at no expiry; a task that ends past it moves the mark and the
// expiry on. Lists and counts never see the mark.
func TestIndexesKeepTheirExpiryInAMark(t *testing.T) {
	eachFixture(t, func(t *testing.T, s *store.Store, f fixture) {
		ctx := context.Background()
		working := s.Keys.SessionTasksByStatus(f.part, f.session, wire.StatusWorking)
		completed := s.Keys.SessionTasksByStatus(f.part, f.session, wire.StatusCompleted)
		create := func(expires time.Time) string {
			t.Helper()
			id := ids.New(ids.TaskPrefix, f.part)
			res, err := s.CreateTask(ctx, store.TaskCreate{
				LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
				NewRecord: store.NewRecord{ID: id, JSON: []byte(`{"rev":1}`), Event: []byte(`{}`), ExpiresAt: expires},
				SessionID: f.session, Principal: "alice",
			})
			if err != nil || res.Outcome != store.OK {
				t.Fatal(res, err)
			}
			return id
		}
		complete := func(id string, expires time.Time) {
			t.Helper()
			res, err := s.ApplyTask(ctx, store.TaskUpdate{
				LogWrite: store.LogWrite{Partition: f.part, Now: time.Now(), Retention: time.Hour},
				ID:       id, SessionID: f.session, ExpectRevision: 1, Status: wire.StatusCompleted, Ends: true,
				JSON: []byte(`{"rev":2}`), Events: []store.TaskEvent{{JSON: []byte(`{}`)}},
				ExpiresAt: expires, Owner: "alice", OldStatus: wire.StatusWorking,
			})
			if err != nil || res.Outcome != store.OK {
				t.Fatal(res, err)
			}
		}
		// The mark's time and the key's expiry, in ms.
		mark := func(key string) (int64, int64) {
			t.Helper()
			score, err := s.RDB.ZScore(ctx, key, "kept").Result()
			if err != nil {
				t.Fatalf("%s holds no mark: %v", key, err)
			}
			at, err := s.RDB.PExpireTime(ctx, key).Result()
			if err != nil || at <= 0 {
				t.Fatalf("%s: expiry %v, %v", key, at, err)
			}
			return int64(-score), at.Milliseconds()
		}
		within := func(got, want int64) bool { return got >= want-1000 && got <= want+1000 }

		later := f.now.Add(48 * time.Hour)
		a := create(later)
		until, at := mark(working)
		if until < later.Add(time.Hour).UnixMilli() || until > later.Add(2*time.Hour).UnixMilli() || !within(at, until) {
			t.Fatalf("working index kept until %d, expiring at %d; want one time, one to two hours past %d",
				until, at, later.UnixMilli())
		}
		complete(a, later)
		if n, err := s.RDB.ZCard(ctx, working).Result(); err != nil || n != 1 {
			t.Fatalf("the emptied working index holds %d members (%v), want the mark alone", n, err)
		}
		if _, cat := mark(completed); cat < later.UnixMilli() {
			t.Fatalf("the completed index expires at %d, before its task", cat)
		}
		// A task that ends within the mark's span looks at no expiry: one
		// shortened by hand stays so.
		shortened := f.now.Add(10 * time.Minute)
		if err := s.RDB.PExpireAt(ctx, working, shortened).Err(); err != nil {
			t.Fatal(err)
		}
		create(time.UnixMilli(until).Add(-time.Hour - time.Minute))
		if _, at := mark(working); !within(at, shortened.UnixMilli()) {
			t.Fatalf("a task within the mark's span moved the expiry to %d", at)
		}
		// One that ends past the span moves the mark and the expiry.
		beyond := time.UnixMilli(until).Add(time.Minute)
		create(beyond)
		if until2, at := mark(working); until2 < beyond.Add(time.Hour).UnixMilli() || !within(at, until2) {
			t.Fatalf("after a task ending at %d: kept until %d, expiring at %d", beyond.UnixMilli(), until2, at)
		}
		// Lists read tasks alone.
		page, err := s.ListIndexed(ctx, []string{working}, func(id string) string { return s.Keys.Task(f.part, id) }, nil, 100, store.ListFilter{})
		if err != nil || len(page.Items) != 2 {
			t.Fatalf("the working list: %d items, %v; want the two working tasks", len(page.Items), err)
		}
	})
}

// A task that outlives its session's own lifetime keeps the session, its log
// and its place in the owner's session index alive with it.
func TestTasksExtendTheirSession(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		f := newFixture(t, s, "alice") // the session lives an hour
		later := f.now.Add(48 * time.Hour)
		id := ids.New(ids.TaskPrefix, f.part)
		res, err := s.CreateTask(ctx, store.TaskCreate{
			LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
			NewRecord: store.NewRecord{ID: id, JSON: []byte(`{}`), Event: []byte(`{}`), ExpiresAt: later},
			SessionID: f.session, Principal: "alice",
		})
		if err != nil || res.Outcome != store.OK {
			t.Fatal(res, err)
		}
		for _, key := range []string{
			s.Keys.Session(f.part, f.session), s.Keys.SessionLog(f.part, f.session),
			s.Keys.OwnerSessions(f.part, "alice"),
		} {
			// The embedded server keeps a TTL, not a deadline, so it reads back
			// off by the time between the write and the read (milliseconds,
			// more on a loaded machine); the session alone would end 47 hours
			// earlier. They are kept up to an hour past the task, so that the
			// tasks created in that hour extend none of them.
			at, err := s.RDB.PExpireTime(ctx, key).Result()
			if err != nil || at.Milliseconds() < later.UnixMilli()-time.Second.Milliseconds() || at.Milliseconds() > later.Add(time.Hour).UnixMilli()+time.Second.Milliseconds() {
				t.Errorf("%s expires at %v (%v), want the task's %d, or up to an hour after", key, at.Milliseconds(), err, later.UnixMilli())
			}
		}
	})
}
