package callbacks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/endpoints"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/netguard"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/worker"
)

// DispatcherConfig tunes the dispatcher. Zero values are the defaults.
type DispatcherConfig struct {
	Concurrency   int            // deliveries under way at once on this replica; default 64
	PerEndpoint   int            // of those, to one endpoint; default Concurrency/8 (at least 1)
	PerOwner      int            // of those, for one owner's endpoints; default Concurrency/4 (at least 1)
	PerHost       int            // of those, to one host; default Concurrency/4 (at least 1)
	WaitBytes     int            // room for deliveries waiting for their share; default 32 MiB
	Timeout       time.Duration  // one attempt; default 10s
	RetryBase     time.Duration  // first backoff step; default 15s
	MaxAttempts   int            // attempts before a notification is dead-lettered; default 8
	ClaimIdle     time.Duration  // an entry pending this long was left by a dead replica; default Timeout + 10s
	Block         time.Duration  // how long one outbox read waits; default 2s
	DeadLetterTTL time.Duration  // how long dead letters are kept; default 30 days
	Consumer      string         // this replica's name in the consumer group; default a random one
	Guard         netguard.Guard // the SSRF guard of every connection
	// Vault opens endpoint secrets: endpoints.Registrar's, which sealed them.
	// nil uses each secret as stored (a store written before secrets were
	// sealed, in tests).
	Vault *authz.Vault
	// Links shows stored events and a task's requests as readers see
	// them, with the answer links of open requests (tasks.AnswerLinks); nil
	// sends them as stored.
	Links AnswerLinks
	// Slack posts the events of Slack endpoints; nil: they are dead on
	// their first event.
	Slack *SlackConfig
	// Push writes the deliveries of A2A push configs (endpoints of format
	// wire.FormatA2A); nil sends them the event as readers see it.
	Push PushFormat
}

