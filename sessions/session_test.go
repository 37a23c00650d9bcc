package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/problem"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

var (
	alice = authz.Principal{ID: "alice"}
	bob   = authz.Principal{ID: "bob"}
	admin = authz.Principal{ID: "root", Scopes: []string{authz.ScopeAdmin}}
)

// env is one replica's session and task services on a store of the test's
// own. Its fan-in is not started: these tests make no waiting reads.
type env struct {
	store    *store.Store
	metrics  *metrics.Metrics // the store's
	sessions *sessions.Service
	tasks    *tasks.Service
}

func newEnv(t *testing.T, cfg store.Config) env {
	t.Helper()
	m := metrics.New()
	s := storetest.Open(t, cfg, m)
	w := waits.New(waits.Config{}, nil, time.Now)
	return env{
		store: s, metrics: m,
		sessions: sessions.NewService(sessions.Config{}, s, w, time.Now),
		tasks:    tasks.NewService(tasks.Config{}, s, w, metrics.New(), time.Now),
	}
}

func decode[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// create opens a session of p with the given metadata ("" for none).
func (e env) create(t *testing.T, p authz.Principal, metadata string) sessions.Session {
	t.Helper()
	in := sessions.CreateInput{}
	if metadata != "" {
		in.Metadata = json.RawMessage(metadata)
	}
	raw, replayed, err := e.sessions.Create(context.Background(), p, in, idem.Key{})
	if err != nil || replayed {
		t.Fatalf("create session: %v (replayed %v)", err, replayed)
	}
	return decode[sessions.Session](t, raw)
}

// task starts a task of p in the session.
func (e env) task(t *testing.T, p authz.Principal, session string) tasks.Task {
	t.Helper()
	r, err := e.tasks.Create(context.Background(), p, tasks.CreateInput{SessionID: session}, idem.Key{})
	if err != nil {
		t.Fatalf("create task: %v", err)
	}
	return decode[tasks.Task](t, r.JSON)
}

func (e env) getTask(t *testing.T, id string) tasks.Task {
	t.Helper()
	task, _, err := e.tasks.Get(context.Background(), alice, id)
	if err != nil {
		t.Fatalf("get task %s: %v", id, err)
	}
	return task
}

// log is the session's event log as its owner reads it.
func (e env) log(t *testing.T, p authz.Principal, session string) []events.Event {
	t.Helper()
	page, err := e.sessions.Events(context.Background(), p, session, waits.LogQuery{Limit: 1000})
	if err != nil {
		t.Fatalf("session events: %v", err)
	}
	out := make([]events.Event, len(page.Entries))
	for i, en := range page.Entries {
		out[i] = decode[events.Event](t, en.JSON)
	}
	return out
}

func TestCreateAndGet(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		e := newEnv(t, cfg)
		ctx := context.Background()
		before := time.Now().Truncate(time.Millisecond)
		ses := e.create(t, alice, `{"chat":"c1"}`)
		if _, err := ids.PartitionOf(ses.SessionID, ids.SessionPrefix, e.store.Partitions); err != nil || ses.Status != sessions.Active || ses.Owner != "alice" ||
			string(ses.Metadata) != `{"chat":"c1"}` || ses.CreatedAt.Before(before) || !ses.LastUpdatedAt.Equal(ses.CreatedAt.Time) ||
			ses.Notify == nil || len(ses.Notify) != 0 {
			t.Fatalf("created: %+v", ses)
		}
		if plain := e.create(t, alice, ""); string(plain.Metadata) != `{}` {
			t.Fatalf("metadata of a session made without any: %s", plain.Metadata)
		}

		for _, p := range []authz.Principal{alice, admin} {
			got, raw, err := e.sessions.Get(ctx, p, ses.SessionID)
			if err != nil || got.SessionID != ses.SessionID || got.Status != sessions.Active || string(got.Metadata) != `{"chat":"c1"}` {
				t.Fatalf("get by %s: %+v %v", p.ID, got, err)
			}
			if decode[sessions.Session](t, raw).SessionID != ses.SessionID {
				t.Fatalf("get by %s: the JSON is another session's: %s", p.ID, raw)
			}
		}
		// Another principal's session does not exist for them, like one
		// that does not exist at all.
		for name, c := range map[string]struct {
			p  authz.Principal
			id string
		}{
			"another principal's": {bob, ses.SessionID},
			"missing":             {alice, ids.New(ids.SessionPrefix, 0)},
			"malformed":           {alice, "ses_nope"},
			"a task id":           {alice, ids.New(ids.TaskPrefix, 0)},
		} {
			if got, raw, err := e.sessions.Get(ctx, c.p, c.id); !errors.Is(err, problem.ErrNotFound) || raw != nil {
				t.Errorf("%s: %+v %s %v, want ErrNotFound", name, got, raw, err)
			}
		}
		if _, err := e.sessions.Events(ctx, bob, ses.SessionID, waits.LogQuery{Limit: 10}); !errors.Is(err, problem.ErrNotFound) {
			t.Errorf("another principal's log: %v, want ErrNotFound", err)
		}
		log := e.log(t, alice, ses.SessionID)
		if len(log) != 1 || log[0].Type != wire.EventSessionCreated || log[0].SessionID != ses.SessionID {
			t.Fatalf("the new session's log: %+v", log)
		}
	})
}

