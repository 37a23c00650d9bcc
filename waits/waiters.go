// Package waits is this replica's registry of local waits: the waiters of
// long-polls, streams, hook reads and log reads, keyed by what they wait on
// (WaitKey), and the wake-ups that wake them (Wake, coalesced while a waiter
// has not read them), a waiter blocking its caller (Next) or parked with no
// goroutine (Park). It also owns the event types a reader asks for (Kinds)
// and the log reads that wait (ReadLog, PollLog, LogPoll) over a LogSource
// the store provides. Who wakes it is the caller's business: the store's
// fan-in readers hand it what they read from Redis, writers their own.
//
// It imports metrics of this module and the standard library, nothing else:
// the store imports it, never the other way, and nothing here knows HTTP.
package waits

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskhook/taskhook/metrics"
)

// Waiters is this replica's registry of local waits (long-polls, streams,
// hook reads), each keyed by what it waits on (WaitKey). Notify wakes them:
// the store's fan-in readers call it with every wake-up read from Redis, and
// writers on this replica with their own. Deadlines are read on the injected
// clock.
type Waiters struct {
	metrics *metrics.Metrics
	recheck time.Duration
	now     func() time.Time
	drain   chan struct{}

	mu      sync.Mutex
	waiters map[string]map[*Waiter]struct{}
	onWake  []func(Wake)
}

// Config tunes the registry. Zero values are the defaults.
type Config struct {
	Recheck time.Duration // how often a waiter re-reads in case a wake was lost; default 15s
}

// New makes an empty registry. now is the clock deadlines are read on
// (time.Now in production).
func New(cfg Config, m *metrics.Metrics, now func() time.Time) *Waiters {
	if cfg.Recheck == 0 {
		cfg.Recheck = 15 * time.Second
	}
	return &Waiters{
		metrics: m, recheck: cfg.Recheck, now: now, drain: make(chan struct{}),
		waiters: map[string]map[*Waiter]struct{}{},
	}
}

// OnWake registers a function called with every wake-up (for caches). Call
// it before anything notifies (before the fan-in readers start).
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
	// parked: the waiter has blocked in Next (or been parked) once, and
	// counts in the taskhook_waiters gauge from then until Stop. A request
	// that registered and is still reading the state it waits on is not
	// waiting yet.
	parked atomic.Bool
	// held is set, under r.mu, when the waiter is parked (Park): Notify,
	// Drain and Leave then hand it its events, where a blocked Next would
	// take them.
	held *heldWait
	left atomic.Bool // Leave was called
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

// Stop unregisters the waiter. It is idempotent; a parked waiter takes no
// more events once it returns (but the one being handled, if any).
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
	held := w.held
	r.mu.Unlock()
	if held != nil {
		held.end()
	}
	if w.parked.Swap(false) && r.metrics != nil {
		r.metrics.Waiters.Dec()
	}
}

