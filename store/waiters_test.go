package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/store"
)

// parkedStep is what a parked waiter's step was called with.
type parkedStep struct {
	wk  store.Wake
	why store.Reason
}

// park registers a waiter on key of fan, calls before with it (when not
// nil), parks it, and returns it and the channel its steps arrive on; it
// stops itself on the reasons stopOn.
func park(t *testing.T, fan *store.FanIn, deadline time.Time, before func(*store.Waiter), stopOn ...store.Reason) (*store.Waiter, <-chan parkedStep) {
	t.Helper()
	w := fan.Wait(key)
	t.Cleanup(w.Stop)
	if before != nil {
		before(w)
	}
	steps := make(chan parkedStep, 16)
	w.Park(deadline, func(wk store.Wake, why store.Reason) {
		if slices.Contains(stopOn, why) {
			w.Stop()
		}
		steps <- parkedStep{wk, why}
	})
	return w, steps
}

var key = store.WaitKey(store.WakeTask, "task_a")

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
func wantStep(t *testing.T, steps <-chan parkedStep, why store.Reason) parkedStep {
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
	task := func(rev int64) store.Wake {
		return store.Wake{Kind: store.WakeTask, ID: "task_a", SessionID: "ses_1", Revision: rev, Types: []string{"task.progress"}}
	}
	far := time.Now().Add(time.Hour)

	t.Run("wakes, counted as waiting until Stop", func(t *testing.T) {
		fan, m := localFanIn(store.FanInConfig{Recheck: time.Hour})
		// A wake that came before Park is kept, as for Next.
		w, steps := park(t, fan, far, func(*store.Waiter) { fan.Notify(task(2)) })
		if s := wantStep(t, steps, store.Woken); s.wk.Revision != 2 {
			t.Fatalf("first wake %+v, want revision 2", s.wk)
		}
		if n := testutil.ToFloat64(m.Waiters); n != 1 {
			t.Fatalf("%v waiting, want 1", n)
		}
		fan.Notify(task(3))
		if s := wantStep(t, steps, store.Woken); s.wk.Revision != 3 {
			t.Fatalf("second wake %+v, want revision 3", s.wk)
		}
		w.Stop()
		w.Stop()
		if n := testutil.ToFloat64(m.Waiters); n != 0 {
			t.Fatalf("%v waiting after Stop (twice), want 0", n)
		}
		fan.Notify(task(4))
		select {
		case s := <-steps:
			t.Fatalf("a step after Stop: %+v", s)
		default:
		}
	})
	t.Run("the re-check, then the deadline", func(t *testing.T) {
		fan, _ := localFanIn(store.FanInConfig{Recheck: time.Millisecond})
		_, steps := park(t, fan, time.Now().Add(50*time.Millisecond), nil, store.Timeout)
		wantStep(t, steps, store.Recheck)
		for s := nextStep(t, steps); s.why != store.Timeout; s = nextStep(t, steps) {
			if s.why != store.Recheck {
				t.Fatalf("step %+v, want re-checks until the deadline", s)
			}
		}
	})
	t.Run("a deadline passed already", func(t *testing.T) {
		fan, _ := localFanIn(store.FanInConfig{})
		_, steps := park(t, fan, time.Now().Add(-time.Second), nil, store.Timeout)
		wantStep(t, steps, store.Timeout)
	})
	for _, c := range []struct {
		name string
		gone func(*store.FanIn, *store.Waiter)
	}{
		{"the caller leaves", func(_ *store.FanIn, w *store.Waiter) { w.Leave() }},
		{"the server drains", func(fan *store.FanIn, _ *store.Waiter) { fan.Drain() }},
	} {
		t.Run(c.name+", after or before Park", func(t *testing.T) {
			fan, _ := localFanIn(store.FanInConfig{})
			w, steps := park(t, fan, far, nil, store.Gone)
			c.gone(fan, w)
			wantStep(t, steps, store.Gone)
			_, early := park(t, fan, far, func(w *store.Waiter) { c.gone(fan, w) }, store.Gone)
			wantStep(t, early, store.Gone)
		})
	}
}