func TestCreateRefusals(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		e := newEnv(t, cfg)
		ctx := context.Background()
		for name, c := range map[string]struct {
			in    sessions.CreateInput
			field string
		}{
			"metadata not an object":     {sessions.CreateInput{Metadata: json.RawMessage(`[1]`)}, "metadata"},
			"empty metadata":             {sessions.CreateInput{Metadata: json.RawMessage{}}, "metadata"},
			"notify without a registrar": {sessions.CreateInput{Notify: []wire.EndpointRequest{{URL: "https://example.test"}}}, "notify"},
		} {
			_, _, err := e.sessions.Create(ctx, alice, c.in, idem.Key{})
			var ve *problem.ValidationError
			if !errors.As(err, &ve) || ve.Field != c.field {
				t.Errorf("%s: %v, want a validation error on %s", name, err, c.field)
			}
		}
		page, err := e.sessions.List(ctx, alice, "", "", 10)
		if err != nil || len(page.Items) != 0 {
			t.Fatalf("refused creates made sessions: %d %v", len(page.Items), err)
		}

		// With an idempotency key: the same body answers the first
		// session again, another body is refused.
		key := idem.Key{Scope: "alice\nPOST /v1/sessions\nk1", BodyHash: "h1"}
		first, replayed, err := e.sessions.Create(ctx, alice, sessions.CreateInput{}, key)
		if err != nil || replayed {
			t.Fatalf("create with a key: %v %v", replayed, err)
		}
		again, replayed, err := e.sessions.Create(ctx, alice, sessions.CreateInput{}, key)
		if err != nil || !replayed || string(again) != string(first) {
			t.Fatalf("repeat: %s %v %v, want %s replayed", again, replayed, err, first)
		}
		if _, _, err := e.sessions.Create(ctx, alice, sessions.CreateInput{Metadata: json.RawMessage(`{"a":1}`)},
			idem.Key{Scope: key.Scope, BodyHash: "h2"}); !errors.Is(err, problem.ErrIdempotency) {
			t.Fatalf("the key with another body: %v, want ErrIdempotency", err)
		}
	})
}

