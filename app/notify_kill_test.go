package app_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// outbox reads one partition's notification outbox as Redis holds it.
type outbox struct {
	rdb     *redis.Client
	stream  string
	retries string
}

func newOutbox(t *testing.T, sc store.Config, sessionID string) outbox {
	t.Helper()
	rdb := storetest.Redis(t, sc)
	p, err := ids.PartitionOf(sessionID, ids.SessionPrefix, 16) // the servers' default partitions
	if err != nil {
		t.Fatal(err)
	}
	keys := store.NewKeys(sc.Prefix)
	return outbox{rdb: rdb, stream: keys.Outbox(p), retries: keys.OutboxRetries(p)}
}

// pending is the outbox's entries taken and not settled: by entry id, the
// consumer holding it and how often it was handed out.
func (o outbox) pending(t *testing.T) map[string]redis.XPendingExt {
	t.Helper()
	got, err := o.rdb.XPendingExt(context.Background(), &redis.XPendingExtArgs{
		Stream: o.stream, Group: store.OutboxGroup, Start: "-", End: "+", Count: 1000,
	}).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]redis.XPendingExt{}
	for _, p := range got {
		out[p.ID] = p
	}
	return out
}

// settled reports whether nothing is left to deliver: no entry in the
// outbox, taken or not, and none waiting for a retry.
func (o outbox) settled(t *testing.T) bool {
	t.Helper()
	ctx := context.Background()
	n, err := o.rdb.XLen(ctx, o.stream).Result()
	if err != nil {
		t.Fatal(err)
	}
	r, err := o.rdb.ZCard(ctx, o.retries).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 0 && r == 0
}

// consumers is who holds the pending entries, and how many each.
func consumers(pending map[string]redis.XPendingExt) map[string]int {
	out := map[string]int{}
	for _, p := range pending {
		out[p.Consumer]++
	}
	return out
}

// A replica killed while it holds deliveries under way loses none of them:
// another replica takes each over once it has been left ClaimIdle, and
// delivers it again with the same webhook-id and body. While it lived, each
// event was sent once, however long the receiver held it: an entry under way
// is taken over neither by its own replica nor by another one.
func TestNotificationsSurviveAKilledReplica(t *testing.T) {
	t.Parallel()
	const (
		events    = 12 // fewer than one endpoint's share of a replica's deliveries (64/4): all are under way at once
		claimIdle = 2 * time.Second
	)
	sc := storetest.Standalone(t)
	env := []string{
		"TASKHOOK_ALLOW_PRIVATE_TARGETS=true", "TASKHOOK_NOTIFY_CLAIM_IDLE=" + claimIdle.String(),
		// Far above how long the test holds a delivery: A's deliveries
		// end with A, not with a timeout.
		"TASKHOOK_NOTIFY_TIMEOUT=2m", "TASKHOOK_NOTIFY_RETRY_BASE=50ms",
	}
	recv := receivertest.New(t, nil)
	// The receiver holds every request until released and notes when each
	// came.
	var mu sync.Mutex
	arrived := map[string][]time.Time{}
	recv.Answer = func(n int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		id := r.Header.Get("webhook-id")
		arrived[id] = append(arrived[id], time.Now())
		mu.Unlock()
		recv.Block(n, w, r)
	}

	cmdA, urlA := apptest.StartProcess(t, sc, env...)
	ctx := context.Background()
	token := apptest.Token(t, "notify-kill")
	clA := client.New(urlA, token)
	ses, err := clA.CreateSession(ctx, client.CreateSessionInput{
		Notify: []client.EndpointRequest{{URL: recv.URL, Kinds: []string{"task.message"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	secret := ses.Notify[0].Secret
	task := taskWithMessages(t, ctx, clA, ses.SessionID, events)
	box := newOutbox(t, sc, ses.SessionID)

	// A holds every event in flight: the receiver has them all, the outbox
	// has them all pending with A's consumer.
	waitDeliveries(t, recv, events)
	pendingA := box.pending(t)
	holders := consumers(pendingA)
	if len(pendingA) != events || len(holders) != 1 {
		t.Fatalf("before the kill: %d entries pending with %v, want %d with replica A alone", len(pendingA), holders, events)
	}
	var consumerA string
	for c := range holders {
		consumerA = c
	}
	// B starts now: every entry is in A's hands already. The claim idle
	// time is what is under test here: A keeps every delivery under way for
	// three times that, with B about, before it dies.
	_, urlB := apptest.StartProcess(t, sc, env...)
	heldSince := time.Now()
	storetest.WaitFor(t, "the deliveries held past the claim idle time", func() bool {
		return time.Since(heldSince) > 3*claimIdle
	})
	if n := len(recv.Got()); n != events {
		t.Fatalf("%d requests for %d events while A held them: an entry under way was taken again", n, events)
	}
	if p := box.pending(t); !slices.Equal(slices.Sorted(maps.Keys(p)), slices.Sorted(maps.Keys(pendingA))) || consumers(p)[consumerA] != events {
		t.Fatalf("while A lived its entries went to %v", consumers(p))
	}

	if err := cmdA.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmdA.Wait()
	killedAt := time.Now()

	// B takes over every entry A held, and sends each again.
	storetest.WaitFor(t, "replica B to take over A's deliveries", func() bool {
		p := box.pending(t)
		return len(p) == events && consumers(p)[consumerA] == 0 && len(recv.Got()) >= 2*events
	})
	recv.Release()
	storetest.WaitFor(t, "every notification settled", func() bool { return box.settled(t) })

	log, err := client.New(urlB, token).TaskEvents(ctx, task.TaskID, client.EventsParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range log.Events {
		if e.Type == "task.message" {
			want = append(want, e.ID)
		}
	}
	if len(want) != events {
		t.Fatalf("the task's log holds %d messages, want %d", len(want), events)
	}
	bodies := map[string]string{}
	times := map[string]int{}
	for _, d := range recv.Got() {
		ev, err := client.VerifyNotification(secret, d.Header, d.Body)
		if err != nil {
			t.Fatalf("a delivery does not verify: %v", err)
		}
		if ev.ID != d.ID() {
			t.Fatalf("webhook-id %s carries event %s", d.ID(), ev.ID)
		}
		if b, seen := bodies[d.ID()]; seen && b != string(d.Body) {
			t.Fatalf("webhook-id %s came with two bodies:\n%s\n%s", d.ID(), b, d.Body)
		}
		bodies[d.ID()] = string(d.Body)
		times[d.ID()]++
	}
	var got []string
	for id, n := range times {
		got = append(got, id)
		if n != 2 {
			t.Errorf("event %s was sent %d times, want twice: once by A, cut short by the kill, once by B", id, n)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want the events %v", got, want)
	}
	mu.Lock()
	var takeover []time.Duration
	for _, at := range arrived {
		takeover = append(takeover, at[len(at)-1].Sub(killedAt))
	}
	mu.Unlock()
	slices.Sort(takeover)
	t.Logf("%d events, %d requests (%d cut short by the kill, %d repeats by B with the same webhook-id), none lost; "+
		"B resent them %v to %v after the kill (claim idle %v)",
		events, len(recv.Got()), events, len(recv.Got())-events, takeover[0].Round(time.Millisecond),
		takeover[len(takeover)-1].Round(time.Millisecond), claimIdle)
}