// countWaiting counts the waiter in the taskhook_waiters gauge, once.
func (w *Waiter) countWaiting() {
	if !w.parked.Swap(true) && w.r.metrics != nil {
		w.r.metrics.Waiters.Inc()
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
	wait, reason := w.r.timeLeft(deadline)
	if wait <= 0 {
		return Wake{}, Timeout
	}
	w.countWaiting()
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

// Until calls step with what each Next returns until step says the wait is
// over: the wait of a long-poll that blocks its caller, where Park is that
// of one parked.
func (w *Waiter) Until(ctx context.Context, deadline time.Time, step func(Wake, Reason) bool) {
	for {
		if wk, why := w.Next(ctx, deadline); step(wk, why) {
			return
		}
	}
}

// Park waits as calling Next in a loop would, but holds no goroutine while
// it waits: step is called with what each Next would have returned, one call
// at a time, each on a goroutine that lives for the call, until the owner
// calls Stop (from step or elsewhere). Where Next takes a context, a parked
// waiter is told by Leave that its caller has left; that, or the server
// draining, is Gone. A long-poll parks its waiter to wait on a connection
// taken off net/http's goroutine-per-connection.
func (w *Waiter) Park(deadline time.Time, step func(Wake, Reason)) {
	h := &heldWait{w: w, deadline: deadline, step: step}
	w.countWaiting()
	h.mu.Lock()
	h.arm()
	h.mu.Unlock()
	w.r.mu.Lock()
	w.held = h
	w.r.mu.Unlock()
	h.kick() // a wake may be waiting in C already, the caller have left or the drain have begun
}

// Leave tells a parked waiter, before or after Park, that its caller has
// left: its step gets Gone.
func (w *Waiter) Leave() {
	w.left.Store(true)
	w.r.mu.Lock()
	held := w.held
	w.r.mu.Unlock()
	if held != nil {
		held.kick()
	}
}

// heldWait is a parked waiter: what it waits for, and what came while no
// goroutine was handling its events.
type heldWait struct {
	w        *Waiter
	deadline time.Time
	step     func(Wake, Reason)

	mu      sync.Mutex
	running bool        // a goroutine is handling events
	again   bool        // an event came while it was
	ended   bool        // Stop was called
	timer   *time.Timer // the re-check or the deadline, whichever is first
	armed   int         // counts the timers: one that fires after it was replaced says nothing
	fired   bool        // the timer fired, and says due
	due     Reason
}

// arm sets the timer as Next would for one wait: the re-check or the
// deadline. Call with h.mu held.
func (h *heldWait) arm() {
	if h.timer != nil {
		h.timer.Stop()
	}
	h.armed++
	wait, reason := h.w.r.timeLeft(h.deadline)
	if wait <= 0 {
		h.fired, h.due = true, Timeout
		return
	}
	armed := h.armed
	h.timer = time.AfterFunc(wait, func() {
		h.mu.Lock()
		if h.armed == armed {
			h.fired, h.due = true, reason
		}
		h.mu.Unlock()
		h.kick()
	})
}

// kick has the waiter's events handled: on a new goroutine, or by the one
// handling them now.
func (h *heldWait) kick() {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.ended:
	case h.running:
		h.again = true
	default:
		h.running = true
		go h.run()
	}
}

// run hands step the events that have come, one at a time, and ends when
// none is left.
func (h *heldWait) run() {
	for {
		wk, why, ok := h.next()
		h.mu.Lock()
		if h.ended || (!ok && !h.again) {
			h.running = false
			h.mu.Unlock()
			return
		}
		h.again = false
		h.mu.Unlock()
		if !ok {
			continue
		}
		h.step(wk, why)
		h.mu.Lock()
		if !h.ended {
			h.arm() // each wait after an event is a new Next
		}
		h.mu.Unlock()
	}
}

// next is the event that has come, if any: what a Next called now would
// return at once.
func (h *heldWait) next() (Wake, Reason, bool) {
	if h.w.left.Load() {
		return Wake{}, Gone, true // nobody reads the answer: no need to judge a wake first
	}
	select {
	case wk := <-h.w.C:
		return wk, Woken, true
	case <-h.w.r.drain:
		return Wake{}, Gone, true
	default:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.fired {
		return Wake{}, 0, false
	}
	h.fired = false
	return Wake{}, h.due, true
}

// end stops a parked waiter's timer; step is not called again.
func (h *heldWait) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	if h.timer != nil {
		h.timer.Stop()
	}
}

// timeLeft is how long a wait until deadline may block before it must look
// again, and why it would: the re-check interval, or the time left (0 once
// the deadline has passed).
func (r *Waiters) timeLeft(deadline time.Time) (time.Duration, Reason) {
	left := deadline.Sub(r.now())
	if left <= 0 {
		return 0, Timeout
	}
	if r.recheck < left {
		return r.recheck, Recheck
	}
	return left, Timeout
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
	for _, set := range r.waiters {
		for w := range set {
			if w.held != nil {
				w.held.kick()
			}
		}
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
			if w.held != nil {
				w.held.kick()
			}
		}
	}
}