func TestListByStatus(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		e := newEnv(t, cfg)
		ctx := context.Background()
		var made []string
		for range 4 {
			made = append(made, e.create(t, alice, "").SessionID)
		}
		e.create(t, bob, "")
		if _, _, err := e.sessions.Cancel(ctx, alice, made[1], "", idem.Key{}); err != nil {
			t.Fatal(err)
		}
		list := func(p authz.Principal, status string) []string {
			t.Helper()
			var ids []string
			var cursor string
			last := time.Now().Add(time.Hour)
			for {
				page, err := e.sessions.List(ctx, p, status, cursor, 2)
				if err != nil {
					t.Fatalf("list %q: %v", status, err)
				}
				for _, raw := range page.Items {
					s := decode[sessions.Session](t, raw)
					if s.Owner != p.ID || (status != "" && s.Status != status) {
						t.Fatalf("list %q of %s holds %+v", status, p.ID, s)
					}
					if s.CreatedAt.After(last) {
						t.Fatalf("list %q of %s is not newest first: %v after %v", status, p.ID, s.CreatedAt, last)
					}
					last = s.CreatedAt.Time
					ids = append(ids, s.SessionID)
				}
				if page.Next == "" {
					return ids
				}
				cursor = page.Next
			}
		}
		want := map[string][]string{
			"":                 {made[0], made[1], made[2], made[3]},
			sessions.Active:    {made[0], made[2], made[3]},
			sessions.Cancelled: {made[1]},
		}
		for status, ids := range want {
			got := list(alice, status)
			if slices.Sort(got); !slices.Equal(got, sorted(ids)) {
				t.Errorf("list %q: %v, want %v", status, got, ids)
			}
		}
		if got := list(bob, sessions.Cancelled); len(got) != 0 {
			t.Errorf("bob's cancelled sessions: %v", got)
		}
		if got := list(bob, ""); len(got) != 1 {
			t.Errorf("bob's sessions: %v", got)
		}
		var ve *problem.ValidationError
		if _, err := e.sessions.List(ctx, alice, "closed", "", 10); !errors.As(err, &ve) || ve.Field != "status" {
			t.Errorf("list by an unknown status: %v", err)
		}
	})
}

func sorted(ids []string) []string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

// scripts is how many Lua scripts the store has run so far.
func (e env) scripts() float64 {
	return testutil.ToFloat64(e.metrics.RedisCommands.WithLabelValues("evalsha")) +
		testutil.ToFloat64(e.metrics.RedisCommands.WithLabelValues("eval"))
}

// cancelledEvent is the data of a session.cancelled event.
type cancelledEvent struct {
	Session          sessions.Session `json:"session"`
	Reason           string           `json:"reason"`
	CancelledTaskIDs []string         `json:"cancelledTaskIds"`
}

// wantCancelEnded checks the session's log ends with one session.cancelled
// naming the tasks, after a task.terminal of each.
func (e env) wantCancelEnded(t *testing.T, session, reason string, cancelled []string) {
	t.Helper()
	log := e.log(t, alice, session)
	terminal := map[string]bool{}
	for _, ev := range log[:len(log)-1] {
		if ev.Type == wire.EventSessionCancelled {
			t.Fatalf("session.cancelled before the end of the log: %+v", ev)
		}
		if ev.Type == wire.EventTaskTerminal {
			terminal[ev.TaskID] = true
		}
	}
	last := log[len(log)-1]
	if last.Type != wire.EventSessionCancelled {
		t.Fatalf("the log ends with %s, want %s", last.Type, wire.EventSessionCancelled)
	}
	data := decode[cancelledEvent](t, last.Data)
	if data.Reason != reason || !slices.Equal(data.CancelledTaskIDs, sorted(cancelled)) ||
		data.Session.SessionID != session || data.Session.Status != sessions.Cancelled {
		t.Fatalf("session.cancelled: %+v, want %q with %v", data, reason, sorted(cancelled))
	}
	for _, id := range cancelled {
		if !terminal[id] {
			t.Errorf("no task.terminal of %s before session.cancelled", id)
		}
	}
}

