package listlimit

import (
	"fmt"
	"testing"
	"time"
)

// A principal lists its burst at once, then at its rate, told how long to
// wait in between; a refused list is not counted; principals do not share
// a bucket.
func TestWait(t *testing.T) {
	t.Parallel()
	l := New(2, 3) // a list every 500ms, bursts of 3
	now := time.Unix(1000, 0)
	for i := range 3 {
		if d := l.Wait("alice", now); d != 0 {
			t.Fatalf("list %d of the burst: wait %v", i+1, d)
		}
	}
	if d := l.Wait("alice", now); d != 500*time.Millisecond {
		t.Fatalf("past the burst: wait %v, want 500ms", d)
	}
	if d := l.Wait("alice", now.Add(100*time.Millisecond)); d != 400*time.Millisecond {
		t.Fatalf("a refused list was counted: wait %v, want 400ms", d)
	}
	if d := l.Wait("bob", now); d != 0 {
		t.Fatalf("another principal: wait %v", d)
	}
	if d := l.Wait("alice", now.Add(500*time.Millisecond)); d != 0 {
		t.Fatalf("after the wait: wait %v", d)
	}
}

// Past maxPrincipals, the idle principals (a full bucket) are forgotten and
// the busy ones kept; when none is idle, all are.
func TestForgetsIdlePrincipals(t *testing.T) {
	t.Parallel()
	l := New(1, 2)
	now := time.Unix(1000, 0)
	l.Wait("busy", now)
	l.Wait("busy", now)
	for i := range maxPrincipals - 1 {
		l.Wait(fmt.Sprint("p", i), now.Add(-time.Hour)) // their buckets refill by now
	}
	if len(l.byWho) != maxPrincipals {
		t.Fatalf("%d principals remembered", len(l.byWho))
	}
	l.Wait("new", now)
	if len(l.byWho) != 2 || l.byWho["busy"] == nil || l.byWho["new"] == nil {
		t.Fatalf("after forgetting the idle: %d principals", len(l.byWho))
	}
	if d := l.Wait("busy", now); d == 0 {
		t.Fatal("the busy principal was forgotten")
	}

	l = New(1, 1)
	for i := range maxPrincipals {
		l.Wait(fmt.Sprint("p", i), now)
	}
	l.Wait("new", now)
	if len(l.byWho) != 1 {
		t.Fatalf("none idle: %d principals remembered, want only the new one", len(l.byWho))
	}
}