func (c DispatcherConfig) withDefaults() DispatcherConfig {
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.PerEndpoint <= 0 {
		c.PerEndpoint = max(1, c.Concurrency/8)
	}
	if c.PerOwner <= 0 {
		c.PerOwner = max(1, c.Concurrency/4)
	}
	if c.PerHost <= 0 {
		c.PerHost = max(1, c.Concurrency/4)
	}
	if c.WaitBytes <= 0 {
		c.WaitBytes = 32 << 20
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.RetryBase <= 0 {
		c.RetryBase = 15 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 8
	}
	if c.ClaimIdle <= 0 {
		c.ClaimIdle = c.Timeout + 10*time.Second
	}
	if c.Block <= 0 {
		c.Block = 2 * time.Second
	}
	if c.DeadLetterTTL <= 0 {
		c.DeadLetterTTL = 30 * 24 * time.Hour
	}
	if c.Consumer == "" {
		c.Consumer = "replica-" + ids.Random(12)
	}
	if c.Links == nil {
		c.Links = asStored{}
	}
	return c
}

// AnswerLinks is what the dispatcher reads of tasks: the answer links that
// readers see in a task's open requests and the store never holds. The
// answer links of package tasks are one (app passes them in); callbacks
// does not import tasks.
type AnswerLinks interface {
	// Event is a stored event as readers see it.
	Event(stored []byte) []byte
	// ShowRequests does the same to a task's requests, in place, for the
	// Slack message of a task: a sign-in's button links to its attempt.
	ShowRequests(taskID string, reqs []wire.InputRequest)
}

// PushFormat writes an event as an A2A push config's delivery body (an
// A2A StreamResponse). The A2A face's is one (app passes it in); callbacks
// does not import the faces.
type PushFormat interface {
	// PushBody is the body of an event as readers see it; false for an
	// event that makes no A2A update (it is then not sent).
	PushBody(event []byte) ([]byte, bool)
}

// PushTokenHeader carries an A2A push config's token.
const PushTokenHeader = "A2A-Notification-Token"

// asStored shows events and requests as the store holds them, without
// links.
type asStored struct{}

func (asStored) Event(stored []byte) []byte               { return stored }
func (asStored) ShowRequests(string, []wire.InputRequest) {}

// Dispatcher delivers the outbox: one reader per partition takes entries
// through the partition's consumer group and hands each to a delivery of
// its own, so a slow receiver holds only its own deliveries. Every entry is
// settled by one script (delivered, retried later, dead-lettered, or its
// endpoint marked dead); an entry whose replica died before settling it is
// taken over by another replica after ClaimIdle. While a replica lives, it
// marks the entries in its hands as such more often than that, so a
// delivery that takes longer than ClaimIdle is not sent a second time.
// Delivery is therefore at least once, and a repeat carries the same
// webhook-id.
//
// Fair shares. A replica has Concurrency delivery slots, and a receiver that
// accepts the connection and never answers holds its slot until Timeout:
// nothing can take a slot back. So no one party may hold many. A delivery
// starts only while its endpoint has fewer than PerEndpoint deliveries under
// way, its owner (the principal owning the session or task that holds the
// endpoint, read with the endpoint's record, in the same round trip) fewer
// than PerOwner, and its destination host (the URL's host name, whatever
// the port; Slack's API for Slack endpoints) fewer than PerHost. With the
// defaults, an eighth, a quarter and a quarter, one tenant's receivers, on
// however many endpoints and sessions, and one host, whoever points at it,
// hold a quarter of the slots at most: the rest stay free for the others. A
// tenant alone still has a quarter, and one hanging endpoint leaves it half
// of that.
//
// A delivery over a share waits, holding no slot, while the reader reads on:
// its entry stays pending in the consumer group, unacknowledged, and marked
// as held like the deliveries under way, so a replica that dies with it
// waiting leaves it to another replica after ClaimIdle. It starts as soon as
// its shares have room, in its endpoint's order, the endpoints taking turns,
// once its endpoint's record is read again (one round trip for a delivery
// that waited): an endpoint removed or dead in the meantime is not called.
// The waiting room is WaitBytes, a quarter of it at most for one owner or one
// host; a delivery that finds no room in it goes back to the retry queue for
// a second, without spending an attempt (the settlement script moves it
// there in the step that acknowledges it).
type Dispatcher struct {
	cfg     DispatcherConfig
	store   *store.Store
	sender  *Sender
	slack   *slackAPI // nil without a Slack configuration
	metrics *metrics.Metrics
	log     *slog.Logger
	now     func() time.Time

	slots     chan struct{}   // one per delivery under way
	reader    *store.Blocking // the readers' own client: closing it ends their reads
	slackHost string          // the host of Slack's API: the host every Slack endpoint shares

	mu        sync.Mutex
	started   bool
	stopRead  context.CancelFunc // ends the readers
	stopSends context.CancelFunc // abandons deliveries under way (left pending for another replica)
	stopTouch context.CancelFunc // ends the marking of held entries
	readers   sync.WaitGroup
	sends     sync.WaitGroup
	toucher   sync.WaitGroup
	shares    *shares               // deliveries under way and waiting, by endpoint, owner and host
	stopping  bool                  // Stop has begun: nothing waiting starts any more
	sendCtx   context.Context       // the context of deliveries (abandoned at shutdown)
	held      []map[string]struct{} // by partition, the entries taken and not yet settled or given up
	oldest    []time.Time           // each partition's oldest undelivered notification
}

// NewDispatcher makes the dispatcher; Start runs it. now is the clock
// (time.Now in production).
func NewDispatcher(cfg DispatcherConfig, s *store.Store, m *metrics.Metrics, log *slog.Logger, now func() time.Time) *Dispatcher {
	cfg = cfg.withDefaults()
	d := &Dispatcher{
		cfg: cfg, store: s, metrics: m, log: log, now: now,
		sender: NewSender(SenderConfig{Timeout: cfg.Timeout, Guard: cfg.Guard}),
		slots:  make(chan struct{}, cfg.Concurrency),
		shares: newShares(shareLimits{
			endpoint: cfg.PerEndpoint, owner: cfg.PerOwner, host: cfg.PerHost, waitBytes: cfg.WaitBytes,
		}),
		held:      make([]map[string]struct{}, s.Partitions),
		slackHost: hostOf(DefaultSlackAPIURL),
	}
	if cfg.Slack != nil && cfg.Slack.Token != "" {
		d.slack = newSlackAPI(*cfg.Slack, cfg.Timeout)
		d.slackHost = hostOf(d.slack.cfg.APIURL)
	}
	return d
}

// Start runs one reader per partition. It is idempotent; after Stop it does
// nothing.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return nil
	}
	d.started = true
	base := context.WithoutCancel(ctx)
	var readCtx, touchCtx context.Context
	readCtx, d.stopRead = context.WithCancel(store.Background(base))
	d.sendCtx, d.stopSends = context.WithCancel(store.Background(base))
	d.reader = d.store.NewBlocking(d.store.Partitions)
	touchCtx, d.stopTouch = context.WithCancel(store.Background(base))
	for p := 0; p < d.store.Partitions; p++ {
		d.readers.Add(1)
		go d.read(readCtx, p)
	}
	d.toucher.Add(1)
	go d.touch(touchCtx)
	return nil
}

