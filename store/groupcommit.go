package store

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// groupCommit sends the scripts of concurrent requests together. While a lane
// has a batch on the wire, the scripts that arrive wait for a lane, and the
// next free lane takes all of them at once as one pipeline: under load, N
// commands cost one write and one read on each side instead of N, which is
// most of what a command costs outside its script. A script that finds a free
// lane goes out at once; nothing waits for company.
//
// Nothing is sent twice here and nothing changes order within one caller:
// each caller has one script in flight. A caller whose context ends is
// answered at once with its error, the outcome unknown, as a timed-out
// command always was; if no lane has taken its script yet, it is never sent.
type groupCommit struct {
	rdb   redis.UniversalClient
	mu    sync.Mutex
	queue []*scriptRun  // scripts no lane has taken yet, oldest first
	wake  chan struct{} // a lane may find work (capacity 1)
	stop  chan struct{}
	lanes sync.WaitGroup
	once  sync.Once
}

// scriptRun is one caller's script and, once done is closed, its answer.
type scriptRun struct {
	ctx   context.Context
	sc    *redis.Script
	keys  []string
	args  []any
	reply any
	err   error
	done  chan struct{}
}

// maxBatch and maxBatchBytes bound one pipeline, so a burst of calls is
// answered in a few round trips rather than one very long one, and a large
// body (a hook post of up to a MiB) does not hold many small commands behind
// its write.
const (
	maxBatch      = 64
	maxBatchBytes = 256 << 10
)

// size is about how many bytes the script's arguments take on the wire.
func (c *scriptRun) size() int {
	n := 0
	for _, k := range c.keys {
		n += len(k)
	}
	for _, a := range c.args {
		switch v := a.(type) {
		case string:
			n += len(v)
		case []byte:
			n += len(v)
		default:
			n += 8
		}
	}
	return n
}

// commitLanes is how many batches may be on the wire at once. More than one,
// so that a slow script or a stalled cluster node does not hold every other
// command behind it; few, so that batches stay deep under load.
const commitLanes = 4

func newGroupCommit(rdb redis.UniversalClient, lanes int) *groupCommit {
	g := &groupCommit{rdb: rdb, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	g.lanes.Add(lanes)
	for range lanes {
		go g.lane()
	}
	return g
}

// run sends one script and waits for its answer.
func (g *groupCommit) run(ctx context.Context, sc *redis.Script, keys []string, args []any) (any, error) {
	c := &scriptRun{ctx: ctx, sc: sc, keys: keys, args: args, done: make(chan struct{})}
	g.mu.Lock()
	select {
	case <-g.stop:
		g.mu.Unlock()
		return nil, redis.ErrClosed
	default:
	}
	g.queue = append(g.queue, c)
	g.mu.Unlock()
	g.signal()
	select {
	case <-c.done:
		return c.reply, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *groupCommit) signal() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// take removes queued scripts, oldest first: the oldest, and after it those
// of the same pool (whose traffic it is: requests' or the background
// readers', counted apart), up to maxBatch of them and no more once they
// carry maxBatchBytes of arguments. Scripts of the other pool keep their
// places.
func (g *groupCommit) take(batch []*scriptRun) []*scriptRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	batch = batch[:0]
	if len(g.queue) == 0 {
		return batch
	}
	pool, size := poolOf(g.queue[0].ctx), 0
	left := g.queue[:0]
	for _, c := range g.queue {
		if len(batch) < maxBatch && (len(batch) == 0 || size < maxBatchBytes) && poolOf(c.ctx) == pool {
			batch = append(batch, c)
			size += c.size()
			continue
		}
		left = append(left, c)
	}
	clear(g.queue[len(left):])
	g.queue = left
	if len(g.queue) > 0 {
		g.signal() // another lane may take the rest
	}
	return batch
}

// pending is the number of scripts waiting for a lane.
func (g *groupCommit) pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// close stops the lanes once the batches on the wire are answered; scripts
// still queued and calls that come later fail with redis.ErrClosed.
func (g *groupCommit) close() {
	g.mu.Lock()
	g.once.Do(func() { close(g.stop) })
	left := g.queue
	g.queue = nil
	g.mu.Unlock()
	for _, c := range left {
		c.err = redis.ErrClosed
		close(c.done)
	}
	g.lanes.Wait()
}

func (g *groupCommit) lane() {
	defer g.lanes.Done()
	var batch []*scriptRun
	for {
		select {
		case <-g.wake:
		case <-g.stop:
			return
		}
		for batch = g.take(batch); len(batch) > 0; batch = g.take(batch) {
			g.send(batch)
		}
	}
}

// send runs a batch: alone, a script goes as EVALSHA (EVAL after NOSCRIPT);
// together, as one pipeline of EVALSHAs, then one of EVALs for those a Redis
// that lost its scripts refused.
func (g *groupCommit) send(batch []*scriptRun) {
	live := batch[:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	// The batch outlives any one caller's context (a caller that gives up is
	// answered at once); it keeps the first caller's values, which say whose
	// traffic it is (every script of a batch is of one pool), and the
	// store's own timeout bounds it.
	ctx := context.WithoutCancel(live[0].ctx)
	if len(live) == 1 {
		c := live[0]
		c.reply, c.err = c.sc.Run(ctx, g.rdb, c.keys, c.args...).Result()
		close(c.done)
		return
	}
	cmds := evalPipeline(ctx, g.rdb, len(live), func(i int) (*redis.Script, []string, []any) {
		return live[i].sc, live[i].keys, live[i].args
	})
	for i, c := range live {
		c.reply, c.err = cmds[i].Result()
		close(c.done)
	}
}
