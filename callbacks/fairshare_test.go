package callbacks_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/callbacks"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/endpoints"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/netguard"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
)

// created is the event these tests send: one per task made.
var created = []string{wire.EventTaskCreated}

// hangingReceivers are receivers that take every request and answer none
// until the test ends, counting any they answer before that.
type hangingReceivers struct {
	all      []*receivertest.Receiver
	answered atomic.Int64
}

// add starts one more on the loopback address ip.
func (h *hangingReceivers) add(t *testing.T, ip string) *receivertest.Receiver {
	t.Helper()
	rc := receivertest.NewAt(t, ip, nil)
	rc.Answer = func(n int, w http.ResponseWriter, r *http.Request) {
		rc.Block(n, w, r)
		h.answered.Add(1)
	}
	h.all = append(h.all, rc)
	return rc
}

// holding is how many requests they hold: every one they got, as none was
// answered.
func (h *hangingReceivers) holding() int {
	n := 0
	for _, rc := range h.all {
		n += len(rc.Got())
	}
	return n
}

// createTasks makes n tasks of who in a session: each sends task.created to
// the session's endpoints.
func (r replica) createTasks(t *testing.T, who authz.Principal, sessionID string, n int) {
	t.Helper()
	for range n {
		if _, err := r.tasks.Create(context.Background(), who, tasks.CreateInput{SessionID: sessionID}, idem.Key{}); err != nil {
			t.Fatal(err)
		}
	}
}

// quietTenant has another owner's session, with one receiver on a host of
// its own, send a burst once the hanging receivers hold share requests (the
// share named), and waits for all of it. Each event is in the outbox behind
// every one to the hanging receivers (one partition), so once the burst is
// in, the dispatcher has placed them all: the hanging receivers then hold no
// more than share, and the share named held some back.
func quietTenant(t *testing.T, r replica, hanging *hangingReceivers, share int, name string) {
	t.Helper()
	what := "the " + name + "'s share"
	storetest.WaitFor(t, what+" under way", func() bool { return hanging.holding() >= share })
	const burst = 20
	recv := receivertest.NewAt(t, "127.0.0.2", nil)
	b := authz.Principal{ID: "tenant-b"}
	ses := r.createSessionOf(t, b, wire.EndpointRequest{URL: recv.URL, Kinds: created})
	r.createTasks(t, b, ses.SessionID, burst)
	storetest.WaitFor(t, "every notification of the other tenant", func() bool { return len(recv.Got()) >= burst })
	if n := hanging.answered.Load(); n != 0 {
		t.Fatalf("the hanging receivers answered %d requests before the other tenant had its notifications", n)
	}
	if n := hanging.holding(); n > share {
		t.Fatalf("the hanging receivers hold %d deliveries, more than %s of %d", n, what, share)
	}
	if got := testutil.ToFloat64(r.metrics.Notify.Deferred.WithLabelValues(name)); got == 0 {
		t.Errorf("no delivery counted as deferred for %s", what)
	}
}

// One owner's receivers that never answer hold that owner's share of a
// replica's deliveries (a quarter: 16 of 64) and no more, however many
// endpoints it has: here 8, two to a host on four hosts, each with more
// events than its endpoint's share (8), so that only the owner's share
// holds them back. Another owner's notifications are all delivered while
// the first owner's receivers still hang.
func TestDispatcherSharesSlotsByOwner(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		const share = 16
		r := startReplicaOn(t, sc, 1, netguard.Guard{AllowPrivate: true}, callbacks.DispatcherConfig{Timeout: time.Minute})
		hanging := &hangingReceivers{}
		var eps []wire.EndpointRequest
		for i := range 8 {
			rc := hanging.add(t, fmt.Sprintf("127.0.0.%d", 3+i/2))
			eps = append(eps, wire.EndpointRequest{URL: rc.URL, Kinds: created})
		}
		a := authz.Principal{ID: "tenant-a"}
		ses := r.createSessionOf(t, a, eps...)
		r.createTasks(t, a, ses.SessionID, 16) // 128 deliveries: twice every slot

		quietTenant(t, r, hanging, share, "owner")
	})
}

// Many owners pointing at one host that never answers hold that host's
// share of a replica's deliveries (a quarter: 16 of 64) and no more: here 8
// owners, each with one endpoint there and more events than the endpoint's
// share, so that only the host's share holds them back. Another host's
// notifications are all delivered while that host still hangs.
func TestDispatcherSharesSlotsByHost(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		const share = 16
		r := startReplicaOn(t, sc, 1, netguard.Guard{AllowPrivate: true}, callbacks.DispatcherConfig{Timeout: time.Minute})
		hanging := &hangingReceivers{}
		for i := range 8 {
			rc := hanging.add(t, "127.0.0.3")
			who := authz.Principal{ID: fmt.Sprintf("tenant-%d", i)}
			ses := r.createSessionOf(t, who, wire.EndpointRequest{URL: rc.URL, Kinds: created})
			r.createTasks(t, who, ses.SessionID, 8) // 64 deliveries in all: every slot
		}

		quietTenant(t, r, hanging, share, "host")
	})
}