// Stop ends the readers and waits, within ctx, for the deliveries under way
// to finish; those still running when ctx ends are abandoned unsettled and
// another replica delivers them. Then it closes the connections kept open
// to endpoints. It is idempotent.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.mu.Lock()
	if !d.started {
		d.started = true // a Start after Stop runs nothing
		d.stopRead, d.stopSends, d.stopTouch = func() {}, func() {}, func() {}
	}
	d.stopping = true
	stopRead, stopSends, stopTouch, reader := d.stopRead, d.stopSends, d.stopTouch, d.reader
	d.mu.Unlock()
	defer d.sender.CloseIdleConnections()
	// The entries still held are marked until their deliveries end, so
	// that none is taken over while it is being finished.
	defer d.toucher.Wait()
	defer stopTouch()
	stopRead()
	if reader != nil {
		_ = reader.Close() // ends the reads waiting in Redis
	}
	ended := func() { d.readers.Wait(); d.sends.Wait() }
	// What waits for a share is left pending: another replica delivers it.
	defer d.dropWaiting()
	if err := worker.Wait(ctx, ended); err != nil {
		stopSends()
		ended()
		return fmt.Errorf("notification deliveries abandoned at shutdown: %w", err)
	}
	return nil
}

// maintenance is how often a reader moves due retries back into its outbox
// and looks for entries a dead replica left.
const maintenance = time.Second

