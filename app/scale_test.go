package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tasks"
)

// BenchmarkScale shows what the number of stored tasks costs a task command
// and a task read. On a redis-server of its own, it preloads tasks through
// the task service (the real create script, without HTTP) up to each stage
// of TASKHOOK_SCALE_STAGES (default 1000,100000,1000000), and at each stage
// times task lifecycles (create, progress, complete) and reads of random
// stored tasks over HTTP from 8 clients, and reads Redis's memory per stored
// task. Run it alone, once: make bench BENCH=Scale PKG=./app BENCHTIME=1x.
func BenchmarkScale(b *testing.B) {
	stages := []int{1000, 100000, 1000000}
	if v := os.Getenv("TASKHOOK_SCALE_STAGES"); v != "" {
		stages = stages[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("TASKHOOK_SCALE_STAGES: %q is not a count", f)
			}
			stages = append(stages, n)
		}
	}
	rs := startOwnRedis(b)
	rdb := redis.NewClient(&redis.Options{Addr: rs.addr()})
	b.Cleanup(func() { _ = rdb.Close() })
	srv := apptest.Start(b, store.Config{URL: "redis://" + rs.addr() + "/0", Prefix: "scale:"}, app.Config{LogLevel: "warn"})
	ctx := context.Background()
	usedMemory := func() int64 {
		info, err := rdb.InfoMap(ctx, "memory").Result()
		if err != nil {
			b.Fatal(err)
		}
		n, _ := strconv.ParseInt(info["Memory"]["used_memory"], 10, 64)
		return n
	}
	base := usedMemory()

	loader := scaleLoader{srv: srv, p: authz.Principal{ID: "scale"}}
	tok := apptest.Token(b, "scale")
	b.ResetTimer()
	for range b.N {
		for _, n := range stages {
			b.StopTimer()
			loader.fill(b, ctx, n)
			perTask := float64(usedMemory()-base) / float64(n)
			b.StartTimer()
			lat := &latencies{by: map[string][]time.Duration{}}
			scaleRound(b, ctx, srv.URL, tok, loader.ids, lat)
			label := scaleLabel(n)
			for _, name := range []string{"command", "read"} {
				ds := lat.by[name]
				slices.Sort(ds)
				q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
				b.ReportMetric(q(0.50), label+"-"+name+"-p50-ms")
				b.ReportMetric(q(0.99), label+"-"+name+"-p99-ms")
			}
			b.ReportMetric(perTask, label+"-redis-B/task")
		}
	}
}

// scaleLoader preloads tasks in sessions of maxPerSession.
type scaleLoader struct {
	srv *apptest.Server
	p   authz.Principal
	ids []string // every stored task, in creation order
}

const maxPerSession = 10000

// fill creates tasks until n are stored, from 16 goroutines.
func (l *scaleLoader) fill(b *testing.B, ctx context.Context, n int) {
	var sessionIDs []string
	for need := n - len(l.ids); need > 0; need -= maxPerSession {
		raw, _, err := l.srv.App.Sessions.Create(ctx, l.p, sessions.CreateInput{}, store.Idempotency{})
		if err != nil {
			b.Fatal(err)
		}
		var s struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			b.Fatal(err)
		}
		sessionIDs = append(sessionIDs, s.SessionID)
	}
	start := len(l.ids)
	l.ids = append(l.ids, make([]string, n-start)...)
	var next atomic.Int64
	next.Store(int64(start))
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				in := tasks.CreateInput{
					SessionID: sessionIDs[(i-start)/maxPerSession],
					Kind:      "scale",
					Input:     json.RawMessage(fmt.Sprintf(`{"repo":"x","i":%d}`, i)),
				}
				reply, err := l.srv.App.Tasks.Create(ctx, l.p, in, store.Idempotency{})
				if err != nil {
					b.Error(err)
					return
				}
				var t struct {
					TaskID string `json:"taskId"`
				}
				if err := json.Unmarshal(reply.JSON, &t); err != nil {
					b.Error(err)
					return
				}
				l.ids[i] = t.TaskID
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// scaleRound times 1,000 lifecycles on a fresh session and 5,000 reads of
// random stored tasks, from 8 clients.
func scaleRound(b *testing.B, ctx context.Context, url, tok string, stored []string, lat *latencies) {
	ses, err := client.New(url, tok).CreateSession(ctx, client.CreateSessionInput{})
	if err != nil {
		b.Fatal(err)
	}
	var lifecycles, reads atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := client.New(url, tok)
			timed := func(name string, f func() error) bool {
				t0 := time.Now()
				if err := f(); err != nil {
					b.Error(err)
					return false
				}
				lat.add(name, time.Since(t0))
				return true
			}
			for lifecycles.Add(1) <= 1000 {
				var task *client.Task
				ok := timed("command", func() (err error) {
					task, err = cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Input: map[string]any{"repo": "x"}})
					return err
				}) && timed("command", func() error {
					_, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("building")})
					return err
				}) && timed("command", func() error { _, err := cl.Complete(ctx, task.TaskID, map[string]any{"ok": true}); return err })
				if !ok {
					return
				}
			}
			for reads.Add(1) <= 5000 {
				id := stored[rand.IntN(len(stored))]
				if !timed("read", func() error { _, err := cl.GetTask(ctx, id); return err }) {
					return
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// scaleLabel names a stage in a metric: 1k, 100k, 1M.
func scaleLabel(n int) string {
	switch {
	case n >= 1000000 && n%1000000 == 0:
		return strconv.Itoa(n/1000000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}
