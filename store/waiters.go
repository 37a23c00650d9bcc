package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskhook/taskhook/metrics"
)

// Waiters is this replica's registry of local waits (long-polls, streams,
// hook reads), each keyed by what it waits on (WaitKey). Notify wakes them:
// the fan-in readers call it with every wake-up read from Redis, and writers
// on this replica with their own. Deadlines are read on the injected clock.
type Waiters struct {
	metrics *metrics.Metrics
	recheck time.Duration
	now     func() time.Time
	drain   chan struct{}

	mu      sync.Mutex
	waiters map[string]map[*Waiter]struct{}
	onWake  []func(Wake)
}

func newWaiters(recheck time.Duration, m *metrics.Metrics, now func() time.Time) *Waiters {
	return &Waiters{
		metrics: m, recheck: recheck, now: now, drain: make(chan struct{}),
		waiters: map[string]map[*Waiter]struct{}{},
	}
}

// OnWake registers a function called with every wake-up (for caches). Call
// it before the readers start.
func (r *Waiters) OnWake(fn func(Wake)) { r.onWake = append(r.onWake, fn) }

// Waiter is one local wait. C receives the wakes for its keys; it is
// buffered, so a wake that arrives before the waiter reads is kept, and one
// that arrives while another waits to be read is coalesced with it (see
// Wake's First, Merged and Types): a waiter that reads late misses nothing
// it could tell from the wakes.
type Waiter struct {
	C    chan Wake
	keys []string
	r    *Waiters
	// parked: the waiter has blocked in Next once, and counts in the
	// taskhook_waiters gauge from then until Stop. A request that
	// registered and is still reading the state it waits on is not waiting
	// yet.
	parked atomic.Bool
}

// Wait registers a waiter on keys (made with WaitKey). Register before reading
// the state you wait on, then Stop when done.
func (r *Waiters) Wait(keys ...string) *Waiter {
	w := &Waiter{C: make(chan Wake, 1), keys: keys, r: r}
	r.mu.Lock()
	for _, k := range keys {
		set := r.waiters[k]
		if set == nil {
			set = map[*Waiter]struct{}{}
			r.waiters[k] = set
		}
		set[w] = struct{}{}
	}
	r.mu.Unlock()
	return w
}

// Stop unregisters the waiter.
func (w *Waiter) Stop() {
	r := w.r
	r.mu.Lock()
	for _, k := range w.keys {
		if set := r.waiters[k]; set != nil {
			delete(set, w)
			if len(set) == 0 {
				delete(r.waiters, k)
			}
		}
	}
	r.mu.Unlock()
	if w.parked.Load() && r.metrics != nil {
		r.metrics.Waiters.Dec()
	}
}

// Reason says why Next returned.
type Reason int

const (
	Woken   Reason = iota // a wake arrived for one of the waiter's keys
	Recheck               // the safety-net interval passed: re-read the state
	Timeout               // the deadline passed
	Gone                  // the caller left or the server is draining
)

// Next waits for the next wake, the re-check interval, the deadline (on the
// registry's clock), the caller leaving or the server draining, whichever
// comes first.
func (w *Waiter) Next(ctx context.Context, deadline time.Time) (Wake, Reason) {
	left := deadline.Sub(w.r.now())
	if left <= 0 {
		return Wake{}, Timeout
	}
	wait, reason := left, Timeout
	if w.r.recheck < left {
		wait, reason = w.r.recheck, Recheck
	}
	if !w.parked.Swap(true) && w.r.metrics != nil {
		w.r.metrics.Waiters.Inc()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case wk := <-w.C:
		return wk, Woken
	case <-t.C:
		return Wake{}, reason
	case <-ctx.Done():
		return Wake{}, Gone
	case <-w.r.drain:
		return Wake{}, Gone
	}
}

// Ignore counts a wake the waiter left aside without reading anything: none
// of its event types is one the waiter waits for.
func (w *Waiter) Ignore() {
	if w.r.metrics != nil {
		w.r.metrics.WakeupsIgnored.Inc()
	}
}

// Draining is closed when the server begins to shut down: streams and
// long-polls answer at once.
func (r *Waiters) Draining() <-chan struct{} { return r.drain }

// Drain tells every waiter to answer now. It is idempotent.
func (r *Waiters) Drain() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.drain:
	default:
		close(r.drain)
	}
}

// Notify wakes the waiters on the wake's task, session or hook, and on the
// session of a task or hook.
func (r *Waiters) Notify(wk Wake) {
	for _, fn := range r.onWake {
		fn(wk)
	}
	keys := []string{WaitKey(wk.Kind, wk.ID)}
	if wk.SessionID != "" && wk.Kind != WakeSession {
		keys = append(keys, WaitKey(WakeSession, wk.SessionID))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		for w := range r.waiters[k] {
			select {
			case w.C <- wk:
			default: // a wake is pending already: one wake stands for both
				next := wk
				select {
				case pending := <-w.C:
					next = coalesce(pending, wk)
				default:
				}
				w.C <- next
			}
		}
	}
}
