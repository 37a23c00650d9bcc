package waits_test

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/waits"
)

// parkedStep is what a parked waiter's step was called with.
type parkedStep struct {
	wk  waits.Wake
	why waits.Reason
}

// registry is a registry with cfg, and its metrics.
func registry(cfg waits.Config) (*waits.Waiters, *metrics.Metrics) {
	m := metrics.New()
	return waits.New(cfg, m, time.Now), m
}

// park registers a waiter on key of reg, calls before with it (when not
// nil), parks it, and returns it and the channel its steps arrive on; it
// stops itself on the reasons stopOn.
func park(t *testing.T, reg *waits.Waiters, deadline time.Time, before func(*waits.Waiter), stopOn ...waits.Reason) (*waits.Waiter, <-chan parkedStep) {
	t.Helper()
	w := reg.Wait(key)
	t.Cleanup(w.Stop)
	if before != nil {
		before(w)
	}
	steps := make(chan parkedStep, 16)
	w.Park(deadline, func(wk waits.Wake, why waits.Reason) {
		if slices.Contains(stopOn, why) {
			w.Stop()
		}
		steps <- parkedStep{wk, why}
	})
	return w, steps
}

var key = waits.WaitKey(waits.WakeTask, "task_a")

// nextStep is the next step.
func nextStep(t *testing.T, steps <-chan parkedStep) parkedStep {
	t.Helper()
	select {
	case s := <-steps:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no step")
		return parkedStep{}
	}
}

// wantStep is the next step, which must be for why.
func wantStep(t *testing.T, steps <-chan parkedStep, why waits.Reason) parkedStep {
	t.Helper()
	s := nextStep(t, steps)
	if s.why != why {
		t.Fatalf("step %+v, want reason %v", s, why)
	}
	return s
}

// A parked waiter gets what Next would return, without a goroutine of its
// own while it waits: wakes (one standing for those that came together),
// the re-check, the deadline, its caller leaving and the drain.
func TestParkedWaiter(t *testing.T) {
	task := func(rev int64) waits.Wake {
		return waits.Wake{Kind: waits.WakeTask, ID: "task_a", SessionID: "ses_1", Revision: rev, Types: []string{"task.progress"}}
	}
	far := time.Now().Add(time.Hour)

	t.Run("wakes, counted as waiting until Stop", func(t *testing.T) {
		reg, m := registry(waits.Config{Recheck: time.Hour})
		// A wake that came before Park is kept, as for Next.
		w, steps := park(t, reg, far, func(*waits.Waiter) { reg.Notify(task(2)) })
		if s := wantStep(t, steps, waits.Woken); s.wk.Revision != 2 {
			t.Fatalf("first wake %+v, want revision 2", s.wk)
		}
		if n := testutil.ToFloat64(m.Waiters); n != 1 {
			t.Fatalf("%v waiting, want 1", n)
		}
		reg.Notify(task(3))
		if s := wantStep(t, steps, waits.Woken); s.wk.Revision != 3 {
			t.Fatalf("second wake %+v, want revision 3", s.wk)
		}
		w.Stop()
		w.Stop()
		if n := testutil.ToFloat64(m.Waiters); n != 0 {
			t.Fatalf("%v waiting after Stop (twice), want 0", n)
		}
		reg.Notify(task(4))
		select {
		case s := <-steps:
			t.Fatalf("a step after Stop: %+v", s)
		default:
		}
	})
	t.Run("the re-check, then the deadline", func(t *testing.T) {
		reg, _ := registry(waits.Config{Recheck: time.Millisecond})
		_, steps := park(t, reg, time.Now().Add(50*time.Millisecond), nil, waits.Timeout)
		wantStep(t, steps, waits.Recheck)
		for s := nextStep(t, steps); s.why != waits.Timeout; s = nextStep(t, steps) {
			if s.why != waits.Recheck {
				t.Fatalf("step %+v, want re-checks until the deadline", s)
			}
		}
	})
	t.Run("a deadline passed already", func(t *testing.T) {
		reg, _ := registry(waits.Config{})
		_, steps := park(t, reg, time.Now().Add(-time.Second), nil, waits.Timeout)
		wantStep(t, steps, waits.Timeout)
	})
	for _, c := range []struct {
		name string
		gone func(*waits.Waiters, *waits.Waiter)
	}{
		{"the caller leaves", func(_ *waits.Waiters, w *waits.Waiter) { w.Leave() }},
		{"the server drains", func(reg *waits.Waiters, _ *waits.Waiter) { reg.Drain() }},
	} {
		t.Run(c.name+", after or before Park", func(t *testing.T) {
			reg, _ := registry(waits.Config{})
			w, steps := park(t, reg, far, nil, waits.Gone)
			c.gone(reg, w)
			wantStep(t, steps, waits.Gone)
			_, early := park(t, reg, far, func(w *waits.Waiter) { c.gone(reg, w) }, waits.Gone)
			wantStep(t, early, waits.Gone)
		})
	}
}
