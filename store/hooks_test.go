package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/waits"
)

// The hook scripts' conformance suite: creation, ingest (state, rate limit,
// dedupe, session event), consumer-group reads with redelivery and dead
// letters, acks, close and the non-consuming log, on every backend.

type hookFixture struct {
	fixture
	task  string
	hook  string
	token string
	// oldHook makes createHook write a hook as an earlier version did: with
	// no visibility ceiling, so its reads go by the visibility they ask.
	oldHook bool
}

func newHookFixture(t *testing.T, s *store.Store, owner string, withTask bool) hookFixture {
	t.Helper()
	f := hookFixture{fixture: newFixture(t, s, owner)}
	if withTask {
		var res store.Result
		f.task, res = f.createTask(t, owner, idem.Key{})
		if res.Outcome != store.OK {
			t.Fatalf("create task: %+v", res)
		}
	}
	res, id := f.createHook(t, owner, f.now.Add(time.Hour), idem.Key{})
	if res.Outcome != store.OK {
		t.Fatalf("create hook: %+v", res)
	}
	f.hook = id
	return f
}

// eachHook runs fn on every backend with its store and a fresh hook of
// alice's, bound to a task when withTask.
func eachHook(t *testing.T, withTask bool, fn func(t *testing.T, s *store.Store, f hookFixture)) {
	t.Helper()
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		fn(t, s, newHookFixture(t, s, "alice", withTask))
	})
}

