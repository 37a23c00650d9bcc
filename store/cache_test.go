package store_test

import (
	"testing"

	"github.com/taskhook/taskhook/store"
)

func TestCacheIsBoundedAndKeepsRecent(t *testing.T) {
	t.Parallel()
	c := store.NewCache[int](2)
	c.Put("a", 1, nil)
	c.Put("b", 2, nil)
	c.Get("a")
	c.Put("c", 3, nil)
	if _, ok := c.Get("b"); ok || c.Len() != 2 {
		t.Fatalf("the least recently used entry stayed (len %d)", c.Len())
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
