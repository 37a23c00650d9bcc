// Package worker holds what the service's background workers share: the
// periodic loop (Every) and the bounded wait of a Stop (Wait).
//
// Every worker (callbacks.Dispatcher, sessions.Resumer, store.FanIn)
// follows one lifecycle: Start(ctx) error runs it until Stop(ctx) error,
// both idempotent, and a Start after Stop runs nothing. app starts them in
// order and stops them in reverse, before it closes the store.
//
// It imports only the standard library.
package worker

import (
	"context"
	"time"
)

// Every calls fn every interval until ctx ends. A call under way when ctx
// ends is left to finish (fn gets ctx); no call starts after.
func Every(ctx context.Context, interval time.Duration, fn func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ctx.Err() != nil {
			return
		}
		fn(ctx)
	}
}

// Wait waits for wait to return or for ctx to end, whichever comes first,
// and then returns ctx's error (wait goes on in the background).
func Wait(ctx context.Context, wait func()) error {
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
