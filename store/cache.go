package store

import (
	"container/list"
	"sync"
)

// Cache is a bounded map of records this replica has seen, least recently
// used first out. It is only ever a shortcut: whatever it holds may be stale
// or gone, and the scripts that write check against Redis.
type Cache[V any] struct {
	mu    sync.Mutex
	cap   int
	items map[string]*list.Element
	order *list.List // front: most recently used
}

type cacheEntry[V any] struct {
	key string
	val V
}

// NewCache makes a cache of at most capacity entries.
func NewCache[V any](capacity int) *Cache[V] {
	return &Cache[V]{cap: capacity, items: map[string]*list.Element{}, order: list.New()}
}

// Get returns the entry and marks it recently used.
func (c *Cache[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry[V]).val, true
}

// Put stores v under key. When an entry is there already, v replaces it only
// if replace (nil: always) says so.
func (c *Cache[V]) Put(key string, v V, replace func(old V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*cacheEntry[V])
		if replace == nil || replace(e.val) {
			e.val = v
		}
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheEntry[V]{key: key, val: v})
	for c.order.Len() > c.cap {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry[V]).key)
	}
}

// Drop removes the entry when drop (nil: always) says so.
func (c *Cache[V]) Drop(key string, drop func(V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok && (drop == nil || drop(el.Value.(*cacheEntry[V]).val)) {
		c.order.Remove(el)
		delete(c.items, key)
	}
}

// Len is the number of entries.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