func (d *Dispatcher) read(ctx context.Context, p int) {
	defer d.readers.Done()
	backoff := 100 * time.Millisecond
	var lastClaim, lastDue, lastAge time.Time
	claimFrom := "0-0" // where the pass of claims under way goes on; "0-0": none under way
	ready := false
	for ctx.Err() == nil {
		if !ready {
			if err := d.store.EnsureOutboxGroup(ctx, p); err != nil {
				d.pause(ctx, &backoff, p, err)
				continue
			}
			ready = true
		}
		if now := d.now(); now.Sub(lastDue) >= maintenance {
			lastDue = now
			if _, err := d.store.MoveDueRetries(ctx, p, now, 256); err != nil {
				d.pause(ctx, &backoff, p, err)
				continue
			}
		}
		if now := d.now(); now.Sub(lastAge) >= ageEvery {
			lastAge = now
			d.measureAge(ctx, p)
		}
		n := d.acquire(ctx, 32)
		if n == 0 {
			return
		}
		var entries []store.OutboxEntry
		var err error
		if now := d.now(); claimFrom != "0-0" || now.Sub(lastClaim) >= d.cfg.ClaimIdle/2 {
			entries, claimFrom, err = d.store.ClaimOutbox(ctx, p, d.cfg.Consumer, d.cfg.ClaimIdle, claimFrom, n)
			if err == nil && claimFrom == "0-0" {
				// Every pending entry was looked at; until then, the next
				// loop goes on from where this claim stopped.
				lastClaim = now
			}
			entries = d.hold(p, entries)
		}
		if err == nil && len(entries) == 0 {
			entries, err = d.reader.ReadOutbox(ctx, p, d.cfg.Consumer, n, 0)
			entries = d.hold(p, entries)
		}
		if err == nil && len(entries) == 0 && claimFrom == "0-0" {
			// Nothing to do: wait for an entry holding no slot. A slot held
			// through a blocking read idles while other partitions wait
			// for one, up to Block for each of them.
			d.release(n)
			n = 0
			entries, err = d.reader.ReadOutbox(ctx, p, d.cfg.Consumer, 1, d.cfg.Block)
			entries = d.hold(p, entries)
			if err == nil && len(entries) > 0 {
				if n = d.acquire(ctx, 1); n == 0 {
					d.unhold(p, entries...) // left pending: taken over after ClaimIdle
					return
				}
			}
		}
		if err != nil {
			d.release(n)
			d.pause(ctx, &backoff, p, err)
			continue
		}
		backoff = 100 * time.Millisecond
		d.release(n - len(entries))
		if len(entries) > 0 {
			d.dispatch(ctx, p, entries)
		}
	}
}

