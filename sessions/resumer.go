package sessions

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/worker"
)

// ResumerConfig tunes the Resumer. Zero means the default.
type ResumerConfig struct {
	Interval time.Duration // how often each partition is checked; default 5s
}

// Resumer finishes session cancels whose replica stopped midway (it died,
// or lost Redis): SPEC 2 wants a cancel to complete even then. Every
// replica runs one; a cancel is taken once its lease has run out, so a
// replica that is still working on one keeps it.
type Resumer struct {
	svc      *Service
	interval time.Duration
	log      *slog.Logger

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewResumer builds the worker; nothing runs until Start.
func NewResumer(svc *Service, cfg ResumerConfig, log *slog.Logger) *Resumer {
	if cfg.Interval == 0 {
		cfg.Interval = 5 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Resumer{svc: svc, interval: cfg.Interval, log: log}
}

// Start runs the worker until Stop; a second Start does nothing.
func (r *Resumer) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return nil
	}
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.done = make(chan struct{})
	go r.run(ctx)
	return nil
}

// Stop ends the worker and waits for it, or for ctx; a second Stop does
// nothing.
func (r *Resumer) Stop(ctx context.Context) error {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	return worker.Wait(ctx, func() { <-done })
}

func (r *Resumer) run(ctx context.Context) {
	defer close(r.done)
	worker.Every(store.Background(ctx), r.interval, r.Sweep)
}

// Sweep finishes, in every partition, the cancels whose lease ran out.
func (r *Resumer) Sweep(ctx context.Context) {
	for p := 0; p < r.svc.store.Partitions; p++ {
		ids, err := r.svc.store.StalledCancels(ctx, p, r.svc.now(), 8)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("session cancels: read stalled cancels", "partition", p, "err", err)
			}
			return
		}
		for _, id := range ids {
			if _, _, err := r.svc.finishCancel(ctx, p, id, idem.Key{}); err != nil && ctx.Err() == nil {
				r.log.Warn("session cancels: finish a stalled cancel", "partition", p, "err", err)
			}
		}
	}
}
