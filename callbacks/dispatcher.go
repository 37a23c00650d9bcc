package callbacks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/worker"
)

// DispatcherConfig tunes the dispatcher. Zero values are the defaults.
type DispatcherConfig struct {
	Concurrency   int           // deliveries under way at once on this replica; default 64
	PerEndpoint   int           // of those, to one endpoint; default Concurrency/4 (at least 1)
	Timeout       time.Duration // one attempt; default 10s
	RetryBase     time.Duration // first backoff step; default 15s
	MaxAttempts   int           // attempts before a notification is dead-lettered; default 8
	ClaimIdle     time.Duration // an entry pending this long was left by a dead replica; default Timeout + 10s
	Block         time.Duration // how long one outbox read waits; default 2s
	DeadLetterTTL time.Duration // how long dead letters are kept; default 30 days
	Consumer      string        // this replica's name in the consumer group; default a random one
	Guard         Guard         // the SSRF guard of every connection
	// Vault opens endpoint secrets: the registrar's, which sealed them.
	// nil uses each secret as stored (a store written before secrets were
	// sealed, in tests).
	Vault *authz.Vault
	// Show turns a stored event into what a reader sees (the answer links of
	// its open requests, tasks.AnswerLinks.Event); nil sends it as stored.
	Show func(event []byte) []byte
	// ShowRequests does the same to a task's requests in place
	// (tasks.AnswerLinks.ShowRequests), for the Slack message of a task: a
	// sign-in's button links to its attempt, which the store never holds.
	// nil shows them as stored.
	ShowRequests func(taskID string, reqs []wire.InputRequest)
	// Slack posts the events of Slack endpoints; nil: they are dead on
	// their first event.
	Slack *SlackConfig
}