// A session with many live tasks is cancelled in bounded batches: every
// live task ends cancelled, a finished one stays as it was, and the cancel
// ends with one session.cancelled naming them all.
func TestCancelInBatches(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		e := newEnv(t, cfg)
		ctx := context.Background()
		ses := e.create(t, alice, "")
		const n = 40 // more live tasks than one batch takes
		var live []string
		for range n {
			live = append(live, e.task(t, alice, ses.SessionID).TaskID)
		}
		// Live tasks at other revisions and statuses, and a finished one.
		halfway := "halfway"
		if _, err := e.tasks.Run(ctx, alice, live[1], tasks.Command{Kind: tasks.CmdProgress, StatusMessage: &halfway}, idem.Key{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.tasks.Run(ctx, alice, live[2], tasks.Command{Kind: tasks.CmdRequireInput, Requests: []tasks.InputRequest{
			{RequestID: "q", Kind: "ask", Prompt: "?", Display: "confirmation"},
		}}, idem.Key{}); err != nil {
			t.Fatal(err)
		}
		done := e.task(t, alice, ses.SessionID)
		if _, err := e.tasks.Run(ctx, alice, done.TaskID, tasks.Command{Kind: tasks.CmdComplete, Result: json.RawMessage(`"ok"`)}, idem.Key{}); err != nil {
			t.Fatal(err)
		}
		revisions := map[string]int64{}
		for _, id := range live {
			revisions[id] = e.getTask(t, id).Revision
		}

		// The scripts a cancel of one live task runs: no batching can make
		// a cancel of n take as few.
		one := e.create(t, alice, "")
		e.task(t, alice, one.SessionID)
		before := e.scripts()
		if _, _, err := e.sessions.Cancel(ctx, alice, one.SessionID, "", idem.Key{}); err != nil {
			t.Fatal(err)
		}
		single := e.scripts() - before

		key := idem.Key{Scope: "alice\nPOST /v1/sessions/cancel\nk1", BodyHash: "h1"}
		before = e.scripts()
		raw, replayed, err := e.sessions.Cancel(ctx, alice, ses.SessionID, "user left", key)
		if err != nil || replayed {
			t.Fatalf("cancel: %v (replayed %v)", err, replayed)
		}
		if ran := e.scripts() - before; ran <= single {
			t.Errorf("the cancel of %d tasks ran %v scripts, as many as that of one task: it was not done in batches", n, ran)
		}
		answer := decode[sessions.CancelAnswer](t, raw)
		got := decode[sessions.Session](t, answer.Session)
		if got.SessionID != ses.SessionID || got.Status != sessions.Cancelled || got.LastUpdatedAt.Before(got.CreatedAt.Time) {
			t.Fatalf("the cancelled session: %+v", got)
		}
		if !slices.Equal(answer.CancelledTaskIDs, sorted(live)) {
			t.Fatalf("cancelled %d tasks %v, want the %d live ones, sorted", len(answer.CancelledTaskIDs), answer.CancelledTaskIDs, n)
		}
		for _, id := range live {
			task := e.getTask(t, id)
			if task.Status != tasks.Cancelled || task.CancelReason != "user left" || task.Revision != revisions[id]+1 || len(task.InputRequests) != 0 {
				t.Fatalf("task %s after the cancel: %s %q revision %d (was %d)", id, task.Status, task.CancelReason, task.Revision, revisions[id])
			}
		}
		if task := e.getTask(t, done.TaskID); task.Status != tasks.Completed || task.Revision != done.Revision+1 {
			t.Fatalf("the finished task changed: %s revision %d", task.Status, task.Revision)
		}
		e.wantCancelEnded(t, ses.SessionID, "user left", live)
		if stalled, err := e.store.StalledCancels(ctx, 0, time.Now().Add(24*time.Hour), 100); err != nil || slices.Contains(stalled, ses.SessionID) {
			t.Fatalf("the ended cancel is still among the stalled ones: %v %v", stalled, err)
		}

		// A repeat with the key gets the same answer; without it, the
		// cancel is a no-op that answers the session as it is.
		again, replayed, err := e.sessions.Cancel(ctx, alice, ses.SessionID, "user left", key)
		if err != nil || !replayed || string(again) != string(raw) {
			t.Fatalf("repeat with the key: %s %v %v", again, replayed, err)
		}
		raw, replayed, err = e.sessions.Cancel(ctx, alice, ses.SessionID, "again", idem.Key{})
		if answer := decode[sessions.CancelAnswer](t, raw); err != nil || replayed || answer.CancelledTaskIDs == nil ||
			len(answer.CancelledTaskIDs) != 0 || decode[sessions.Session](t, answer.Session).Status != sessions.Cancelled {
			t.Fatalf("repeat: %s %v %v", raw, replayed, err)
		}
		if _, err := e.tasks.Create(ctx, alice, tasks.CreateInput{SessionID: ses.SessionID}, idem.Key{}); !errors.Is(err, problem.ErrSessionNotActive) {
			t.Fatalf("a task in the cancelled session: %v", err)
		}
		if _, _, err := e.sessions.Cancel(ctx, bob, ses.SessionID, "", idem.Key{}); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("another principal's cancel: %v", err)
		}
	})
}

