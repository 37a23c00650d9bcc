package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// gate holds the first command sent through a client until it is opened,
// and records the size of every pipeline (a new connection's set-up aside).
type gate struct {
	held      chan struct{} // closed when the first command is held
	open      chan struct{}
	first     sync.Once
	mu        sync.Mutex
	pipelines []int
	pools     []string // the pool each pipeline was counted in
}

func newGate() *gate { return &gate{held: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			g.hold()
		}
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !handshake(cmds) {
			g.mu.Lock()
			g.pipelines = append(g.pipelines, len(cmds))
			g.pools = append(g.pools, poolOf(ctx))
			g.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

// recorded is the size and the pool of each pipeline sent so far.
func (g *gate) recorded() ([]int, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.pipelines), slices.Clone(g.pools)
}

func (g *gate) hold() {
	g.first.Do(func() {
		close(g.held)
		<-g.open
	})
}

// groupCommitClients are the clients the test runs on: the embedded server,
// and the test Redis when one is configured.
func groupCommitClients(t *testing.T) map[string]redis.UniversalClient {
	t.Helper()
	out := map[string]redis.UniversalClient{}
	emb, opts, err := openEmbedded(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.close)
	out["embedded"] = redis.NewClient(opts)
	if u := os.Getenv("TASKHOOK_TEST_REDIS_URL"); u != "" {
		o, err := redis.ParseURL(u)
		if err != nil {
			t.Fatal(err)
		}
		out["redis"] = redis.NewClient(o)
	}
	for _, c := range out {
		t.Cleanup(func() { c.Close() })
	}
	return out
}

// waitFor polls cond until it holds or a minute has passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// heldLane is a group commit of one lane on rdb, the lane held on a first
// script until release, which also checks that script's answer.
func heldLane(t *testing.T, rdb redis.UniversalClient) (commit *groupCommit, g *gate, release func()) {
	t.Helper()
	g = newGate()
	rdb.AddHook(g)
	commit = newGroupCommit(rdb, 1)
	first := make(chan error, 1)
	go func() {
		reply, err := commit.run(context.Background(), redis.NewScript("return 'first'"), []string{"k"}, nil)
		if err == nil && reply != "first" {
			err = fmt.Errorf("the first script answered %v", reply)
		}
		first <- err
	}()
	<-g.held
	return commit, g, func() {
		t.Helper()
		close(g.open)
		if err := <-first; err != nil {
			t.Fatalf("the script on the wire: %v", err)
		}
	}
}

// loadedScript is a script of body that rdb has loaded, so that its first
// EVALSHA finds it.
func loadedScript(t *testing.T, rdb redis.UniversalClient, body string) *redis.Script {
	t.Helper()
	sc := redis.NewScript(body)
	if err := sc.Load(context.Background(), rdb).Err(); err != nil {
		t.Fatal(err)
	}
	return sc
}

// queueInTurn starts call(i) for each i below n, each once the one before
// has queued behind the held lane.
func queueInTurn(t *testing.T, commit *groupCommit, n int, call func(i int)) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { call(i) })
		waitFor(t, "the script to queue", func() bool { return commit.pending() == i+1 })
	}
	return &wg
}

// batchesOf queues call(i) for each i below n in turn behind a held lane,
// with sc a loaded script of body, then releases the lane and tells the
// sizes and pools of the pipelines that went out.
func batchesOf(t *testing.T, rdb redis.UniversalClient, body string, n int,
	call func(commit *groupCommit, sc *redis.Script, i int)) (pipelines []int, pools []string) {
	t.Helper()
	sc := loadedScript(t, rdb, body)
	commit, g, release := heldLane(t, rdb)
	defer commit.close()
	wg := queueInTurn(t, commit, n, func(i int) { call(commit, sc, i) })
	release()
	wg.Wait()
	return g.recorded()
}

// While a lane has a batch on the wire, the scripts that come wait and go
// out together as one pipeline, each caller answered with its own reply; a
// caller that gives up while queued is answered at once and its script is
// never sent.
func TestGroupCommitSendsWaitingScriptsAsOnePipeline(t *testing.T) {
	for name, rdb := range groupCommitClients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			commit, g, release := heldLane(t, rdb)
			defer commit.close()
			// A script body of the test's own, so its first EVALSHA meets
			// NOSCRIPT and the batch must fall back to EVAL.
			prefix := fmt.Sprintf("gc%d:", time.Now().UnixNano())
			sc := redis.NewScript("-- " + prefix + "\nredis.call('INCR', KEYS[1]) return ARGV[1]")
			t.Cleanup(func() {
				keys, _ := rdb.Keys(ctx, prefix+"*").Result()
				if len(keys) > 0 {
					rdb.Del(ctx, keys...)
				}
			})

			const n = 10
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					want := strconv.Itoa(i)
					reply, err := commit.run(ctx, sc, []string{prefix + want}, []any{want})
					if err == nil && reply != want {
						err = fmt.Errorf("caller %d got reply %v", i, reply)
					}
					errs[i] = err
				})
			}
			gone, cancel := context.WithCancel(ctx)
			quit := make(chan error, 1)
			go func() {
				_, err := commit.run(gone, sc, []string{prefix + "gone"}, []any{"gone"})
				quit <- err
			}()
			waitFor(t, "every script to queue", func() bool { return commit.pending() == n+1 })
			cancel()
			if err := <-quit; !errors.Is(err, context.Canceled) {
				t.Fatalf("the caller that gave up got %v, want context.Canceled", err)
			}

			release()
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			// One pipeline of EVALSHAs (all NOSCRIPT), one of EVALs.
			if pipelines, _ := g.recorded(); !slices.Equal(pipelines, []int{n, n}) {
				t.Errorf("pipelines of %v commands, want [%d %d]", pipelines, n, n)
			}
			for i := range n {
				if v, _ := rdb.Get(ctx, prefix+strconv.Itoa(i)).Result(); v != "1" {
					t.Errorf("script %d ran %q times, want once", i, v)
				}
			}
			if ran, _ := rdb.Exists(ctx, prefix+"gone").Result(); ran != 0 {
				t.Errorf("the script of the caller that gave up was sent")
			}
		})
	}
}