func (f *hookFixture) createHook(t *testing.T, principal string, closes time.Time, idem idem.Key) (store.Result, string) {
	t.Helper()
	id := ids.New(ids.HookPrefix, f.part)
	f.token = "tok-" + id
	ceiling := 12 * time.Hour
	if f.oldHook {
		ceiling = 0
	}
	res, err := f.s.CreateHook(context.Background(), store.HookCreate{
		Partition: f.part, ID: id, TaskID: f.task, SessionID: f.session, Principal: principal,
		TokenHash: "hash-" + id, JSON: []byte(`{"hookId":"` + id + `"}`), Config: []byte(`{"h":"` + id + `"}`),
		Replay: []byte(`{"replay":true}`), Now: f.now, ClosesAt: closes, ExpiresAt: closes.Add(time.Hour),
		MaxVisibility: ceiling, Idem: idem,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, id
}

type post struct {
	at       time.Time
	pid      string
	body     string
	interval time.Duration
	burst    int
	reseal   store.Reseal
}

func (f hookFixture) ingest(t *testing.T, p post) store.IngestResult {
	t.Helper()
	if p.at.IsZero() {
		p.at = time.Now()
	}
	if p.burst == 0 {
		p.burst = 1000
	}
	res, err := f.s.IngestHook(context.Background(), store.HookIngest{
		Partition: f.part, HookID: f.hook, TaskID: f.task, SessionID: f.session, ProviderEventID: p.pid,
		RateInterval: p.interval, Burst: p.burst, Method: "POST", ContentType: "application/json",
		Headers: []byte(`{"x-github-event":"push"}`), Body: []byte(p.body),
		Event: []byte(`{"type":"hook.received","sessionId":"` + f.session + `","data":{"hookId":"` + f.hook +
			`","eventId":"` + store.FillQueueID + `","seq":` + store.FillSeq + `}}`),
		Now: p.at, ReceivedAt: p.at.UTC().Format(time.RFC3339), Retention: time.Hour, Reseal: p.reseal,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

type readOpts struct {
	principal  string
	group      string
	consumer   string
	count      int
	visibility time.Duration
	max        int
	maxGroups  int
	now        time.Time // default: now
}

func (f hookFixture) read(t *testing.T, o readOpts) store.HookBatch {
	t.Helper()
	if o.principal == "" {
		o.principal = "alice"
	}
	if o.group == "" {
		o.group = "g"
	}
	if o.count == 0 {
		o.count = 10
	}
	if o.visibility == 0 {
		o.visibility = time.Hour
	}
	if o.max == 0 {
		o.max = 10
	}
	if o.maxGroups == 0 {
		o.maxGroups = 16
	}
	if o.now.IsZero() {
		o.now = time.Now()
	}
	b, err := f.s.ReadHook(context.Background(), store.HookRead{
		Partition: f.part, ID: f.hook, TaskID: f.task, SessionID: f.session, Principal: o.principal, Group: o.group,
		Consumer: o.consumer, Count: o.count, Visibility: o.visibility, MaxDeliveries: o.max, MaxGroups: o.maxGroups,
		Now: o.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readUntil reads as o says until the reads have delivered n events or more,
// and answers the last batch and every event delivered.
func (f hookFixture) readUntil(t *testing.T, what string, n int, o readOpts) (store.HookBatch, []string) {
	t.Helper()
	var b store.HookBatch
	var got []string
	storetest.WaitFor(t, what, func() bool {
		b = f.read(t, o)
		got = append(got, delivered(b)...)
		return len(got) >= n
	})
	return b, got
}

func (f hookFixture) ack(t *testing.T, principal, group string, ids ...string) store.AckResult {
	t.Helper()
	res, err := f.s.AckHook(context.Background(), store.HookAck{
		Partition: f.part, ID: f.hook, Principal: principal, Group: group, EventIDs: ids,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f hookFixture) queueLen(t *testing.T) int64 {
	t.Helper()
	n, err := f.s.RDB.XLen(context.Background(), f.s.Keys.HookQueue(f.part, f.hook)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f hookFixture) sessionLog(t *testing.T) []waits.LogEntry {
	t.Helper()
	entries, err := f.s.ReadLog(context.Background(), f.s.Keys.SessionEvents(f.part, f.session), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func delivered(b store.HookBatch) []string {
	out := make([]string, len(b.Entries))
	for i, e := range b.Entries {
		out[i] = fmt.Sprintf("%s@%d", e.ID, e.Deliveries)
	}
	return out
}

func TestHookCreate(t *testing.T) {
	eachHook(t, true, func(t *testing.T, s *store.Store, f hookFixture) {
		ctx := context.Background()

		// Every key the create wrote expires with the hook's tombstone.
		closes := f.now.Add(time.Hour)
		for _, k := range []string{
			s.Keys.Hook(f.part, f.hook), s.Keys.HookToken(f.part, "hash-"+f.hook),
			s.Keys.SessionHooks(f.part, f.session), s.Keys.TaskHooks(f.part, f.task), s.Keys.OwnerHooks(f.part, "alice"),
		} {
			at, err := s.RDB.PExpireTime(ctx, k).Result()
			if err != nil || at <= 0 {
				t.Fatalf("%s: no expiry (%v, %v)", k, at, err)
			}
			if want := closes.Add(time.Hour).UnixMilli(); at.Milliseconds() < want-1000 {
				t.Errorf("%s expires at %d, want %d", k, at.Milliseconds(), want)
			}
		}
		tok, err := s.HookByToken(ctx, f.part, "hash-"+f.hook)
		if err != nil || tok.ID != f.hook || string(tok.Config) != `{"h":"`+f.hook+`"}` || !tok.Open ||
			!tok.ClosesAt.Equal(time.UnixMilli(closes.UnixMilli())) {
			t.Fatalf("HookByToken: %+v %v", tok, err)
		}
		if _, err := s.HookByToken(ctx, f.part, "unknown"); err != store.ErrNotFound {
			t.Fatalf("unknown token: %v", err)
		}
		rec, err := s.GetHook(ctx, f.part, f.hook)
		if err != nil || rec.Owner != "alice" || string(rec.JSON) != `{"hookId":"`+f.hook+`"}` {
			t.Fatalf("GetHook: %+v %v", rec, err)
		}

		// Somebody else's task does not exist; a stranger cannot hang a
		// hook on it.
		if res, _ := f.createHook(t, "mallory", closes, idem.Key{}); res.Outcome != store.TaskMissing {
			t.Errorf("stranger: %+v", res)
		}
		// An admin can.
		res, err := s.CreateHook(ctx, store.HookCreate{
			Partition: f.part, ID: ids.New(ids.HookPrefix, f.part), SessionID: f.session, Principal: "root", Admin: true,
			TokenHash: "h-admin", JSON: []byte(`{}`), Config: []byte(`{}`), Now: f.now, ClosesAt: closes, ExpiresAt: closes,
		})
		if err != nil || res.Outcome != store.OK {
			t.Errorf("admin: %+v %v", res, err)
		}

		// Idempotent repeat: the replay body, and no second hook.
		key := idem.Key{Scope: "alice\nPOST /v1/hooks\nk1", BodyHash: "b1"}
		if res, _ := f.createHook(t, "alice", closes, key); res.Outcome != store.OK {
			t.Fatalf("first: %+v", res)
		}
		res, _ = f.createHook(t, "alice", closes, key)
		if res.Outcome != store.Replayed || string(res.ReplayBody) != `{"replay":true}` {
			t.Errorf("replay: %+v", res)
		}
		if res, _ := f.createHook(t, "alice", closes, idem.Key{Scope: key.Scope, BodyHash: "b2"}); res.Outcome != store.IdemConflict {
			t.Errorf("idem conflict: %+v", res)
		}

		// A finished task takes no new hook.
		storetest.SetRecordFields(t, s, s.Keys.Task(f.part, f.task), "status", "completed")
		if res, _ := f.createHook(t, "alice", closes, idem.Key{}); res.Outcome != store.TaskTerminal {
			t.Errorf("terminal task: %+v", res)
		}
		f.task = ids.New(ids.TaskPrefix, f.part)
		if res, _ := f.createHook(t, "alice", closes, idem.Key{}); res.Outcome != store.TaskMissing {
			t.Errorf("missing task: %+v", res)
		}
		// Nor does a cancelled session.
		f.task = ""
		if _, err := s.RDB.HSet(ctx, s.Keys.Session(f.part, f.session), "status", "cancelled").Result(); err != nil {
			t.Fatal(err)
		}
		if res, _ := f.createHook(t, "alice", closes, idem.Key{}); res.Outcome != store.SessionNotActive {
			t.Errorf("cancelled session: %+v", res)
		}
	})
}

func TestHookIngestAppendsAndTellsTheSession(t *testing.T) {
	eachHook(t, true, func(t *testing.T, s *store.Store, f hookFixture) {
		ctx := context.Background()
		before := len(f.sessionLog(t))

		var got []store.IngestResult
		for i := range 3 {
			res := f.ingest(t, post{body: fmt.Sprintf(`{"n":%d,"secret":"body-text"}`, i)})
			if res.Outcome != store.OK {
				t.Fatalf("post %d: %+v", i, res)
			}
			if i > 0 && !idLess(got[i-1].EventID, res.EventID) {
				t.Fatalf("ids not increasing: %s then %s", got[i-1].EventID, res.EventID)
			}
			got = append(got, res)
		}
		log := f.sessionLog(t)
		if len(log) != before+3 {
			t.Fatalf("session log has %d events, want %d", len(log), before+3)
		}
		for i, e := range log[before:] {
			js := string(e.JSON)
			want := fmt.Sprintf(`"eventId":"%s","seq":%d}}`, got[i].EventID, i+1)
			if !strings.Contains(js, `"type":"hook.received"`) || !strings.HasSuffix(js, want) {
				t.Errorf("session event %d = %s, want it to end with %s", i, js, want)
			}
			if strings.Contains(js, "body-text") || strings.Contains(js, "x-github-event") {
				t.Errorf("session event carries the body or headers: %s", js)
			}
		}
		// The queue and the dedupe hash expire with the hook.
		for _, k := range []string{s.Keys.HookQueue(f.part, f.hook)} {
			if at, err := s.RDB.PExpireTime(ctx, k).Result(); err != nil || at <= 0 {
				t.Errorf("%s: no expiry (%v, %v)", k, at, err)
			}
		}
		l, err := s.ReadHookLog(ctx, f.part, f.hook, "", 10, 10)
		if err != nil || l.Owner != "alice" || len(l.Entries) != 3 {
			t.Fatalf("log: %+v %v", l, err)
		}
		e := l.Entries[1]
		if e.ID != got[1].EventID || e.Seq != 2 || e.Body != `{"n":1,"secret":"body-text"}` || e.BodyIsBase64 ||
			e.Method != "POST" || e.ContentType != "application/json" || string(e.Headers) != `{"x-github-event":"push"}` {
			t.Errorf("stored entry: %+v", e)
		}
		// Paging by cursor.
		l, err = s.ReadHookLog(ctx, f.part, f.hook, got[1].EventID, 10, 10)
		if err != nil || len(l.Entries) != 1 || l.Entries[0].ID != got[2].EventID {
			t.Errorf("log after %s: %+v %v", got[1].EventID, l, err)
		}
	})
}

func TestHookIngestDedupes(t *testing.T) {
	eachHook(t, false, func(t *testing.T, s *store.Store, f hookFixture) {
		ctx := context.Background()
		first := f.ingest(t, post{pid: "delivery-1", body: "a"})
		if first.Outcome != store.OK {
			t.Fatal(first)
		}
		again := f.ingest(t, post{pid: "delivery-1", body: "a, sent again"})
		if again.Outcome != store.Duplicate || again.EventID != first.EventID {
			t.Fatalf("repeat: %+v, want duplicate of %s", again, first.EventID)
		}
		other := f.ingest(t, post{pid: "delivery-2", body: "b"})
		if other.Outcome != store.OK {
			t.Fatalf("other: %+v", other)
		}
		// The duplicate took no number.
		if l, err := s.ReadHookLog(ctx, f.part, f.hook, first.EventID, 10, 0); err != nil || len(l.Entries) != 1 ||
			l.Entries[0].ID != other.EventID || l.Entries[0].Seq != 2 {
			t.Fatalf("other, stored: %+v %v", l, err)
		}
		if n := f.queueLen(t); n != 2 {
			t.Fatalf("queue holds %d, want 2", n)
		}
		if at, err := s.RDB.PExpireTime(ctx, s.Keys.HookDedupe(f.part, f.hook)).Result(); err != nil || at <= 0 {
			t.Errorf("dedupe hash: no expiry (%v, %v)", at, err)
		}
	})
}

// hookClosing is one way a hook stops taking posts: setup closes the hook of
// a fixture (with a task when task is set) and returns a time at which it is
// closed, for reason.
type hookClosing struct {
	name    string
	reason  string
	task    bool
	ownOnly bool // the hook's own fields decide it, without its parents
	setup   func(f *hookFixture) time.Time
}

// closings are the ways a hook closes with no close of its own: it expires,
// its task ends or is gone, its session is cancelled or is gone.
func closings(t *testing.T, ctx context.Context, s *store.Store) []hookClosing {
	// now makes change to the hook's parent and closes the hook at once.
	now := func(change func(f *hookFixture)) func(f *hookFixture) time.Time {
		return func(f *hookFixture) time.Time {
			change(f)
			return time.Now()
		}
	}
	return []hookClosing{
		{"expired", wire.CloseReasonExpired, false, true, func(f *hookFixture) time.Time { return f.now.Add(time.Hour) }},
		{"task completed", wire.CloseReasonTaskTerminal, true, false, now(func(f *hookFixture) {
			storetest.SetRecordFields(t, s, s.Keys.Task(f.part, f.task), "status", "completed")
		})},
		{"task gone", wire.CloseReasonTaskTerminal, true, false, now(func(f *hookFixture) {
			s.RDB.Del(ctx, s.Keys.Task(f.part, f.task))
		})},
		{"session cancelled", wire.CloseReasonSessionCancelled, false, false, now(func(f *hookFixture) {
			s.RDB.HSet(ctx, s.Keys.Session(f.part, f.session), "status", "cancelled")
		})},
		{"session gone", wire.CloseReasonExpired, false, false, now(func(f *hookFixture) {
			s.RDB.Del(ctx, s.Keys.Session(f.part, f.session))
		})},
	}
}

func TestHookIngestRefusesClosedHooks(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		cases := append(closings(t, ctx, s), hookClosing{"closed", wire.CloseReasonClosed, false, true, func(f *hookFixture) time.Time {
			res, err := s.CloseHook(ctx, store.HookClose{Partition: f.part, ID: f.hook, Principal: "alice", ClosedJSON: []byte(`{"status":"closed"}`)})
			if err != nil || res.Outcome != store.OK || string(res.JSON) != `{"status":"closed"}` {
				t.Fatalf("close: %+v %v", res, err)
			}
			// Closing again changes nothing and answers the record as stored.
			res, err = s.CloseHook(ctx, store.HookClose{Partition: f.part, ID: f.hook, Principal: "alice", ClosedJSON: []byte(`{"again":1}`)})
			if err != nil || string(res.JSON) != `{"status":"closed"}` {
				t.Fatalf("close again: %+v %v", res, err)
			}
			return time.Now()
		}})
		for _, c := range cases {
			f := newHookFixture(t, s, "alice", c.task)
			before := len(f.sessionLog(t))
			at := c.setup(&f)
			res := f.ingest(t, post{at: at, pid: "p1", body: "late"})
			if res.Outcome != store.Closed || res.Reason != c.reason {
				t.Errorf("%s: %+v, want closed (%s)", c.name, res, c.reason)
			}
			if n := f.queueLen(t); n != 0 {
				t.Errorf("%s: %d events stored", c.name, n)
			}
			if n := len(f.sessionLog(t)); n != before {
				t.Errorf("%s: the session log grew from %d to %d", c.name, before, n)
			}
		}

		// A hook that is gone, and a stranger closing one.
		f := newHookFixture(t, s, "alice", false)
		if res, _ := s.CloseHook(ctx, store.HookClose{Partition: f.part, ID: f.hook, Principal: "mallory"}); res.Outcome != store.Missing {
			t.Errorf("stranger close: %+v", res)
		}
		s.RDB.Del(ctx, s.Keys.Hook(f.part, f.hook))
		if res := f.ingest(t, post{body: "x"}); res.Outcome != store.Missing {
			t.Errorf("gone: %+v", res)
		}
	})
}

// A read says whether the hook still takes posts, for the reason ingest
// would give, and still delivers what the closed hook holds.
func TestHookReadReportsClosedHooks(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		for _, withTask := range []bool{true, false} {
			f := newHookFixture(t, s, "alice", withTask)
			if b := f.read(t, readOpts{consumer: "a"}); b.Outcome != store.OK || b.Closed || b.Reason != "" {
				t.Errorf("open hook (task %v): %+v", withTask, b)
			}
		}
		cases := append(closings(t, ctx, s), hookClosing{"closed", wire.CloseReasonClosed, true, true, func(f *hookFixture) time.Time {
			res, err := s.CloseHook(ctx, store.HookClose{Partition: f.part, ID: f.hook, SessionID: f.session,
				Principal: "alice", ClosedJSON: []byte(`{"status":"closed"}`)})
			if err != nil || res.Outcome != store.OK {
				t.Fatalf("close: %+v %v", res, err)
			}
			// Reads waiting on the hook, on any replica, are woken.
			last, err := s.RDB.XRevRangeN(ctx, s.Keys.Wake(f.part), "+", "-", 1).Result()
			if err != nil || len(last) != 1 || last[0].Values["k"] != "h" || last[0].Values["i"] != f.hook ||
				last[0].Values["s"] != f.session {
				t.Errorf("wake after close: %+v %v", last, err)
			}
			return time.Now()
		}}, hookClosing{"task failed", wire.CloseReasonTaskTerminal, true, false, func(f *hookFixture) time.Time {
			storetest.SetRecordFields(t, s, s.Keys.Task(f.part, f.task), "status", "failed")
			return time.Now()
		}})
		for _, c := range cases {
			f := newHookFixture(t, s, "alice", c.task)
			first := f.ingest(t, post{body: "before"}).EventID
			at := c.setup(&f)
			// What the hook took while open is still delivered, with the reason.
			b := f.read(t, readOpts{consumer: "a", now: at})
			if b.Outcome != store.OK || !b.Closed || b.Reason != c.reason || len(b.Entries) != 1 || b.Entries[0].ID != first {
				t.Errorf("%s: first read %+v, want %s delivered and closed (%s)", c.name, b, first, c.reason)
			}
			if res := f.ack(t, "alice", "g", first); res.Acked != 1 {
				t.Errorf("%s: ack %+v", c.name, res)
			}
			b = f.read(t, readOpts{consumer: "a", now: at})
			if b.Outcome != store.OK || !b.Closed || b.Reason != c.reason || len(b.Entries) != 0 || b.Pending != 0 {
				t.Errorf("%s: drained read %+v, want empty and closed (%s)", c.name, b, c.reason)
			}
			// The read and ingest agree.
			if res := f.ingest(t, post{at: at, body: "late"}); res.Outcome != store.Closed || res.Reason != c.reason {
				t.Errorf("%s: ingest %+v, want closed (%s)", c.name, res, c.reason)
			}
		}
	})
}

func TestHookIngestRateLimit(t *testing.T) {
	eachHook(t, false, func(t *testing.T, s *store.Store, f hookFixture) {
		now := f.now.Add(time.Minute)
		p := post{at: now, interval: time.Second, burst: 3}
		for i := range 3 {
			p.body = fmt.Sprint(i)
			if res := f.ingest(t, p); res.Outcome != store.OK {
				t.Fatalf("post %d within the burst: %+v", i, res)
			}
		}
		res := f.ingest(t, p)
		if res.Outcome != store.RateLimited || res.RetryAfter != time.Second {
			t.Fatalf("over the burst: %+v, want rate limited for 1s", res)
		}
		// A refused post costs nothing: one interval later, one more fits.
		p.at = now.Add(time.Second)
		if res := f.ingest(t, p); res.Outcome != store.OK {
			t.Fatalf("after one interval: %+v", res)
		}
		if res := f.ingest(t, p); res.Outcome != store.RateLimited {
			t.Fatalf("second post after one interval: %+v", res)
		}
		if n := f.queueLen(t); n != 4 {
			t.Fatalf("queue holds %d, want 4", n)
		}
	})
}

func TestHookReadRedeliversAndDeadLetters(t *testing.T) {
	eachHook(t, true, func(t *testing.T, s *store.Store, f hookFixture) {
		ctx := context.Background()

		// Reading before anything arrived makes the group, on a queue that
		// expires with the hook.
		if b := f.read(t, readOpts{consumer: "a"}); b.Outcome != store.OK || len(b.Entries) != 0 || b.NextVisible != -1 {
			t.Fatalf("empty read: %+v", b)
		}
		if at, err := s.RDB.PExpireTime(ctx, s.Keys.HookQueue(f.part, f.hook)).Result(); err != nil || at <= 0 {
			t.Fatalf("queue made by the group: no expiry (%v, %v)", at, err)
		}
		e1 := f.ingest(t, post{body: "one"}).EventID
		e2 := f.ingest(t, post{body: "two"}).EventID

		// While a consumer holds them nobody else gets them; the read says
		// when they come back (here in a group of its own, as they never do).
		b := f.read(t, readOpts{group: "held", consumer: "a", visibility: time.Hour})
		if got := delivered(b); len(got) != 2 || got[0] != e1+"@1" || got[1] != e2+"@1" || b.Pending != 2 {
			t.Fatalf("first read: %v pending %d", got, b.Pending)
		}
		if b.Entries[0].Body != "one" {
			t.Errorf("entry: %+v", b.Entries[0])
		}
		b = f.read(t, readOpts{group: "held", consumer: "b", visibility: 30 * time.Millisecond})
		if len(b.Entries) != 0 || b.NextVisible <= 55*time.Minute || b.NextVisible > time.Hour {
			t.Fatalf("read while invisible: %v next %v", delivered(b), b.NextVisible)
		}

		// Consumer a takes both and never acks.
		vis := 30 * time.Millisecond
		b = f.read(t, readOpts{consumer: "a", visibility: vis})
		if got := delivered(b); len(got) != 2 || got[0] != e1+"@1" || got[1] != e2+"@1" || b.Pending != 2 {
			t.Fatalf("first read: %v pending %d", got, b.Pending)
		}
		// After it, consumer b gets them from a, delivered a second time.
		b, got := f.readUntil(t, "redelivery to b", 2, readOpts{consumer: "b", visibility: vis})
		if len(got) != 2 || got[0] != e1+"@2" || got[1] != e2+"@2" {
			t.Fatalf("b got %v, want both at delivery 2", got)
		}
		// b acks one; it never comes back. The other returns to b (its own
		// now) with delivery 3, then is dead-lettered on the next attempt
		// with max deliveries 3.
		if res := f.ack(t, "alice", "g", e1, e1); res.Outcome != store.OK || res.Acked != 1 {
			t.Fatalf("ack: %+v", res)
		}
		b, got = f.readUntil(t, "own redelivery", 1, readOpts{consumer: "b", visibility: vis, max: 3})
		if len(got) != 1 || got[0] != e2+"@3" || b.Redelivered != 1 {
			t.Fatalf("own redelivery: %v (redelivered %d)", got, b.Redelivered)
		}
		storetest.WaitFor(t, "dead letter", func() bool {
			b = f.read(t, readOpts{consumer: "c", visibility: vis, max: 3})
			if len(b.Entries) > 0 {
				t.Fatalf("delivered past the maximum: %v", delivered(b))
			}
			return b.DeadLettered == 1
		})
		if b.Pending != 0 {
			t.Errorf("pending after dead letter: %d", b.Pending)
		}
		l, err := s.ReadHookLog(ctx, f.part, f.hook, "", 10, 10)
		if err != nil || len(l.Entries) != 2 || len(l.DeadLetters) != 1 || l.DeadTotal != 1 {
			t.Fatalf("log: %+v %v", l, err)
		}
		dl := l.DeadLetters[0]
		if dl.ID != e2 || dl.Group != "g" || dl.Deliveries != 3 || dl.Body != "two" || dl.Seq != 2 || dl.DeadAt.IsZero() {
			t.Errorf("dead letter: %+v", dl)
		}
		if at, err := s.RDB.PExpireTime(ctx, s.Keys.HookDead(f.part, f.hook)).Result(); err != nil || at <= 0 {
			t.Errorf("dead-letter stream: no expiry (%v, %v)", at, err)
		}
		// Acked and dead-lettered events never come back to the group.
		if b := f.read(t, readOpts{consumer: "d", visibility: time.Millisecond}); len(b.Entries) != 0 || b.Pending != 0 {
			t.Errorf("after ack and dead letter: %v pending %d", delivered(b), b.Pending)
		}
	})
}

// An event is visible again when the visibility of the read that delivered
// it runs out, whatever visibility a later read asks for: a short one does
// not take back events delivered for long, and a long one does not hold back
// events delivered for a short time. A hook made by an earlier version (no
// ceiling kept) is read as before, by the visibility of the read that asks.
func TestHookVisibilityIsEachDeliverys(t *testing.T) {
	eachHook(t, false, func(t *testing.T, s *store.Store, f hookFixture) {
		ctx := context.Background()
		e1 := f.ingest(t, post{body: "one"}).EventID
		e2 := f.ingest(t, post{body: "two"}).EventID
		if got := delivered(f.read(t, readOpts{consumer: "a", visibility: time.Hour})); len(got) != 2 {
			t.Fatalf("a's read: %v", got)
		}
		// Both have been idle longer than the next reads' visibility asks.
		// XPENDING's extended form: {id, consumer, idle ms, deliveries} each.
		idleAtLeast := func(min time.Duration) bool {
			p, err := s.RDB.Do(ctx, "XPENDING", s.Keys.HookQueue(f.part, f.hook), "g", "-", "+", 10).Slice()
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p {
				if idle, _ := e.([]any)[2].(int64); time.Duration(idle)*time.Millisecond < min {
					return false
				}
			}
			return len(p) > 0
		}
		storetest.WaitFor(t, "a's events idle for 2 ms", func() bool { return idleAtLeast(2 * time.Millisecond) })
		for _, c := range []string{"b", "a"} {
			b := f.read(t, readOpts{consumer: c, visibility: time.Millisecond})
			if len(b.Entries) != 0 || b.Pending != 2 || b.NextVisible <= 55*time.Minute || b.NextVisible > time.Hour {
				t.Fatalf("%s's short read took back events delivered for an hour: %v pending %d next %v",
					c, delivered(b), b.Pending, b.NextVisible)
			}
		}
		// An event delivered for 20 ms comes back to a reader asking for an
		// hour, and then stays with it for that hour.
		e3 := f.ingest(t, post{body: "three"}).EventID
		if got := delivered(f.read(t, readOpts{consumer: "c", visibility: 20 * time.Millisecond})); len(got) != 1 || got[0] != e3+"@1" {
			t.Fatalf("c's read: %v", got)
		}
		_, got := f.readUntil(t, "the 20 ms delivery back to b", 1, readOpts{consumer: "b", visibility: time.Hour})
		if len(got) != 1 || got[0] != e3+"@2" {
			t.Fatalf("b got %v, want only %s at delivery 2 (not %s, %s)", got, e3, e1, e2)
		}
		// The same between a consumer's own deliveries.
		e4 := f.ingest(t, post{body: "four"}).EventID
		if got := delivered(f.read(t, readOpts{consumer: "d", visibility: 20 * time.Millisecond})); len(got) != 1 || got[0] != e4+"@1" {
			t.Fatalf("d's read: %v", got)
		}
		_, got = f.readUntil(t, "the 20 ms delivery back to d", 1, readOpts{consumer: "d", visibility: time.Hour})
		if len(got) != 1 || got[0] != e4+"@2" {
			t.Fatalf("d got %v, want only %s at delivery 2", got, e4)
		}
		storetest.WaitFor(t, "every event idle for 25 ms", func() bool { return idleAtLeast(25 * time.Millisecond) })
		for _, c := range []string{"c", "d"} {
			if b := f.read(t, readOpts{consumer: c, visibility: 20 * time.Millisecond}); len(b.Entries) != 0 {
				t.Fatalf("hour-long deliveries taken back after 20 ms by %s: %v", c, delivered(b))
			}
		}

		// A hook of an earlier version: the short read takes back what a
		// long one delivered.
		f.oldHook = true
		res, id := f.createHook(t, "alice", f.now.Add(time.Hour), idem.Key{})
		if res.Outcome != store.OK {
			t.Fatalf("old hook: %+v", res)
		}
		f.hook = id
		old := f.ingest(t, post{body: "old"}).EventID
		if got := delivered(f.read(t, readOpts{consumer: "a", visibility: time.Hour})); len(got) != 1 {
			t.Fatalf("old hook's first read: %v", got)
		}
		_, got = f.readUntil(t, "the old hook's event back to a short read", 1, readOpts{consumer: "b", visibility: time.Millisecond})
		if len(got) != 1 || got[0] != old+"@2" {
			t.Fatalf("old hook's short read got %v", got)
		}
	})
}

func TestHookGroupsReadIndependently(t *testing.T) {
	eachHook(t, false, func(t *testing.T, s *store.Store, f hookFixture) {
		for i := range 5 {
			f.ingest(t, post{body: fmt.Sprint(i)})
		}
		// Count bounds a batch; the next read goes on where it stopped.
		a := f.read(t, readOpts{group: "one", consumer: "x", count: 3})
		if len(a.Entries) != 3 || a.Entries[0].Seq != 1 {
			t.Fatalf("group one: %v", delivered(a))
		}
		a = f.read(t, readOpts{group: "one", consumer: "x", count: 3})
		if len(a.Entries) != 2 || a.Entries[0].Seq != 4 {
			t.Fatalf("group one, second batch: %v", delivered(a))
		}
		// A new group starts at the beginning, whatever the others did.
		if b := f.read(t, readOpts{group: "two", consumer: "x"}); len(b.Entries) != 5 {
			t.Fatalf("group two: %v", delivered(b))
		}
		// A hook has a bounded number of groups.
		if b := f.read(t, readOpts{group: "three", consumer: "x", maxGroups: 2}); b.Outcome != store.TooManyGroups {
			t.Fatalf("third group: %+v", b)
		}
		if b := f.read(t, readOpts{group: "two", consumer: "x", maxGroups: 2}); b.Outcome != store.OK {
			t.Fatalf("existing group at the limit: %+v", b)
		}
		// Strangers see nothing; admins see it all.
		if b := f.read(t, readOpts{principal: "mallory", group: "one"}); b.Outcome != store.Missing {
			t.Errorf("stranger read: %+v", b)
		}
		if res := f.ack(t, "mallory", "one", "0-1"); res.Outcome != store.Missing {
			t.Errorf("stranger ack: %+v", res)
		}
		if res := f.ack(t, "alice", "nosuchgroup", "0-1"); res.Outcome != store.OK || res.Acked != 0 {
			t.Errorf("ack in a group that does not exist: %+v", res)
		}
		b, err := s.ReadHook(context.Background(), store.HookRead{
			Partition: f.part, ID: f.hook, SessionID: f.session, Principal: "root", Admin: true, Group: "one", Consumer: "y",
			Count: 10, Visibility: time.Hour, MaxDeliveries: 10, MaxGroups: 16, Now: time.Now(),
		})
		if err != nil || b.Outcome != store.OK || b.Pending != 5 || b.Closed {
			t.Errorf("admin read: %+v %v", b, err)
		}
	})
}

func TestHookAckIdempotency(t *testing.T) {
	eachHook(t, false, func(t *testing.T, s *store.Store, f hookFixture) {
		ctx := context.Background()
		e := f.ingest(t, post{body: "x"}).EventID
		f.read(t, readOpts{consumer: "a"})
		key := idem.Key{Scope: "alice\nPOST ack\nk", BodyHash: "h"}
		ack := func(hash string) store.AckResult {
			res, err := s.AckHook(ctx, store.HookAck{
				Partition: f.part, ID: f.hook, Principal: "alice", Group: "g", EventIDs: []string{e},
				Idem: idem.Key{Scope: key.Scope, BodyHash: hash},
			})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if res := ack("h"); res.Outcome != store.OK || res.Acked != 1 {
			t.Fatalf("ack: %+v", res)
		}
		if res := ack("h"); res.Outcome != store.Replayed || string(res.ReplayBody) != `{"acked":1}` {
			t.Fatalf("repeat: %+v", res)
		}
		if res := ack("other"); res.Outcome != store.IdemConflict {
			t.Fatalf("other body: %+v", res)
		}
	})
}

// hook_status answers what ingest would: the same reason for every way a
// hook closes, decided by the hook's own fields alone where they suffice,
// else asking for its task and session.
func TestHookStatusDecidesAsIngest(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		status := func(f hookFixture, principal string, admin, parents bool, at time.Time) store.HookStatus {
			t.Helper()
			sts, err := s.HookStatuses(ctx, principal, admin, at, []store.HookAsk{{
				Partition: f.part, ID: f.hook, Parents: parents, TaskID: f.task, SessionID: f.session,
			}})
			if err != nil || len(sts) != 1 {
				t.Fatalf("status: %+v %v", sts, err)
			}
			return sts[0]
		}
		for _, withTask := range []bool{true, false} {
			f := newHookFixture(t, s, "alice", withTask)
			json := `{"hookId":"` + f.hook + `"}`
			if st := status(f, "alice", false, true, time.Now()); st.Outcome != store.OK || st.Closed || st.Reason != "" ||
				st.NeedsParents || string(st.JSON) != json {
				t.Errorf("open hook (task %v): %+v", withTask, st)
			}
			if st := status(f, "alice", false, false, time.Now()); st.Outcome != store.OK || !st.NeedsParents || string(st.JSON) != json {
				t.Errorf("open hook without its parents (task %v): %+v", withTask, st)
			}
			if st := status(f, "mallory", false, true, time.Now()); st.Outcome != store.Missing {
				t.Errorf("somebody else's hook: %+v", st)
			}
			if st := status(f, "root", true, true, time.Now()); st.Outcome != store.OK || st.Closed {
				t.Errorf("an admin: %+v", st)
			}
		}
		cases := append(closings(t, ctx, s), hookClosing{"closed", wire.CloseReasonClosed, true, true, func(f *hookFixture) time.Time {
			res, err := s.CloseHook(ctx, store.HookClose{Partition: f.part, ID: f.hook, SessionID: f.session,
				Principal: "alice", ClosedJSON: []byte(`{"status":"closed"}`)})
			if err != nil || res.Outcome != store.OK {
				t.Fatalf("close: %+v %v", res, err)
			}
			return time.Now()
		}})
		for _, c := range cases {
			f := newHookFixture(t, s, "alice", c.task)
			at := c.setup(&f)
			if st := status(f, "alice", false, true, at); st.Outcome != store.OK || !st.Closed || st.Reason != c.reason {
				t.Errorf("%s: %+v, want closed (%s)", c.name, st, c.reason)
			}
			st := status(f, "alice", false, false, at)
			if c.ownOnly && (st.Outcome != store.OK || !st.Closed || st.Reason != c.reason) {
				t.Errorf("%s without its parents: %+v, want closed (%s)", c.name, st, c.reason)
			}
			if !c.ownOnly && (st.Outcome != store.OK || st.Closed || !st.NeedsParents) {
				t.Errorf("%s without its parents: %+v, want a question for them", c.name, st)
			}
			if res := f.ingest(t, post{at: at, body: "late"}); res.Outcome != store.Closed || res.Reason != c.reason {
				t.Errorf("%s: ingest %+v, want closed (%s) as the status said", c.name, res, c.reason)
			}
		}

		// A list reads each hook with what its own fields decide, in the
		// round trip that reads the records.
		f := newHookFixture(t, s, "alice", false)
		open := f.hook
		if res, id := f.createHook(t, "alice", f.now.Add(time.Hour), idem.Key{}); res.Outcome != store.OK {
			t.Fatalf("second hook: %+v", res)
		} else if res, err := s.CloseHook(ctx, store.HookClose{Partition: f.part, ID: id, SessionID: f.session,
			Principal: "alice", ClosedJSON: []byte(`{"status":"closed"}`)}); err != nil || res.Outcome != store.OK {
			t.Fatalf("close: %+v %v", res, err)
		}
		page, err := s.ListHooks(ctx, []string{s.Keys.SessionHooks(f.part, f.session)}, nil, 10, "alice", false, time.Now())
		if err != nil || len(page.Hooks) != 2 || page.Next != "" {
			t.Fatalf("list: %+v %v", page, err)
		}
		for _, st := range page.Hooks {
			isOpen := string(st.JSON) == `{"hookId":"`+open+`"}`
			if isOpen && (!st.NeedsParents || st.Closed) || !isOpen && (!st.Closed || st.Reason != wire.CloseReasonClosed) {
				t.Errorf("listed: %+v", st)
			}
		}
		if page, err := s.ListHooks(ctx, []string{s.Keys.SessionHooks(f.part, f.session)}, nil, 10, "mallory", false, time.Now()); err != nil || len(page.Hooks) != 0 {
			t.Errorf("somebody else's list: %+v %v", page, err)
		}
	})
}

// A Redis that lost its scripts (a restart, SCRIPT FLUSH) refuses the
// EVALSHAs of a pipeline; they are sent again with the scripts' bodies.
func TestHookStatusesAfterTheScriptsAreLost(t *testing.T) {
	t.Parallel()
	s := open(t, storetest.Embedded(t)) // its own server: the flush touches nobody else
	ctx := context.Background()
	f := newHookFixture(t, s, "alice", false)
	first := f.hook
	if res, id := f.createHook(t, "alice", f.now.Add(time.Hour), idem.Key{}); res.Outcome != store.OK {
		t.Fatalf("second hook: %+v", res)
	} else {
		f.hook = id
	}
	if err := s.RDB.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	sts, err := s.HookStatuses(ctx, "alice", false, time.Now(), []store.HookAsk{
		{Partition: f.part, ID: first, Parents: true, SessionID: f.session},
		{Partition: f.part, ID: f.hook, Parents: true, SessionID: f.session},
	})
	if err != nil || len(sts) != 2 || sts[0].Outcome != store.OK || sts[1].Outcome != store.OK || sts[0].Closed || sts[1].Closed {
		t.Fatalf("statuses: %+v %v", sts, err)
	}
}
