package tasks

import (
	"container/list"
	"encoding/json"
	"sync"
)

// cache holds recent task snapshots on this replica, so a command can be
// decided and written in one round trip: the write script compares revisions,
// so a stale entry costs a retry, never a wrong answer. It is fed by this
// replica's reads and writes and by the wake-ups of every replica.
type cache struct {
	mu    sync.Mutex
	cap   int
	items map[string]*list.Element
	order *list.List // front: most recently used
}

type cached struct {
	id   string
	rev  int64
	json []byte
}

func newCache(capacity int) *cache {
	return &cache{cap: capacity, items: map[string]*list.Element{}, order: list.New()}
}

// get returns the cached task, decoded, or false.
func (c *cache) get(id string) (Task, []byte, bool) {
	c.mu.Lock()
	el, ok := c.items[id]
	var raw []byte
	if ok {
		c.order.MoveToFront(el)
		raw = el.Value.(*cached).json
	}
	c.mu.Unlock()
	if !ok {
		return Task{}, nil, false
	}
	var t Task
	if err := json.Unmarshal(raw, &t); err != nil {
		c.drop(id)
		return Task{}, nil, false
	}
	return t, raw, true
}

// put stores a snapshot unless a newer one is cached.
func (c *cache) put(id string, rev int64, raw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		e := el.Value.(*cached)
		if e.rev <= rev {
			e.rev, e.json = rev, raw
		}
		c.order.MoveToFront(el)
		return
	}
	c.items[id] = c.order.PushFront(&cached{id: id, rev: rev, json: raw})
	for c.order.Len() > c.cap {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cached).id)
	}
}

// stale drops the entry if it is older than rev.
func (c *cache) stale(id string, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok && el.Value.(*cached).rev < rev {
		c.order.Remove(el)
		delete(c.items, id)
	}
}

func (c *cache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		c.order.Remove(el)
		delete(c.items, id)
	}
}
