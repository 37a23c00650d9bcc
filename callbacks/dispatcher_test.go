package callbacks_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/callbacks"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/endpoints"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/netguard"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

var owner = authz.Principal{ID: "dispatcher-test"}

// The answer links of package tasks are what app hands the dispatcher.
var _ callbacks.AnswerLinks = (*tasks.AnswerLinks)(nil)

// replica is one replica's notification path on a store of the test's own:
// the registrar behind session and task creates, and a dispatcher.
type replica struct {
	store      *store.Store
	sessions   *sessions.Service
	tasks      *tasks.Service
	dispatcher *callbacks.Dispatcher
	metrics    *metrics.Metrics // the dispatcher's
	registrar  *endpoints.Registrar
}

// testVault seals endpoint secrets for every replica of a test, as the
// keys of TASKHOOK_VAULT_KEYS would.
var testVault = authz.NewRandomVault()

// startReplica opens a standalone Redis store with the given partitions and
// starts a dispatcher whose registrar and sender share guard (see
// startReplicaOn).
func startReplica(t *testing.T, partitions int, guard netguard.Guard, cfg callbacks.DispatcherConfig) replica {
	t.Helper()
	return startReplicaOn(t, storetest.Standalone(t), partitions, guard, cfg)
}

// startReplicaOn opens a store of sc with the given partitions and starts a
// dispatcher whose registrar and sender share guard. The store is closed
// before the dispatcher is stopped, so a reader waiting on the outbox ends
// at once whatever cfg.Block is.
func startReplicaOn(t *testing.T, sc store.Config, partitions int, guard netguard.Guard, cfg callbacks.DispatcherConfig) replica {
	t.Helper()
	sc.Partitions = partitions
	s, err := store.Open(context.Background(), sc, metrics.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := waits.New(waits.Config{}, nil, time.Now) // no fan-in: nothing here waits
	reg := endpoints.NewRegistrar(guard, s, testVault, nil)
	cfg.Guard = guard
	cfg.Vault = testVault
	m := metrics.New()
	d := callbacks.NewDispatcher(cfg, s, m, nil, time.Now)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return replica{
		store:      s,
		sessions:   sessions.NewService(sessions.Config{Notify: reg, Vault: testVault}, s, w, time.Now),
		tasks:      tasks.NewService(tasks.Config{Notify: reg, Vault: testVault}, s, w, metrics.New(), time.Now),
		dispatcher: d,
		metrics:    m,
		registrar:  reg,
	}
}

// createSession opens a session of the tests' owner with the given
// endpoints.
func (r replica) createSession(t *testing.T, eps ...wire.EndpointRequest) sessions.Session {
	t.Helper()
	return r.createSessionOf(t, owner, eps...)
}

// createSessionOf opens a session of who with the given endpoints.
func (r replica) createSessionOf(t *testing.T, who authz.Principal, eps ...wire.EndpointRequest) sessions.Session {
	t.Helper()
	raw, _, err := r.sessions.Create(context.Background(), who, sessions.CreateInput{Notify: eps}, idem.Key{})
	if err != nil {
		t.Fatal(err)
	}
	var ses sessions.Session
	if err := json.Unmarshal(raw, &ses); err != nil {
		t.Fatal(err)
	}
	return ses
}

// A reader waiting for its partition's next entry holds no delivery slot:
// with one slot and a read that waits a minute, the other partition's
// reader, which has nothing to read, never keeps the busy partition's
// events waiting.
func TestDispatcherWaitsForEntriesWithoutHoldingASlot(t *testing.T) {
	recv := receivertest.New(t, nil)
	r := startReplica(t, 2, netguard.Guard{AllowPrivate: true}, callbacks.DispatcherConfig{
		Concurrency: 1, Block: time.Minute,
	})
	ses := r.createSession(t, wire.EndpointRequest{URL: recv.URL, Kinds: []string{wire.EventTaskCreated}})
	const n = 5 // all in the session's partition
	for range n {
		if _, err := r.tasks.Create(context.Background(), owner, tasks.CreateInput{SessionID: ses.SessionID}, idem.Key{}); err != nil {
			t.Fatal(err)
		}
	}
	storetest.WaitFor(t, "every task.created delivered", func() bool { return len(recv.Got()) >= n })
}

// publicResolver answers every name with one public address, as a name
// might resolve when it is registered, before its owner points it at an
// address inside the network.
type publicResolver struct{}

func (publicResolver) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.ParseIP("93.184.215.14")}}, nil
}

