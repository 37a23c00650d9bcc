package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// askWithToken applies a change to task id that maps an answer token's hash
// to value until expires.
func (f fixture) askWithToken(t *testing.T, id, hash, value string, expires time.Time) {
	t.Helper()
	res, err := f.s.ApplyTask(context.Background(), store.TaskUpdate{
		LogWrite: store.LogWrite{Partition: f.part, Now: time.Now(), Retention: time.Hour},
		ID:       id, SessionID: f.session, ExpectRevision: 1, Status: "input_required",
		JSON: []byte(`{"rev":2}`), Events: []store.TaskEvent{{JSON: []byte(`{"type":"input.requested"}`)}},
		AnswerTokens: []store.AnswerToken{{Hash: hash, Value: []byte(value)}},
		ExpiresAt:    expires, Owner: "alice", OldStatus: "working",
	})
	if err != nil || res.Outcome != store.OK {
		t.Fatalf("apply with an answer token: %+v %v", res, err)
	}
}

// An answer token's hash maps to what the change that made it stored, until
// the task's expiry time passes; an unknown hash is not found.
func TestAnswerByToken(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		f := newFixture(t, s, "alice")
		if _, err := s.AnswerByToken(ctx, f.part, "no-such-hash"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown hash: %v, want ErrNotFound", err)
		}

		kept, _ := f.createTask(t, "alice", idem.Key{})
		f.askWithToken(t, kept, "hash-kept", `{"taskId":"kept","requestId":"q1"}`, time.Now().Add(time.Hour))
		got, err := s.AnswerByToken(ctx, f.part, "hash-kept")
		if err != nil || string(got) != `{"taskId":"kept","requestId":"q1"}` {
			t.Fatalf("stored mapping: %s %v", got, err)
		}
		if _, err := s.AnswerByToken(ctx, (f.part+1)%s.Partitions, "hash-kept"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the hash in another partition: %v, want ErrNotFound", err)
		}

		// A task that expires soon: its mapping ends at its expiry time.
		expires := time.Now().Add(time.Second).Truncate(time.Millisecond) // as Redis keeps it
		short, _ := f.createTask(t, "alice", idem.Key{})
		f.askWithToken(t, short, "hash-short", `{"taskId":"short"}`, expires)
		at, err := s.RDB.PExpireTime(ctx, s.Keys.AnswerToken(f.part, "hash-short")).Result()
		// The embedded server keeps a TTL, not a deadline: it reads back off
		// by the time between the write and the read. -2: gone already.
		if err != nil || (at != -2 && (at.Milliseconds() < expires.UnixMilli()-1000 || at.Milliseconds() > expires.UnixMilli()+1000)) {
			t.Fatalf("the mapping expires at %v (%v), want the task's %d", at.Milliseconds(), err, expires.UnixMilli())
		}
		storetest.WaitFor(t, "the mapping to end with its task", func() bool {
			_, err := s.AnswerByToken(ctx, f.part, "hash-short")
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Fatal(err)
			}
			return errors.Is(err, store.ErrNotFound)
		})
		if !time.Now().After(expires) {
			t.Fatalf("the mapping ended before the task's expiry time %v", expires)
		}
		if got, err := s.AnswerByToken(ctx, f.part, "hash-kept"); err != nil || string(got) != `{"taskId":"kept","requestId":"q1"}` {
			t.Fatalf("the other task's mapping after the first ended: %s %v", got, err)
		}
	})
}
