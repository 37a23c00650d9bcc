package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/problem"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
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
	f := store.NewFanIn(s, store.FanInConfig{}, nil, nil, time.Now)
	return env{
		store: s, metrics: m,
		sessions: sessions.NewService(sessions.Config{}, s, f, time.Now),
		tasks:    tasks.NewService(tasks.Config{}, s, f, metrics.New(), time.Now),
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
	raw, replayed, err := e.sessions.Create(context.Background(), p, in, store.Idempotency{})
	if err != nil || replayed {
		t.Fatalf("create session: %v (replayed %v)", err, replayed)
	}
	return decode[sessions.Session](t, raw)
}

// task starts a task of p in the session.
func (e env) task(t *testing.T, p authz.Principal, session string) tasks.Task {
	t.Helper()
	r, err := e.tasks.Create(context.Background(), p, tasks.CreateInput{SessionID: session}, store.Idempotency{})
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
	page, err := e.sessions.Events(context.Background(), p, session, store.LogQuery{Limit: 1000})
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
		if _, err := e.sessions.Events(ctx, bob, ses.SessionID, store.LogQuery{Limit: 10}); !errors.Is(err, problem.ErrNotFound) {
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
			_, _, err := e.sessions.Create(ctx, alice, c.in, store.Idempotency{})
			var ve *problem.ValidationError
			if !errors.As(err, &ve) || ve.Field != c.field {
				t.Errorf("%s: %v, want a validation error on %s", name, err, c.field)
			}
		}
		page, err := e.sessions.List(ctx, alice, "", nil, 10)
		if err != nil || len(page.Items) != 0 {
			t.Fatalf("refused creates made sessions: %d %v", len(page.Items), err)
		}

		// With an idempotency key: the same body answers the first
		// session again, another body is refused.
		key := store.Idempotency{Scope: "alice\nPOST /v1/sessions\nk1", BodyHash: "h1"}
		first, replayed, err := e.sessions.Create(ctx, alice, sessions.CreateInput{}, key)
		if err != nil || replayed {
			t.Fatalf("create with a key: %v %v", replayed, err)
		}
		again, replayed, err := e.sessions.Create(ctx, alice, sessions.CreateInput{}, key)
		if err != nil || !replayed || string(again) != string(first) {
			t.Fatalf("repeat: %s %v %v, want %s replayed", again, replayed, err, first)
		}
		if _, _, err := e.sessions.Create(ctx, alice, sessions.CreateInput{Metadata: json.RawMessage(`{"a":1}`)},
			store.Idempotency{Scope: key.Scope, BodyHash: "h2"}); !errors.Is(err, problem.ErrIdempotency) {
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
		if _, _, err := e.sessions.Cancel(ctx, alice, made[1], "", store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
		list := func(p authz.Principal, status string) []string {
			t.Helper()
			var ids []string
			var after *store.Position
			last := time.Now().Add(time.Hour)
			for {
				page, err := e.sessions.List(ctx, p, status, after, 2)
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
				if page.Next == nil {
					return ids
				}
				after = page.Next
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
		if _, err := e.sessions.List(ctx, alice, "closed", nil, 10); !errors.As(err, &ve) || ve.Field != "status" {
			t.Errorf("list by an unknown status: %v", err)
		}
	})
}

func sorted(ids []string) []string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}
