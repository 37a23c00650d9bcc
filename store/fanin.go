package store

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/metrics"
)

// Wake is one wake-up hint: something changed on a task, a session or a hook.
type Wake struct {
	Kind      string // "t" task, "s" session, "h" hook
	ID        string
	SessionID string
	Revision  int64
	Snapshot  []byte // the task's json when small enough, else nil
}

// WaitKey names what a waiter waits on.
func WaitKey(kind, id string) string { return kind + ":" + id }

// FanIn runs one reader per partition on the partition's wake stream and
// wakes this replica's local waiters. A waiting long-poll therefore costs no
// Redis traffic of its own: the readers' blocking reads are shared by all.
type FanIn struct {
	store   *Store
	metrics *metrics.Metrics
	log     *slog.Logger
	block   time.Duration
	recheck time.Duration
	drain   chan struct{}

	mu      sync.Mutex
	waiters map[string]map[*Waiter]struct{}
	cancel  context.CancelFunc
	done    sync.WaitGroup
	onWake  []func(Wake)
}

// FanInConfig tunes the readers. Zero values are the defaults.
type FanInConfig struct {
	Block   time.Duration // how long one blocking read waits; default 5s
	Recheck time.Duration // how often a waiter re-reads in case a wake was lost; default 15s
}

// NewFanIn makes the readers; Start runs them.
func NewFanIn(s *Store, cfg FanInConfig, m *metrics.Metrics, log *slog.Logger) *FanIn {
	if cfg.Block == 0 {
		cfg.Block = 5 * time.Second
	}
	if cfg.Recheck == 0 {
		cfg.Recheck = 15 * time.Second
	}
	return &FanIn{
		store: s, metrics: m, log: log, block: cfg.Block, recheck: cfg.Recheck,
		drain: make(chan struct{}), waiters: map[string]map[*Waiter]struct{}{},
	}
}

// OnWake registers a function called with every wake-up read (for caches).
// Call it before Start.
func (f *FanIn) OnWake(fn func(Wake)) { f.onWake = append(f.onWake, fn) }

// Waiter is one local wait. C receives the latest wake for its key; it is
// buffered, so a wake that arrives before the waiter reads is kept.
type Waiter struct {
	C    chan Wake
	keys []string
	f    *FanIn
}

// Wait registers a waiter on keys (made with WaitKey). Register before reading
// the state you wait on, then Stop when done.
func (f *FanIn) Wait(keys ...string) *Waiter {
	w := &Waiter{C: make(chan Wake, 1), keys: keys, f: f}
	f.mu.Lock()
	for _, k := range keys {
		set := f.waiters[k]
		if set == nil {
			set = map[*Waiter]struct{}{}
			f.waiters[k] = set
		}
		set[w] = struct{}{}
	}
	f.mu.Unlock()
	if f.metrics != nil {
		f.metrics.Waiters.Inc()
	}
	return w
}

