package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/waits"
	"github.com/taskhook/taskhook/worker"
)

// FanIn runs one reader per partition on the partition's wake stream
// (XREAD BLOCK) and hands every wake-up to notify: this replica's registry
// of waits (waits.Waiters' Notify), which it does not own. A waiting
// long-poll therefore costs no Redis traffic of its own: the readers'
// blocking reads are shared by all.
type FanIn struct {
	notify func(waits.Wake)

	store   *Store
	metrics *metrics.Metrics
	log     *slog.Logger
	block   time.Duration

	mu     sync.Mutex
	cancel context.CancelFunc
	reader *Blocking // the readers' own client: closing it ends their reads
	done   sync.WaitGroup
}

// FanInConfig tunes the readers. Zero values are the defaults.
type FanInConfig struct {
	Block time.Duration // how long one blocking read waits; default 5s
}

// NewFanIn makes the readers, which hand what they read to notify; Start
// runs them.
func NewFanIn(s *Store, cfg FanInConfig, notify func(waits.Wake), m *metrics.Metrics, log *slog.Logger) *FanIn {
	if cfg.Block == 0 {
		cfg.Block = 5 * time.Second
	}
	return &FanIn{notify: notify, store: s, metrics: m, log: log, block: cfg.Block}
}

// Start runs the readers. It is idempotent; after Stop it does nothing.
func (f *FanIn) Start(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel != nil {
		return nil
	}
	ctx, f.cancel = context.WithCancel(Background(context.WithoutCancel(ctx)))
	f.reader = f.store.NewBlocking(f.store.Partitions)
	for p := 0; p < f.store.Partitions; p++ {
		f.done.Add(1)
		go f.read(ctx, p)
	}
	return nil
}

// Drain tells the readers to end; it does not wait. A reader blocked in
// Redis ends when its read returns, or at Stop. It is idempotent. (The
// waiters are drained by the registry's own Drain.)
func (f *FanIn) Drain() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel != nil {
		f.cancel()
	} else {
		f.cancel = func() {} // a Start after the drain runs nothing
	}
}

// Stop drains the readers, ends their blocking reads and waits for them,
// within ctx. It is idempotent.
func (f *FanIn) Stop(ctx context.Context) error {
	f.Drain()
	f.mu.Lock()
	if f.reader != nil {
		_ = f.reader.Close()
	}
	f.mu.Unlock()
	if err := worker.Wait(ctx, f.done.Wait); err != nil {
		return fmt.Errorf("fan-in readers still running: %w", err)
	}
	return nil
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
		res, err := f.reader.rdb.XRead(ctx, &redis.XReadArgs{
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
				if wk := parseWake(msg.Values); wk.Kind != waits.WakeTask || !f.store.own.take(wk.ID, wk.Revision) {
					f.notify(wk)
				}
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
