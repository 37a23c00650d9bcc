package app_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// latencies collects one duration series per command.
type latencies struct {
	mu sync.Mutex
	by map[string][]time.Duration
}

func (l *latencies) add(name string, d time.Duration) {
	l.mu.Lock()
	l.by[name] = append(l.by[name], d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	for name, ds := range l.by {
		slices.Sort(ds)
		q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
		b.ReportMetric(q(0.50), name+"-p50-ms")
		b.ReportMetric(q(0.99), name+"-p99-ms")
	}
}

// BenchmarkTaskLifecycleHTTP drives create → progress → complete over HTTP on
// loopback against real Redis, from parallel clients (GOMAXPROCS × 8).
func BenchmarkTaskLifecycleHTTP(b *testing.B) {
	srv := apptest.Start(b, storetest.Standalone(b), app.Config{LogLevel: "warn"})
	ctx := context.Background()
	tok := apptest.Token(b, "bench")
	ses, err := client.New(srv.URL, tok).CreateSession(ctx, client.CreateSessionInput{})
	if err != nil {
		b.Fatal(err)
	}
	lat := &latencies{by: map[string][]time.Duration{}}
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		cl := client.New(srv.URL, tok)
		timed := func(name string, f func() error) {
			t0 := time.Now()
			if err := f(); err != nil {
				b.Error(err)
			}
			lat.add(name, time.Since(t0))
		}
		for pb.Next() {
			var task *client.Task
			timed("create", func() (err error) {
				task, err = cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Input: map[string]any{"repo": "x"}})
				return err
			})
			if task == nil {
				continue
			}
			timed("progress", func() error {
				_, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("building")})
				return err
			})
			timed("complete", func() error { _, err := cl.Complete(ctx, task.TaskID, map[string]any{"ok": true}); return err })
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "lifecycles/s")
	b.ReportMetric(float64(3*b.N)/elapsed.Seconds(), "commands/s")
	lat.report(b)
}