// Stop unregisters the waiter.
func (w *Waiter) Stop() {
	f := w.f
	f.mu.Lock()
	for _, k := range w.keys {
		if set := f.waiters[k]; set != nil {
			delete(set, w)
			if len(set) == 0 {
				delete(f.waiters, k)
			}
		}
	}
	f.mu.Unlock()
	if f.metrics != nil {
		f.metrics.Waiters.Dec()
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

// Next waits for the next wake, the re-check interval, the deadline, the
// caller leaving or the server draining, whichever comes first.
func (w *Waiter) Next(ctx context.Context, deadline time.Time) (Wake, Reason) {
	left := time.Until(deadline)
	if left <= 0 {
		return Wake{}, Timeout
	}
	wait, reason := left, Timeout
	if w.f.recheck < left {
		wait, reason = w.f.recheck, Recheck
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
	case <-w.f.drain:
		return Wake{}, Gone
	}
}

// Draining is closed when the server begins to shut down: streams and
// long-polls answer at once.
func (f *FanIn) Draining() <-chan struct{} { return f.drain }

// Notify wakes local waiters as if the wake had been read from Redis. The
// readers call it; so do writers on this replica, so their own waiters do not
// wait for the round trip through the stream.
func (f *FanIn) Notify(wk Wake) {
	for _, fn := range f.onWake {
		fn(wk)
	}
	keys := []string{WaitKey(wk.Kind, wk.ID)}
	if wk.SessionID != "" && wk.Kind != "s" {
		keys = append(keys, WaitKey("s", wk.SessionID))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		for w := range f.waiters[k] {
			select {
			case w.C <- wk:
			default: // a wake is pending already: replace it with the newer one
				select {
				case <-w.C:
				default:
				}
				w.C <- wk
			}
		}
	}
}

// Start runs the readers. It is idempotent.
func (f *FanIn) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel != nil {
		return
	}
	ctx, f.cancel = context.WithCancel(Background(context.WithoutCancel(ctx)))
	for p := 0; p < f.store.Partitions; p++ {
		f.done.Add(1)
		go f.read(ctx, p)
	}
}

// Drain tells every waiter to answer now and the readers to end; it does not
// wait. A reader blocked in Redis ends when its read returns or the store is
// closed. It is idempotent.
func (f *FanIn) Drain() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.drain:
	default:
		close(f.drain)
	}
	if f.cancel != nil {
		f.cancel()
	}
}

// Stop drains and waits for the readers, within ctx. It is idempotent.
func (f *FanIn) Stop(ctx context.Context) {
	f.Drain()
	done := make(chan struct{})
	go func() { f.done.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (f *FanIn) read(ctx context.Context, p int) {
	defer f.done.Done()
	key := f.store.Keys.Wake(p)
	last := ""
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if last == "" {
			// Start at the stream's current end: earlier changes are read
			// directly by whoever waits on them.
			id, err := f.tail(ctx, key)
			if err != nil {
				f.pause(ctx, &backoff, p, err)
				continue
			}
			last = id
		}
		res, err := f.store.RDB.XRead(ctx, &redis.XReadArgs{
			Streams: []string{key, last}, Count: 512, Block: f.block,
		}).Result()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			f.pause(ctx, &backoff, p, err)
			continue
		}
		backoff = 100 * time.Millisecond
		for _, st := range res {
			for _, msg := range st.Messages {
				last = msg.ID
				f.Notify(parseWake(msg.Values))
				if f.metrics != nil {
					f.metrics.Wakeups.Inc()
				}
			}
		}
	}
}

func (f *FanIn) tail(ctx context.Context, key string) (string, error) {
	msgs, err := f.store.RDB.XRevRangeN(ctx, key, "+", "-", 1).Result()
	if err != nil {
		return "", err
	}
	if len(msgs) == 0 {
		return "0-0", nil
	}
	return msgs[0].ID, nil
}

func (f *FanIn) pause(ctx context.Context, backoff *time.Duration, p int, err error) {
	if ctx.Err() != nil {
		return
	}
	if f.log != nil {
		f.log.Warn("wake reader error", "partition", p, "err", unavailable(err))
	}
	t := time.NewTimer(*backoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	if *backoff < 5*time.Second {
		*backoff *= 2
	}
}

func parseWake(v map[string]any) Wake {
	str := func(k string) string { s, _ := v[k].(string); return s }
	rev, _ := strconv.ParseInt(str("r"), 10, 64)
	wk := Wake{Kind: str("k"), ID: str("i"), SessionID: str("s"), Revision: rev}
	if j := str("j"); j != "" {
		wk.Snapshot = []byte(j)
	}
	return wk
}

// ReadLog reads a log after a cursor and, when nothing is there and wait is
// positive, waits on w (registered before the first read) and reads again.
func (f *FanIn) ReadLog(ctx context.Context, w *Waiter, key, after string, limit int,
	wait time.Duration) ([]LogEntry, error) {
	deadline := time.Now().Add(wait)
	for {
		entries, err := f.store.ReadLog(ctx, key, after, limit)
		if err != nil || len(entries) > 0 || wait <= 0 {
			return entries, err
		}
		if _, why := w.Next(ctx, deadline); why == Timeout || why == Gone {
			return entries, nil
		}
	}
}
