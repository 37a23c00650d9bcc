package tasks

import (
	"encoding/json"

	"github.com/taskhook/taskhook/cache"
)

// snapshots holds recent task snapshots on this replica, so a command can be
// decided and written in one round trip: the write script compares revisions,
// so a stale entry costs a retry, never a wrong answer. It is fed by this
// replica's reads and writes and by the wake-ups of every replica.
type snapshots struct{ c *cache.LRU[cached] }

type cached struct {
	rev  int64
	json []byte
}

func newSnapshots(capacity int) snapshots { return snapshots{cache.New[cached](capacity)} }

// get returns the cached task, decoded, or false.
func (c snapshots) get(id string) (Task, []byte, bool) {
	e, ok := c.c.Get(id)
	if !ok {
		return Task{}, nil, false
	}
	var t Task
	if err := json.Unmarshal(e.json, &t); err != nil {
		c.drop(id)
		return Task{}, nil, false
	}
	return t, e.json, true
}

// put stores a snapshot unless a newer one is cached.
func (c snapshots) put(id string, rev int64, raw []byte) {
	c.c.Put(id, cached{rev: rev, json: raw}, func(old cached) bool { return old.rev <= rev })
}

// stale drops the entry if it is older than rev.
func (c snapshots) stale(id string, rev int64) {
	c.c.Drop(id, func(old cached) bool { return old.rev < rev })
}

func (c snapshots) drop(id string) { c.c.Drop(id, nil) }
