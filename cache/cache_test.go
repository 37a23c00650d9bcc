package cache

import "testing"

// len is the number of entries, for the test only.
func (c *LRU[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func TestCacheIsBoundedAndKeepsRecent(t *testing.T) {
	t.Parallel()
	c := New[int](2)
	c.Put("a", 1, nil)
	c.Put("b", 2, nil)
	c.Get("a")
	c.Put("c", 3, nil)
	if _, ok := c.Get("b"); ok || c.len() != 2 {
		t.Fatalf("the least recently used entry stayed (len %d)", c.len())
	}
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatal("lost a recently used entry")
	}
	c.Put("a", 0, func(old int) bool { return old < 0 })
	if v, _ := c.Get("a"); v != 1 {
		t.Fatal("replace said no, the entry changed")
	}
	c.Drop("a", func(v int) bool { return v > 5 })
	if _, ok := c.Get("a"); !ok {
		t.Fatal("drop said no, the entry went")
	}
	c.Drop("a", nil)
	if _, ok := c.Get("a"); ok {
		t.Fatal("drop kept the entry")
	}
}
