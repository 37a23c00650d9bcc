package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// endpointList is a record's endpoint list of one endpoint that takes
// task.created.
func endpointList(id string) store.NewEndpoints {
	return store.NewEndpoints{
		List:    []byte(`[{"endpointId":"` + id + `","url":"http://receiver.example/n","kinds":["task.created"],"status":"active"}]`),
		Secrets: []string{id, "whsec_of_" + id},
	}
}

// outboxFixture is a session of alice whose endpoint takes task.created,
// and n tasks created in it by principal: n entries in the outbox (and as
// many more for the tasks' own endpoint, when taskEndpoint is set).
func outboxFixture(t *testing.T, s *store.Store, principal string, admin bool, n int, taskEndpoint string) fixture {
	t.Helper()
	f := fixture{s: s, part: 2 % s.Partitions, now: time.Now()}
	f.session = ids.New(ids.SessionPrefix, f.part)
	res, err := s.CreateSession(context.Background(), store.SessionCreate{
		LogWrite: store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
		NewRecord: store.NewRecord{
			ID: f.session, JSON: []byte(`{"s":1}`), Event: []byte(`{"type":"session.created"}`),
			ExpiresAt: f.now.Add(time.Hour), Endpoints: endpointList("ep_session"),
		},
		Owner: "alice",
	})
	if err != nil || res.Outcome != store.OK {
		t.Fatalf("create session: %v %+v", err, res)
	}
	for range n {
		rec := store.NewRecord{
			ID: ids.New(ids.TaskPrefix, f.part), JSON: []byte(`{"rev":1}`), Event: []byte(`{"type":"task.created"}`),
			ExpiresAt: f.now.Add(time.Hour),
		}
		if taskEndpoint != "" {
			rec.Endpoints = endpointList(taskEndpoint)
		}
		res, err := s.CreateTask(context.Background(), store.TaskCreate{
			LogWrite:  store.LogWrite{Partition: f.part, Now: f.now, Retention: time.Hour},
			NewRecord: rec, SessionID: f.session, Principal: principal, Admin: admin,
		})
		if err != nil || res.Outcome != store.OK {
			t.Fatalf("create task: %v %+v", err, res)
		}
	}
	return f
}

// readOutbox takes every entry of the fixture's partition for consumer.
func readOutbox(t *testing.T, s *store.Store, f fixture, consumer string) []store.OutboxEntry {
	t.Helper()
	ctx := context.Background()
	if err := s.EnsureOutboxGroup(ctx, f.part); err != nil {
		t.Fatal(err)
	}
	b := s.NewBlocking(1)
	defer b.Close()
	entries, err := b.ReadOutbox(ctx, f.part, consumer, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// Each entry's target names the owner of the record that holds its
// endpoint, read with the endpoint and its secret: tasks an admin made in
// alice's session send to each task's endpoint as the admin's and to the
// session's as alice's.
func TestOutboxTargetsNameTheRecordOwner(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		f := outboxFixture(t, s, "root", true, 2, "ep_task")
		entries := readOutbox(t, s, f, "reader")
		if len(entries) != 4 {
			t.Fatalf("%d entries, want 4: two tasks, each to its endpoint and the session's", len(entries))
		}
		targets, err := s.Targets(context.Background(), f.part, entries)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"ep_session": "alice", "ep_task": "root"}
		for i, e := range entries {
			tg := targets[i]
			if tg.Owner != want[e.EndpointID] || tg.Secret != "whsec_of_"+e.EndpointID || !strings.Contains(string(tg.List), e.EndpointID) {
				t.Errorf("the target of an entry to %s: owner %q, secret %q, list %s; want owner %q and its own secret",
					e.EndpointID, tg.Owner, tg.Secret, tg.List, want[e.EndpointID])
			}
		}
	})
}