// hold notes entries as taken by this replica, to be marked as in its hands
// until settled, and returns them less those it holds already: an entry
// claimed back from itself (its mark came late) is under way here.
func (d *Dispatcher) hold(p int, entries []store.OutboxEntry) []store.OutboxEntry {
	if len(entries) == 0 {
		return entries
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held[p] == nil {
		d.held[p] = map[string]struct{}{}
	}
	out := entries[:0]
	for _, e := range entries {
		if _, ok := d.held[p][e.ID]; ok {
			continue
		}
		d.held[p][e.ID] = struct{}{}
		out = append(out, e)
	}
	return out
}

// unhold ends the marking of entries: settled, or left for another replica
// (or this one) to take over after ClaimIdle.
func (d *Dispatcher) unhold(p int, entries ...store.OutboxEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range entries {
		delete(d.held[p], e.ID)
	}
}

// touchEvery is how often the entries held are marked: well within
// ClaimIdle, so that a late mark or two still comes in time.
func (d *Dispatcher) touchEvery() time.Duration { return max(d.cfg.ClaimIdle/4, 10*time.Millisecond) }

// touch marks the entries this replica holds, in each partition, as still
// in its hands, until ctx ends.
func (d *Dispatcher) touch(ctx context.Context) {
	defer d.toucher.Done()
	worker.Every(ctx, d.touchEvery(), func(ctx context.Context) {
		for p := range d.held {
			d.mu.Lock()
			ids := make([]string, 0, len(d.held[p]))
			for id := range d.held[p] {
				ids = append(ids, id)
			}
			d.mu.Unlock()
			if err := d.store.TouchOutbox(ctx, p, d.cfg.Consumer, ids); err != nil {
				d.logWarn("held notifications not marked", p, err)
			}
		}
	})
}

// acquire takes at least one delivery slot (waiting for it) and up to most,
// and returns how many; 0 when ctx ended first.
func (d *Dispatcher) acquire(ctx context.Context, most int) int {
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	n := 1
	for n < most {
		select {
		case d.slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// release gives back n slots, and starts what was waiting for one.
func (d *Dispatcher) release(n int) {
	for range n {
		<-d.slots
	}
	if n > 0 {
		d.startWaiting()
	}
}

// dispatch places each entry (each holds one slot): it starts, waits for its
// shares, or goes back to the outbox.
func (d *Dispatcher) dispatch(ctx context.Context, p int, entries []store.OutboxEntry) {
	targets, err := d.store.Targets(ctx, p, entries)
	if err != nil {
		d.unhold(p, entries...) // left pending: taken over after ClaimIdle
		d.release(len(entries))
		d.logWarn("notification targets not read", p, err)
		return
	}
	for i, e := range entries {
		d.place(d.newJob(p, e, targets[i]))
	}
}

// newJob reads where an entry goes and whose shares it takes.
func (d *Dispatcher) newJob(p int, e store.OutboxEntry, t store.Target) *job {
	j := &job{p: p, entry: e, target: t, owner: t.Owner}
	j.ep, j.active = endpoints.Find(t.List, e.EndpointID)
	j.active = j.active && j.ep.Status == wire.EndpointActive
	if j.ep.Slack != nil {
		j.host = d.slackHost
	} else {
		j.host = hostOf(j.ep.URL)
	}
	j.size = len(e.Event) + len(t.List) + len(t.Secret) + len(e.ID) + len(e.EventID) + jobOverhead
	return j
}

// place starts a job that holds a slot, has it wait for its shares (giving
// the slot back), or, when the waiting room is full, puts its entry back in
// the outbox for a second, without spending an attempt.
func (d *Dispatcher) place(j *job) {
	if !j.active {
		// The record expired, or the endpoint was removed or died since.
		d.run(j, false, func(ctx context.Context) {
			d.settle(ctx, j.p, j.entry, store.Settlement{How: store.SettleDone}, "skipped")
		})
		return
	}
	d.mu.Lock()
	if d.stopping {
		d.mu.Unlock()
		d.unhold(j.p, j.entry) // left pending: taken over after ClaimIdle
		d.release(1)
		return
	}
	start, wait, full := d.shares.place(j)
	d.measureWaiting()
	d.mu.Unlock()
	if full != "" && d.metrics != nil {
		d.metrics.Notify.Deferred.WithLabelValues(full).Inc()
	}
	switch {
	case start:
		d.run(j, true, func(ctx context.Context) { d.deliver(ctx, j) })
	case wait:
		d.release(1)
	default:
		e := j.entry
		d.run(j, false, func(ctx context.Context) {
			d.settle(ctx, j.p, e, store.Settlement{How: store.SettleRetry, RetryAt: d.now().Add(time.Second), Attempt: e.Attempt}, "deferred")
		})
	}
}

// run does a job's work on its own, on the slot the job holds; shared says
// the job took its shares, to give back when it ends.
func (d *Dispatcher) run(j *job, shared bool, work func(ctx context.Context)) {
	d.sends.Add(1)
	go func() {
		defer d.sends.Done()
		work(d.sendCtx)
		d.mu.Lock()
		if shared {
			d.shares.done(j)
		}
		delete(d.held[j.p], j.entry.ID)
		d.mu.Unlock()
		d.release(1)
	}()
}

// startWaiting starts the waiting jobs whose shares have room, as long as
// slots are free.
func (d *Dispatcher) startWaiting() {
	for {
		d.mu.Lock()
		if d.stopping {
			d.mu.Unlock()
			return
		}
		select {
		case d.slots <- struct{}{}:
		default:
			d.mu.Unlock()
			return
		}
		j := d.shares.next()
		if j == nil {
			<-d.slots
			d.mu.Unlock()
			return
		}
		d.measureWaiting()
		d.mu.Unlock()
		d.run(j, true, func(ctx context.Context) {
			if d.current(ctx, j) {
				d.deliver(ctx, j)
			}
		})
	}
}

// current reads a job's endpoint again after it waited, and settles the job
// as skipped when the endpoint was removed or died meanwhile. It reports
// whether the delivery goes on: false too when the record could not be
// read (the entry is left pending, and taken over after ClaimIdle).
func (d *Dispatcher) current(ctx context.Context, j *job) bool {
	targets, err := d.store.Targets(ctx, j.p, []store.OutboxEntry{j.entry})
	if err != nil {
		d.logWarn("notification targets not read", j.p, err)
		return false
	}
	j.target = targets[0]
	j.ep, j.active = endpoints.Find(j.target.List, j.entry.EndpointID)
	if !j.active || j.ep.Status != wire.EndpointActive {
		d.settle(ctx, j.p, j.entry, store.Settlement{How: store.SettleDone}, "skipped")
		return false
	}
	return true
}

// dropWaiting forgets the jobs waiting at shutdown: their entries stay
// pending, and another replica takes them over after ClaimIdle.
func (d *Dispatcher) dropWaiting() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.shares.clear() {
		delete(d.held[j.p], j.entry.ID)
	}
	d.measureWaiting()
}

// measureWaiting sets the gauge of waiting deliveries; d.mu is held.
func (d *Dispatcher) measureWaiting() {
	if d.metrics != nil {
		d.metrics.Notify.Waiting.Set(float64(d.shares.waiting))
	}
}

// deliver makes one attempt and settles it.
func (d *Dispatcher) deliver(ctx context.Context, j *job) {
	p, e, ep := j.p, j.entry, j.ep
	d.inFlight(1)
	start := d.now()
	var out Outcome
	if ep.Slack != nil {
		out = d.deliverSlack(ctx, p, ep.Slack.Channel, e.EndpointID, e.Event)
	} else if secret, ok := d.secret(ctx, p, e, j.target.Secret); !ok {
		// Kept with a key this replica does not hold: retried, so a replica
		// that holds it (or this one, once configured) can deliver it.
		out = Outcome{Kind: Retry, Reason: "the endpoint's secret does not open"}
	} else {
		dl := Delivery{
			URL: ep.URL, Secret: secret, MessageID: e.EventID, Body: d.cfg.Links.Event(store.EventWithID(e.EventID, e.Event)), At: start,
		}
		out = d.sendTo(ctx, ep, dl)
	}
	d.inFlight(-1)
	if ctx.Err() != nil {
		return // abandoned at shutdown: another replica takes the entry over
	}
	if d.metrics != nil {
		d.metrics.Notify.Latency.Observe(d.now().Sub(start).Seconds())
	}
	d.settleOutcome(ctx, p, e, out)
}

// sendTo sends a delivery to a URL endpoint; an A2A push config's in A2A's
// form, with its token, or not at all when the event makes no A2A update.
func (d *Dispatcher) sendTo(ctx context.Context, ep wire.Endpoint, dl Delivery) Outcome {
	if ep.Format == wire.FormatA2A {
		var token string
		dl.Secret, token = endpoints.SplitPush(dl.Secret)
		if token != "" {
			dl.Header = http.Header{PushTokenHeader: {token}}
		}
		if d.cfg.Push != nil {
			body, ok := d.cfg.Push.PushBody(dl.Body)
			if !ok {
				return Outcome{Kind: Dropped, Reason: "no A2A update"}
			}
			dl.Body = body
		}
	}
	return d.sender.Send(ctx, dl)
}

// secret opens the stored secret of an entry's endpoint, and seals it again
// in the store when it was kept in clear or with a key that no longer seals.
func (d *Dispatcher) secret(ctx context.Context, p int, e store.OutboxEntry, stored string) (string, bool) {
	if d.cfg.Vault == nil {
		return stored, true
	}
	secret, reseal, err := endpoints.OpenSecret(d.cfg.Vault, e.EndpointID, stored)
	if err != nil {
		d.logWarn("notification secret does not open", p, err)
		return "", false
	}
	if reseal {
		if _, err := d.store.ResealEndpointSecret(ctx, p, e, stored, endpoints.SealSecret(d.cfg.Vault, e.EndpointID, secret)); err != nil {
			d.logWarn("notification secret not sealed again", p, err)
		}
	}
	return secret, true
}

// settleOutcome turns an attempt's outcome into the entry's settlement.
func (d *Dispatcher) settleOutcome(ctx context.Context, p int, e store.OutboxEntry, out Outcome) {
	now := d.now()
	final := true // settled for good: its attempts are counted
	switch {
	case out.Kind == Delivered:
		if d.settle(ctx, p, e, store.Settlement{How: store.SettleDone}, "delivered") && d.metrics != nil {
			d.metrics.Notify.Lag.Observe(now.Sub(eventTime(e.EventID)).Seconds())
		}
	case out.Kind == Dropped:
		d.settle(ctx, p, e, store.Settlement{How: store.SettleDone}, "dropped")
	case out.Kind == Dead:
		if d.settle(ctx, p, e, store.Settlement{How: store.SettleEndpointDead, Reason: out.Reason}, "endpoint_dead") && d.metrics != nil {
			d.metrics.Notify.DeadEndpoints.Inc()
		}
	case e.Attempt >= d.cfg.MaxAttempts:
		d.settle(ctx, p, e, store.Settlement{
			How: store.SettleDeadLetter, Reason: out.Reason, Now: now, DeadLetter: d.cfg.DeadLetterTTL,
		}, "dead_lettered")
	default: // a retry
		final = false
		wait := max(out.RetryAfter, Backoff(d.cfg.RetryBase, e.Attempt, rand.Float64))
		d.settle(ctx, p, e, store.Settlement{How: store.SettleRetry, RetryAt: now.Add(wait), Attempt: e.Attempt + 1}, "retried")
	}
	if final && d.metrics != nil {
		d.metrics.Notify.Attempts.Observe(float64(e.Attempt))
	}
}

// settle writes the settlement; an entry another replica settled first
// counts nothing. It reports whether this replica settled it.
func (d *Dispatcher) settle(ctx context.Context, p int, e store.OutboxEntry, st store.Settlement, outcome string) bool {
	ok, err := d.store.SettleOutbox(ctx, p, e, st)
	if err != nil {
		// Left pending: another replica (or this one) takes it over after
		// ClaimIdle and delivers it again with the same webhook-id.
		d.logWarn("notification not settled", p, err)
		return false
	}
	if ok && d.metrics != nil {
		d.metrics.Notify.Deliveries.WithLabelValues(outcome).Inc()
	}
	return ok
}

func (d *Dispatcher) inFlight(delta float64) {
	if d.metrics != nil {
		d.metrics.Notify.InFlight.Add(delta)
	}
}

func (d *Dispatcher) pause(ctx context.Context, backoff *time.Duration, p int, err error) {
	if ctx.Err() != nil {
		return
	}
	d.logWarn("notification outbox read failed", p, err)
	t := time.NewTimer(*backoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	*backoff = min(*backoff*2, 5*time.Second)
}

func (d *Dispatcher) logWarn(msg string, p int, err error) {
	if d.log != nil && !errors.Is(err, context.Canceled) {
		d.log.Warn(msg, "partition", p, "err", err)
	}
}

// eventTime is when an event was committed: its id's milliseconds.
func eventTime(id string) time.Time {
	msPart, _, _ := strings.Cut(id, "-")
	v, err := strconv.ParseInt(msPart, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// ageEvery is how often a reader measures its partition's oldest
// undelivered notification.
const ageEvery = 5 * time.Second

// measureAge records partition p's oldest undelivered notification and sets
// the gauge to the oldest of all partitions.
func (d *Dispatcher) measureAge(ctx context.Context, p int) {
	if d.metrics == nil {
		return
	}
	oldest, err := d.store.OldestUndelivered(ctx, p)
	if err != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.oldest == nil {
		d.oldest = make([]time.Time, d.store.Partitions)
	}
	d.oldest[p] = oldest
	var first time.Time
	for _, t := range d.oldest {
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	age := 0.0
	if !first.IsZero() {
		age = d.now().Sub(first).Seconds()
	}
	d.metrics.Notify.OutboxAge.Set(age)
}
