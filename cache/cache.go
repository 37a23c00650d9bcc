// Package cache holds the bounded maps a replica keeps of what it has seen
// (task snapshots, resolved tokens, hook references), least recently used
// first out. A cache is only ever a shortcut: whatever it holds may be stale
// or gone, and the scripts that write check against Redis. It imports
// nothing of this module.
package cache

import (
	"container/list"
	"sync"
)

// LRU is a bounded map, safe for concurrent use.
type LRU[V any] struct {
	mu    sync.Mutex
	cap   int
	items map[string]*list.Element
	order *list.List // front: most recently used
}

type entry[V any] struct {
	key string
	val V
}

// New makes a cache of at most capacity entries.
func New[V any](capacity int) *LRU[V] {
	return &LRU[V]{cap: capacity, items: map[string]*list.Element{}, order: list.New()}
}

// Get returns the entry and marks it recently used.
func (c *LRU[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry[V]).val, true
}

// Put stores v under key. When an entry is there already, v replaces it only
// if replace (nil: always) says so.
func (c *LRU[V]) Put(key string, v V, replace func(old V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*entry[V])
		if replace == nil || replace(e.val) {
			e.val = v
		}
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&entry[V]{key: key, val: v})
	for c.order.Len() > c.cap {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*entry[V]).key)
	}
}

// Drop removes the entry when drop (nil: always) says so.
func (c *LRU[V]) Drop(key string, drop func(V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok && (drop == nil || drop(el.Value.(*entry[V]).val)) {
		c.order.Remove(el)
		delete(c.items, key)
	}
}