// A claim goes on from where the last one stopped: Redis looks at no more
// than ten times the count of pending entries in one call, and the entries
// live replicas hold (their idle time kept short) fill that look, so a claim
// that always started at the first pending entry would never reach the one
// a dead replica left behind them.
func TestClaimOutboxReachesAnEntryBehindHeldOnes(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		const (
			held    = 20 // more than ten times the claim count
			minIdle = 50 * time.Millisecond
		)
		s := open(t, cfg)
		ctx := context.Background()
		f := outboxFixture(t, s, "alice", false, held+1, "")
		entries := readOutbox(t, s, f, "live")
		if len(entries) != held+1 {
			t.Fatalf("%d entries read, want %d", len(entries), held+1)
		}
		left := entries[held].ID
		storetest.WaitFor(t, "the last entry idle", func() bool {
			p, err := s.RDB.XPendingExt(ctx, &redis.XPendingExtArgs{
				Stream: s.Keys.Outbox(f.part), Group: store.OutboxGroup, Start: left, End: left, Count: 1,
			}).Result()
			return err == nil && len(p) == 1 && p[0].Idle >= 2*minIdle
		})
		var ids []string
		for _, e := range entries[:held] {
			ids = append(ids, e.ID)
		}
		if err := s.TouchOutbox(ctx, f.part, "live", ids); err != nil {
			t.Fatal(err)
		}
		var claimed []string
		from := "0-0"
		for range held + 1 { // one pass over the pending entries, one entry a call at the least
			got, next, err := s.ClaimOutbox(ctx, f.part, "taker", minIdle, from, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range got {
				claimed = append(claimed, e.ID)
			}
			if from = next; from == "0-0" {
				break
			}
		}
		if !slices.Contains(claimed, left) {
			t.Fatalf("one pass of claims took %v, not the entry left idle (%s)", claimed, left)
		}
	})
}

// An outbox entry carries the type of its event as the routing script
// matched it, through a retry too, and a dead letter keeps it; an entry
// routed by an earlier version, without it, gets it from its event.
func TestOutboxEntryCarriesItsType(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		f := outboxFixture(t, s, "alice", false, 1, "")
		entries := readOutbox(t, s, f, "reader")
		if len(entries) != 1 || entries[0].EventType != "task.created" {
			t.Fatalf("entries %+v, want one of type task.created", entries)
		}
		e := entries[0]
		if ok, err := s.SettleOutbox(ctx, f.part, e, store.Settlement{How: store.SettleRetry, RetryAt: f.now, Attempt: 2}); err != nil || !ok {
			t.Fatalf("retry: %v, %v", ok, err)
		}
		if n, err := s.MoveDueRetries(ctx, f.part, f.now.Add(time.Second), 10); err != nil || n != 1 {
			t.Fatalf("moved %d, %v", n, err)
		}
		again := readOutbox(t, s, f, "reader")
		if len(again) != 1 || again[0].EventType != "task.created" || again[0].Attempt != 2 {
			t.Fatalf("the retry: %+v", again)
		}
		if ok, err := s.SettleOutbox(ctx, f.part, again[0], store.Settlement{How: store.SettleDeadLetter, Reason: "gave up", Now: f.now, DeadLetter: time.Hour}); err != nil || !ok {
			t.Fatalf("dead letter: %v, %v", ok, err)
		}
		dead, err := s.DeadLetters(ctx, f.part, f.session, "", 10)
		if err != nil || len(dead) != 1 || dead[0].EventType != "task.created" {
			t.Fatalf("dead letters %+v, %v", dead, err)
		}

		err = s.RDB.XAdd(ctx, &redis.XAddArgs{Stream: s.Keys.Outbox(f.part), Values: []string{
			"ep", "ep_session", "sc", string(store.ScopeSession), "s", f.session, "t", "", "eid", "1-0",
			"e", `{"type":"session.created","sessionId":"x"}`, "n", "1",
		}}).Err()
		if err != nil {
			t.Fatal(err)
		}
		old := readOutbox(t, s, f, "reader")
		if len(old) != 1 || old[0].EventType != "session.created" {
			t.Fatalf("an entry without its type: %+v", old)
		}
	})
}