// oneAtATime starts a replica whose endpoints take one delivery at a time
// (an endpoint's share of 4 slots), and sends events to a session's endpoint
// whose receiver hangs until released.
func oneAtATime(t *testing.T, sc store.Config, events int) (replica, *receivertest.Receiver, sessions.Session) {
	t.Helper()
	r := startReplicaOn(t, sc, 1, netguard.Guard{AllowPrivate: true}, callbacks.DispatcherConfig{Concurrency: 4})
	recv := (&hangingReceivers{}).add(t, "127.0.0.1")
	ses := r.createSession(t, wire.EndpointRequest{URL: recv.URL, Kinds: created})
	r.createTasks(t, owner, ses.SessionID, events)
	return r, recv, ses
}

// A delivery that waits for its share stays pending in the consumer group,
// unacknowledged and not moved to the retry queue, and goes out once the
// deliveries before it end: each event reaches the receiver once.
func TestDispatcherKeepsWaitingDeliveriesPending(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		const events = 3
		r, recv, _ := oneAtATime(t, sc, events)

		ctx := context.Background()
		outbox, retries := r.store.Keys.Outbox(0), r.store.Keys.OutboxRetries(0)
		storetest.WaitFor(t, "one delivery under way and the others placed", func() bool {
			return len(recv.Got()) == 1 && (testutil.ToFloat64(r.metrics.Notify.Waiting) == events-1 ||
				testutil.ToFloat64(r.metrics.Notify.Deliveries.WithLabelValues("deferred")) > 0)
		})
		pending, err := r.store.RDB.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: outbox, Group: store.OutboxGroup, Start: "-", End: "+", Count: 10,
		}).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) != events {
			t.Fatalf("%d entries pending, want all %d: a waiting one was acknowledged", len(pending), events)
		}
		if n, err := r.store.RDB.ZCard(ctx, retries).Result(); err != nil || n != 0 {
			t.Fatalf("%d entries in the retry queue (%v), want none", n, err)
		}
		if n := testutil.ToFloat64(r.metrics.Notify.Deliveries.WithLabelValues("deferred")); n != 0 {
			t.Fatalf("%v deliveries put back in the outbox, want none", n)
		}

		recv.Release()
		storetest.WaitFor(t, "every event delivered and settled", func() bool {
			n, err := r.store.RDB.XLen(ctx, outbox).Result()
			return err == nil && n == 0 && len(recv.Got()) >= events
		})
		seen := map[string]bool{}
		for _, d := range recv.Got() {
			if seen[d.ID()] {
				t.Fatalf("event %s delivered twice", d.ID())
			}
			seen[d.ID()] = true
		}
		if len(seen) != events {
			t.Fatalf("%d events delivered, want %d", len(seen), events)
		}
	})
}

// A delivery that waited for its share reads its endpoint again before it
// goes: the endpoint removed meanwhile, it is settled unsent, as removing an
// endpoint drops what is queued for it.
func TestDispatcherDropsWaitingDeliveriesOfARemovedEndpoint(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		const events = 3
		r, recv, ses := oneAtATime(t, sc, events)
		storetest.WaitFor(t, "one delivery under way and the others waiting", func() bool {
			return len(recv.Got()) == 1 && testutil.ToFloat64(r.metrics.Notify.Waiting) == events-1
		})

		ctx := context.Background()
		o := endpoints.Owner{Session: true, ID: ses.SessionID}
		if _, err := r.registrar.Remove(ctx, owner, o, ses.Notify[0].EndpointID); err != nil {
			t.Fatal(err)
		}
		recv.Release()
		// An entry leaves the outbox before its outcome is counted: wait for
		// both.
		settled := func() (n float64) {
			for _, outcome := range []string{"delivered", "dropped", "skipped", "endpoint_dead", "dead_lettered"} {
				n += testutil.ToFloat64(r.metrics.Notify.Deliveries.WithLabelValues(outcome))
			}
			return n
		}
		storetest.WaitFor(t, "every entry settled and counted", func() bool {
			n, err := r.store.RDB.XLen(ctx, r.store.Keys.Outbox(0)).Result()
			return err == nil && n == 0 && settled() == events
		})
		if n := len(recv.Got()); n != 1 {
			t.Fatalf("the receiver got %d requests, want only the one under way when its endpoint was removed", n)
		}
		if n := testutil.ToFloat64(r.metrics.Notify.Deliveries.WithLabelValues("skipped")); n != events-1 {
			t.Fatalf("%v deliveries skipped, want the %d that waited", n, events-1)
		}
	})
}