// A host name that resolves to a public address at registration and to a
// private one when the dispatcher connects is refused at the dial: the
// receiver never sees a request, and the endpoint is marked dead through the
// dispatcher's settlement, with the reason.
func TestDispatcherRefusesANameThatResolvesPrivateAtConnect(t *testing.T) {
	recv := receivertest.New(t, nil)
	u, err := url.Parse(recv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// "localhost" passes registration through the resolver above, and the
	// dialler then resolves it to loopback.
	target := "http://localhost:" + u.Port() + "/notify"
	guard := netguard.Guard{Resolver: publicResolver{}}
	if err := guard.CheckURL(context.Background(), target); err != nil {
		t.Fatalf("registration refused %s: %v", target, err)
	}
	r := startReplica(t, 1, guard, callbacks.DispatcherConfig{})
	ses := r.createSession(t, wire.EndpointRequest{URL: target, Kinds: []string{wire.EventSessionCreated}})
	if len(ses.Notify) != 1 || ses.Notify[0].Status != wire.EndpointActive {
		t.Fatalf("the endpoint as registered: %+v", ses.Notify)
	}
	var ep wire.Endpoint
	storetest.WaitFor(t, "the endpoint marked dead", func() bool {
		got, _, err := r.sessions.Get(context.Background(), owner, ses.SessionID)
		if err != nil || len(got.Notify) != 1 {
			return false
		}
		ep = got.Notify[0]
		return ep.Status == wire.EndpointDead
	})
	if ep.DeadReason != "target address not allowed" {
		t.Errorf("dead reason %q, want the guard's refusal", ep.DeadReason)
	}
	if n := len(recv.Got()); n != 0 {
		t.Errorf("the receiver got %d requests past the guard", n)
	}
}

// Stop closes the connections the dispatcher kept open to endpoints between
// deliveries: the receiver sees its end of each one closed.
func TestDispatcherStopClosesIdleConnections(t *testing.T) {
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	delivered := make(chan struct{}, 1)
	recv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		delivered <- struct{}{}
	}))
	recv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			open[c] = true
		case http.StateClosed, http.StateHijacked:
			delete(open, c)
		}
	}
	recv.Start()
	t.Cleanup(recv.Close)
	opened := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(open)
	}
	r := startReplica(t, 1, netguard.Guard{AllowPrivate: true}, callbacks.DispatcherConfig{})
	r.createSession(t, wire.EndpointRequest{URL: recv.URL, Kinds: []string{wire.EventSessionCreated}})
	<-delivered
	if n := opened(); n != 1 {
		t.Fatalf("%d connections open to the receiver after one delivery, want 1 kept for the next", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.dispatcher.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.WaitFor(t, "the connection closed", func() bool { return opened() == 0 })
}

// An entry whose delivery is still under way is not sent again when this
// replica's own claim of idle entries takes it back (its mark as held came
// later than ClaimIdle): here the claim idle time is shorter than the
// marking interval, so every claim takes the entry back.
func TestDispatcherSendsNoEntryItHoldsTwice(t *testing.T) {
	recv := receivertest.New(t, nil)
	recv.Answer = recv.Block
	r := startReplica(t, 1, netguard.Guard{AllowPrivate: true}, callbacks.DispatcherConfig{
		ClaimIdle: time.Millisecond, Block: 20 * time.Millisecond,
	})
	r.createSession(t, wire.EndpointRequest{URL: recv.URL, Kinds: []string{wire.EventSessionCreated}})
	storetest.WaitFor(t, "the delivery", func() bool { return len(recv.Got()) == 1 })
	outbox := r.store.Keys.Outbox(0)
	storetest.WaitFor(t, "the entry claimed back twice", func() bool {
		p, err := r.store.RDB.XPendingExt(context.Background(), &redis.XPendingExtArgs{
			Stream: outbox, Group: store.OutboxGroup, Start: "-", End: "+", Count: 10,
		}).Result()
		return err == nil && len(p) == 1 && p[0].RetryCount >= 3
	})
	if n := len(recv.Got()); n != 1 {
		t.Fatalf("the receiver got %d requests for one entry under way", n)
	}
	recv.Release()
	storetest.WaitFor(t, "the entry settled", func() bool {
		n, err := r.store.RDB.XLen(context.Background(), outbox).Result()
		return err == nil && n == 0
	})
}
