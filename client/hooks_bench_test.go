package client_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// BenchmarkHookIteratorLatency posts b.N events to a hook's callback URL at
// 1,000 a second and measures, for each, from the 202 to its arrival in the
// loop body of Hook(id).Events, which acks it when the body returns.
func BenchmarkHookIteratorLatency(b *testing.B) {
	srv := apptest.Standalone(b, app.Config{HookRateLimit: 1000, HookBurst: 1 << 30, LogLevel: "error"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl := srv.Client(b, "bench")
	ses := apptest.Session(b, ctx, cl)
	hook, err := cl.CreateHook(ctx, client.CreateHookInput{SessionID: ses.SessionID})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	accepted := make(map[int]time.Time, b.N)
	arrived := make(map[int]time.Time, b.N)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range cl.Hook(hook.HookID).Events(ctx, client.HookEventsOptions{Count: 100, Wait: 5 * time.Second}) {
			if err != nil {
				b.Error(err)
				return
			}
			var body struct{ N int }
			_ = json.Unmarshal([]byte(ev.Body), &body)
			mu.Lock()
			arrived[body.N] = time.Now()
			n := len(arrived)
			mu.Unlock()
			if n == b.N {
				return
			}
		}
	}()
	b.ResetTimer()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := range b.N {
		<-tick.C
		payload, _ := json.Marshal(map[string]int{"n": i})
		if _, err := cl.Post(ctx, hook.URL, payload, nil); err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		accepted[i] = time.Now()
		mu.Unlock()
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		b.Fatal("the iterator did not get every event")
	}
	b.StopTimer()
	var ds []time.Duration
	for i, at := range accepted {
		if got, ok := arrived[i]; ok {
			ds = append(ds, max(got.Sub(at), 0)) // the body may see an event before its poster reads the 202
		}
	}
	slices.Sort(ds)
	ms := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