// Reset cancels the session and opens a new active one with the same owner
// and metadata; a repeat with the same key answers the same new session.
func TestResetCarriesMetadata(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		e := newEnv(t, cfg)
		ctx := context.Background()
		type resetAnswer struct {
			PreviousSessionID string           `json:"previousSessionId"`
			Session           sessions.Session `json:"session"`
		}
		old := e.create(t, alice, `{"chat":"c1","n":[1,2]}`)
		task := e.task(t, alice, old.SessionID)

		key := idem.Key{Scope: "alice\nPOST /v1/sessions/reset\nr1", BodyHash: "h1"}
		raw, replayed, err := e.sessions.Reset(ctx, alice, old.SessionID, "new chat", key)
		if err != nil || replayed {
			t.Fatalf("reset: %v (replayed %v)", err, replayed)
		}
		got := decode[resetAnswer](t, raw)
		ses := got.Session
		if got.PreviousSessionID != old.SessionID || ses.SessionID == old.SessionID || ses.Status != sessions.Active ||
			ses.Owner != "alice" || string(ses.Metadata) != `{"chat":"c1","n":[1,2]}` {
			t.Fatalf("reset: %s", raw)
		}
		if now, _, err := e.sessions.Get(ctx, alice, ses.SessionID); err != nil || now.Status != sessions.Active {
			t.Fatalf("the new session: %+v %v", now, err)
		}
		if prev, _, err := e.sessions.Get(ctx, alice, old.SessionID); err != nil || prev.Status != sessions.Cancelled {
			t.Fatalf("the previous session: %+v %v", prev, err)
		}
		if tk := e.getTask(t, task.TaskID); tk.Status != tasks.Cancelled || tk.CancelReason != "new chat" {
			t.Fatalf("the previous session's task: %s %q", tk.Status, tk.CancelReason)
		}
		e.wantCancelEnded(t, old.SessionID, "new chat", []string{task.TaskID})
		if log := e.log(t, alice, ses.SessionID); len(log) != 1 || log[0].Type != wire.EventSessionCreated {
			t.Fatalf("the new session's log: %+v", log)
		}

		again, replayed, err := e.sessions.Reset(ctx, alice, old.SessionID, "new chat", key)
		if err != nil || !replayed || decode[resetAnswer](t, again).Session.SessionID != ses.SessionID {
			t.Fatalf("repeat: %s %v %v, want %s again", again, replayed, err, ses.SessionID)
		}

		// An admin's reset keeps the owner; to another principal, the
		// session does not exist.
		raw, _, err = e.sessions.Reset(ctx, admin, ses.SessionID, "", idem.Key{})
		if byAdmin := decode[resetAnswer](t, raw).Session; err != nil || byAdmin.Owner != "alice" || string(byAdmin.Metadata) != string(ses.Metadata) {
			t.Fatalf("reset by an admin: %s %v", raw, err)
		}
		if _, _, err := e.sessions.Reset(ctx, bob, ses.SessionID, "", idem.Key{}); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("another principal's reset: %v", err)
		}
	})
}