func (c DispatcherConfig) withDefaults() DispatcherConfig {
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.PerEndpoint <= 0 {
		c.PerEndpoint = max(1, c.Concurrency/4)
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
	if c.Show == nil {
		c.Show = func(event []byte) []byte { return event }
	}
	if c.ShowRequests == nil {
		c.ShowRequests = func(string, []wire.InputRequest) {}
	}
	return c
}

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
type Dispatcher struct {
	cfg     DispatcherConfig
	store   *store.Store
	sender  *Sender
	slack   *slackAPI // nil without a Slack configuration
	metrics *metrics.Metrics
	log     *slog.Logger
	now     func() time.Time

	slots  chan struct{}   // one per delivery under way
	reader *store.Blocking // the readers' own client: closing it ends their reads

	mu        sync.Mutex
	started   bool
	stopRead  context.CancelFunc // ends the readers
	stopSends context.CancelFunc // abandons deliveries under way (left pending for another replica)
	stopTouch context.CancelFunc // ends the marking of held entries
	readers   sync.WaitGroup
	sends     sync.WaitGroup
	toucher   sync.WaitGroup
	busy      map[string]int        // deliveries under way by endpoint id
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
		busy:   map[string]int{},
		held:   make([]map[string]struct{}, s.Partitions),
	}
	if cfg.Slack != nil && cfg.Slack.Token != "" {
		d.slack = newSlackAPI(*cfg.Slack, cfg.Timeout)
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
	var readCtx, sendCtx, touchCtx context.Context
	readCtx, d.stopRead = context.WithCancel(store.Background(base))
	sendCtx, d.stopSends = context.WithCancel(store.Background(base))
	d.reader = d.store.NewBlocking(d.store.Partitions)
	touchCtx, d.stopTouch = context.WithCancel(store.Background(base))
	for p := 0; p < d.store.Partitions; p++ {
		d.readers.Add(1)
		go d.read(readCtx, sendCtx, p)
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

func (d *Dispatcher) read(ctx, sendCtx context.Context, p int) {
	defer d.readers.Done()
	backoff := 100 * time.Millisecond
	var lastClaim, lastDue, lastAge time.Time
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
		if now := d.now(); now.Sub(lastClaim) >= d.cfg.ClaimIdle/2 {
			entries, err = d.store.ClaimOutbox(ctx, p, d.cfg.Consumer, d.cfg.ClaimIdle, n)
			if err == nil && len(entries) < n {
				// All taken over; while claims come back full, more may
				// be waiting, and the next loop claims again.
				lastClaim = now
			}
			entries = d.hold(p, entries)
		}
		if err == nil && len(entries) == 0 {
			entries, err = d.reader.ReadOutbox(ctx, p, d.cfg.Consumer, n, 0)
			entries = d.hold(p, entries)
		}
		if err == nil && len(entries) == 0 {
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
			d.dispatch(ctx, sendCtx, p, entries)
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

func (d *Dispatcher) release(n int) {
	for range n {
		<-d.slots
	}
}

// dispatch starts a delivery for each entry (each holds one slot).
func (d *Dispatcher) dispatch(ctx, sendCtx context.Context, p int, entries []store.OutboxEntry) {
	targets, err := d.store.Targets(ctx, p, entries)
	if err != nil {
		d.release(len(entries)) // left pending: taken over after ClaimIdle
		d.unhold(p, entries...)
		d.logWarn("notification targets not read", p, err)
		return
	}
	for i, e := range entries {
		d.sends.Add(1)
		go func() {
			defer d.sends.Done()
			defer d.release(1)
			defer d.unhold(p, e)
			d.deliver(sendCtx, p, e, targets[i])
		}()
	}
}

// deliver makes one attempt and settles it.
func (d *Dispatcher) deliver(ctx context.Context, p int, e store.OutboxEntry, t store.Target) {
	ep, ok := endpointIn(t.List, e.EndpointID)
	if !ok || ep.Status != wire.EndpointActive {
		// The record expired, or the endpoint was removed or died since.
		d.settle(ctx, p, e, store.Settlement{How: store.SettleDone}, "skipped")
		return
	}
	if !d.take(e.EndpointID, ep.Slack != nil) {
		// The endpoint has as many deliveries under way as it may: this one
		// waits a moment, without spending an attempt, so a slow receiver
		// never holds the slots other endpoints need.
		d.settle(ctx, p, e, store.Settlement{How: store.SettleRetry, RetryAt: d.now().Add(time.Second), Attempt: e.Attempt}, "deferred")
		return
	}
	d.inFlight(1)
	start := d.now()
	var out Outcome
	if ep.Slack != nil {
		out = d.deliverSlack(ctx, p, ep.Slack.Channel, e.EndpointID, e.Event)
	} else if secret, ok := d.secret(ctx, p, e, t.Secret); !ok {
		// Kept with a key this replica does not hold: retried, so a replica
		// that holds it (or this one, once configured) can deliver it.
		out = Outcome{Kind: Retry, Reason: "the endpoint's secret does not open"}
	} else {
		out = d.sender.Send(ctx, Delivery{
			URL: ep.URL, Secret: secret, MessageID: e.EventID, Body: d.cfg.Show(store.EventWithID(e.EventID, e.Event)), At: start,
		})
	}
	d.inFlight(-1)
	d.done(e.EndpointID)
	if ctx.Err() != nil {
		return // abandoned at shutdown: another replica takes the entry over
	}
	if d.metrics != nil {
		d.metrics.Notify.Latency.Observe(d.now().Sub(start).Seconds())
	}
	d.settleOutcome(ctx, p, e, out)
}

// secret opens the stored secret of an entry's endpoint, and seals it again
// in the store when it was kept in clear or with a key that no longer seals.
func (d *Dispatcher) secret(ctx context.Context, p int, e store.OutboxEntry, stored string) (string, bool) {
	if d.cfg.Vault == nil {
		return stored, true
	}
	secret, reseal, err := OpenSecret(d.cfg.Vault, e.EndpointID, stored)
	if err != nil {
		d.logWarn("notification secret does not open", p, err)
		return "", false
	}
	if reseal {
		if _, err := d.store.ResealEndpointSecret(ctx, p, e, stored, SealSecret(d.cfg.Vault, e.EndpointID, secret)); err != nil {
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
			How: store.SettleDeadLetter, Reason: out.Reason, EventType: eventType(e.Event),
			Now: now, DeadLetter: d.cfg.DeadLetterTTL,
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

// take counts a delivery to an endpoint, unless it has PerEndpoint under way
// (one, for a Slack endpoint: its updates of a message go one at a time).
func (d *Dispatcher) take(endpointID string, one bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	limit := d.cfg.PerEndpoint
	if one {
		limit = 1
	}
	if d.busy[endpointID] >= limit {
		return false
	}
	d.busy[endpointID]++
	return true
}

func (d *Dispatcher) done(endpointID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy[endpointID]--; d.busy[endpointID] <= 0 {
		delete(d.busy, endpointID)
	}
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

// endpointIn finds an endpoint in a stored list.
func endpointIn(list []byte, id string) (wire.Endpoint, bool) {
	views, err := Views(list)
	if err != nil {
		return wire.Endpoint{}, false
	}
	for _, v := range views {
		if v.EndpointID == id {
			return v, true
		}
	}
	return wire.Endpoint{}, false
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

// eventType reads a stored event's type.
func eventType(event []byte) string {
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(event, &head)
	return head.Type
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
