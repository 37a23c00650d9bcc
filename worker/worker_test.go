package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskhook/taskhook/worker"
)

func TestEveryRunsUntilItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	third := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		worker.Every(ctx, time.Millisecond, func(context.Context) {
			if calls.Add(1) == 3 {
				cancel()
				close(third)
			}
		})
	}()
	<-third
	<-ended
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d calls, want 3: a call started after the context ended", n)
	}
}

func TestWaitReturnsWhenTheWaitEnds(t *testing.T) {
	release := make(chan struct{})
	go close(release)
	if err := worker.Wait(context.Background(), func() { <-release }); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
}

func TestWaitGivesUpWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	block := make(chan struct{})
	defer close(block)
	if err := worker.Wait(ctx, func() { <-block }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
}
