package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// The scripts decide who may see and change a record by authz's rule
// (Principal.CanAccess), given the principal's id and whether it is an
// admin: the owner, or an admin; a principal with no id owns nothing, not
// even a record stored with no owner.
func TestScriptsOwnershipIsAuthz(t *testing.T) {
	admin := []string{authz.ScopeAdmin}
	principals := []authz.Principal{
		{ID: "alice"}, {ID: "bob"}, {ID: "bob", Scopes: admin}, {ID: "alice", Scopes: admin},
		{ID: ""}, {ID: "", Scopes: admin}, {ID: "bob", Scopes: []string{authz.ScopeDelegate}},
	}
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		for _, owner := range []string{"alice", ""} {
			f := newFixture(t, s, owner)
			hook := ids.New(ids.HookPrefix, f.part)
			res, err := s.CreateHook(ctx, store.HookCreate{
				Partition: f.part, ID: hook, SessionID: f.session, Principal: owner, Admin: true,
				TokenHash: "hash-" + hook, JSON: []byte(`{}`), Config: []byte(`{}`), Now: f.now,
				ClosesAt: f.now.Add(time.Hour), ExpiresAt: f.now.Add(2 * time.Hour),
			})
			if err != nil || res.Outcome != store.OK {
				t.Fatalf("create hook: %v %+v", err, res)
			}
			for _, p := range principals {
				want := p.CanAccess(owner)
				_, err := s.GetOwned(ctx, s.Keys.Session(f.part, f.session), p.ID, p.Admin(), false)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
				if got := err == nil; got != want {
					t.Errorf("read_owned: %+v reads a session of %q: %v, authz says %v", p, owner, got, want)
				}
				sts, err := s.HookStatuses(ctx, p.ID, p.Admin(), f.now, []store.HookAsk{{Partition: f.part, ID: hook}})
				if err != nil {
					t.Fatal(err)
				}
				if got := sts[0].Outcome == store.OK; got != want {
					t.Errorf("hook_status: %+v reads a hook of %q: %v, authz says %v", p, owner, got, want)
				}
				created, err := s.CreateTask(ctx, store.TaskCreate{
					LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
					NewRecord: store.NewRecord{ID: ids.New(ids.TaskPrefix, f.part), JSON: []byte(`{}`), Event: []byte(`{"type":"task.created"}`), ExpiresAt: f.now.Add(time.Hour)},
					SessionID: f.session, Principal: p.ID, Admin: p.Admin(),
				})
				if err != nil {
					t.Fatal(err)
				}
				if got := created.Outcome == store.OK; got != want {
					t.Errorf("task_create: %+v makes a task in a session of %q: %v, authz says %v", p, owner, got, want)
				}
			}
		}
	})
}

// A task's record is read by its owner (or an admin) and, where the parties
// may read, by its requester and its executor; to anybody else it answers
// as a missing record does. A task its owner executes stores no executor.
func TestReadOwnedTaskParties(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		f := newFixture(t, s, "alice")
		task := ids.New(ids.TaskPrefix, f.part)
		res, err := s.CreateTask(ctx, store.TaskCreate{
			LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
			NewRecord: store.NewRecord{ID: task, JSON: []byte(`{}`), Event: []byte(`{"type":"task.created"}`), ExpiresAt: f.now.Add(time.Hour)},
			SessionID: f.session, Principal: "alice", Requester: "carol", Executor: "worker",
		})
		if err != nil || res.Outcome != store.OK {
			t.Fatalf("create task: %v %+v", err, res)
		}
		key := s.Keys.Task(f.part, task)
		for _, c := range []struct {
			who               string
			parties, ownerish bool
		}{
			{"alice", true, true}, {"carol", true, false}, {"worker", true, false}, {"mallory", false, false},
		} {
			for _, partiesToo := range []bool{false, true} {
				_, err := s.GetOwned(ctx, key, c.who, false, partiesToo)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
				want := c.ownerish || (partiesToo && c.parties)
				if got := err == nil; got != want {
					t.Errorf("%s reads (parties too: %v): %v, want %v", c.who, partiesToo, got, want)
				}
			}
		}
		if who, err := s.Executor(ctx, key); err != nil || who != "worker" {
			t.Fatalf("the executor: %q %v", who, err)
		}
		own := ids.New(ids.TaskPrefix, f.part)
		if _, err := s.CreateTask(ctx, store.TaskCreate{
			LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
			NewRecord: store.NewRecord{ID: own, JSON: []byte(`{}`), Event: []byte(`{"type":"task.created"}`), ExpiresAt: f.now.Add(time.Hour)},
			SessionID: f.session, Principal: "alice", Requester: "alice",
		}); err != nil {
			t.Fatal(err)
		}
		if v, n := storetest.RecordField(t, s, s.Keys.Task(f.part, own), "executor"); n {
			t.Fatalf("a task its owner executes stores an executor: %q", v)
		}
		if who, err := s.Executor(ctx, s.Keys.Task(f.part, own)); err != nil || who != "alice" {
			t.Fatalf("the executor of the owner's own task: %q %v", who, err)
		}
	})
}
