package providertest

import (
	"sync"
	"time"
)

// Clock is a clock for sign-in attempts and tokens that a test moves on by
// hand: the real time plus what Advance added. Its zero value is ready.
type Clock struct {
	mu  sync.Mutex
	off time.Duration
}

// Now is the real time, moved on by every Advance so far.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

// Advance moves the clock on by d (back, when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}
