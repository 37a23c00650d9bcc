package store

import "sync"

// ownWakes are the task revisions this replica is writing. Their writer
// wakes this replica's waiters itself, with the record it wrote, so the
// fan-in passes over their wake-ups rather than wake the same waiters
// again with a hint that would cost each a read; other replicas' fan-ins
// hand the hint on. It holds the last ownWakesMax revisions expected: a
// wake-up this replica's fan-in never reads (none runs, or the stream was
// trimmed past it) is forgotten in turn.
type ownWakes struct {
	mu   sync.Mutex
	revs map[ownWake]struct{}
	ring [ownWakesMax]ownWake
	next int
}

type ownWake struct {
	id  string
	rev int64
}

const ownWakesMax = 4096

// expect notes that this replica is writing revision rev of task id.
func (o *ownWakes) expect(id string, rev int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.revs == nil {
		o.revs = make(map[ownWake]struct{}, ownWakesMax)
	}
	delete(o.revs, o.ring[o.next])
	w := ownWake{id, rev}
	o.ring[o.next] = w
	o.next = (o.next + 1) % ownWakesMax
	o.revs[w] = struct{}{}
}

// take reports whether revision rev of task id is one this replica wrote,
// and forgets it: the fan-in passes over its wake-up. A write that was not
// applied is forgotten the same way.
func (o *ownWakes) take(id string, rev int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	w := ownWake{id, rev}
	_, ok := o.revs[w]
	delete(o.revs, w)
	return ok
}
