package hooks

import (
	"container/list"
	"sync"
)

// tokenCache maps token hashes to the ingest config of their hook on this
// replica, so a callback costs one round trip: the mapping and the config
// never change, and a hook that is gone is dropped when ingest finds it gone.
// It is bounded; the least recently used entry goes first.
type tokenCache struct {
	mu    sync.Mutex
	cap   int
	items map[string]*list.Element
	order *list.List // front: most recently used
}

type tokenEntry struct {
	hash string
	cfg  ingestConfig
}

func newTokenCache(capacity int) *tokenCache {
	return &tokenCache{cap: capacity, items: map[string]*list.Element{}, order: list.New()}
}

func (c *tokenCache) get(hash string) (ingestConfig, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[hash]
	if !ok {
		return ingestConfig{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*tokenEntry).cfg, true
}

func (c *tokenCache) put(hash string, cfg ingestConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[hash]; ok {
		el.Value.(*tokenEntry).cfg = cfg
		c.order.MoveToFront(el)
		return
	}
	c.items[hash] = c.order.PushFront(&tokenEntry{hash: hash, cfg: cfg})
	for c.order.Len() > c.cap {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*tokenEntry).hash)
	}
}

func (c *tokenCache) drop(hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[hash]; ok {
		c.order.Remove(el)
		delete(c.items, hash)
	}
}

func (c *tokenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