// A pipeline stops taking scripts once they carry maxBatchBytes of
// arguments: large bodies do not all go out in one write.
func TestGroupCommitBoundsABatchByBytes(t *testing.T) {
	rdb := groupCommitClients(t)["embedded"]
	ctx := context.Background()
	big := strings.Repeat("b", maxBatchBytes*3/4)
	sizes := []int{len(big), len(big), len(big), 1, 1}
	pipelines, _ := batchesOf(t, rdb, "return #ARGV[1]", len(sizes), func(commit *groupCommit, sc *redis.Script, i int) {
		reply, err := commit.run(ctx, sc, []string{"k"}, []any{big[:sizes[i]]})
		if err != nil || reply != int64(sizes[i]) {
			t.Errorf("script %d: %v, %v; want %d", i, reply, err, sizes[i])
		}
	})
	// The first two large ones pass the bound; the third goes with the small.
	if !slices.Equal(pipelines, []int{2, 3}) {
		t.Errorf("pipelines of %v scripts, want [2 3]", pipelines)
	}
}

// A batch of many scripts with large arguments and large replies goes out
// as one pipeline and each caller gets its own reply, on every client: the
// embedded store's connections take a whole batch before the first reply is
// read.
func TestGroupCommitSendsLargeBatches(t *testing.T) {
	for name, rdb := range groupCommitClients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			const n = 8
			arg := func(i int) string { return strings.Repeat(strconv.Itoa(i), maxBatchBytes/n-1024) }
			pipelines, _ := batchesOf(t, rdb, "return ARGV[1]", n, func(commit *groupCommit, sc *redis.Script, i int) {
				reply, err := commit.run(ctx, sc, []string{"k"}, []any{arg(i)})
				if got, _ := reply.(string); err != nil || got != arg(i) {
					t.Errorf("script %d: %d bytes back, %v; want its own %d", i, len(got), err, len(arg(i)))
				}
			})
			if !slices.Equal(pipelines, []int{n}) {
				t.Errorf("pipelines of %v scripts, want [%d]", pipelines, n)
			}
		})
	}
}

// A batch holds the scripts of one pool, so that the round trips of
// requests and of the background readers are counted apart; the others keep
// their places in the queue.
func TestGroupCommitBatchesOnePoolAtATime(t *testing.T) {
	rdb := groupCommitClients(t)["embedded"]
	ctx := context.Background()
	ctxs := []context.Context{ctx, Background(ctx), ctx, Background(ctx), ctx}
	pipelines, pools := batchesOf(t, rdb, "return 1", len(ctxs), func(commit *groupCommit, sc *redis.Script, i int) {
		if _, err := commit.run(ctxs[i], sc, []string{"k"}, nil); err != nil {
			t.Errorf("script %d: %v", i, err)
		}
	})
	if !slices.Equal(pipelines, []int{3, 2}) || !slices.Equal(pools, []string{"requests", "wakeups"}) {
		t.Errorf("pipelines of %v scripts in pools %v, want [3 2] in [requests wakeups]", pipelines, pools)
	}
}

// A closed group commit answers every queued and later call with
// redis.ErrClosed, and none waits.
func TestGroupCommitClosedAnswersAtOnce(t *testing.T) {
	rdb := groupCommitClients(t)["embedded"]
	sc := redis.NewScript("return 1")
	commit, _, release := heldLane(t, rdb)
	queued := make(chan error, 1)
	go func() {
		_, err := commit.run(context.Background(), sc, []string{"k"}, nil)
		queued <- err
	}()
	waitFor(t, "the second script to queue", func() bool { return commit.pending() == 1 })
	closed := make(chan struct{})
	go func() { commit.close(); close(closed) }()
	if err := <-queued; !errors.Is(err, redis.ErrClosed) {
		t.Errorf("a queued call got %v, want redis.ErrClosed", err)
	}
	release() // the call on the wire finishes with its answer
	<-closed
	if _, err := commit.run(context.Background(), sc, []string{"k"}, nil); !errors.Is(err, redis.ErrClosed) {
		t.Errorf("a call after close got %v, want redis.ErrClosed", err)
	}
}

var _ redis.Hook = (*gate)(nil)
