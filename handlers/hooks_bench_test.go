package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// Benchmarks of the callback route against the test Redis (make bench).
// BenchmarkHookIngest and BenchmarkRawXADD run at the same concurrency
// (GOMAXPROCS goroutines, see -cpu) against the same Redis, so their ns/op
// compare; each also reports p50/p99 latency.

type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	q := func(p float64) float64 { return float64(l.d[int(p*float64(len(l.d)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

func benchTransport(b *testing.B) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func BenchmarkHookIngest(b *testing.B) {
	e := startEnv(b, storetest.Standalone(b), app.Config{HookRateLimit: 1000, HookBurst: 1 << 30, LogLevel: "error"})
	_, token := e.hook(b, client.CreateHookInput{SessionID: e.session(b)})
	hc := benchTransport(b)
	url := e.srv.URL + "/v1/callback/" + token
	body := `{"state":"running","job":"bench"}`
	var lat latencies
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			start := time.Now()
			res, err := hc.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusAccepted {
				b.Errorf("status %d", res.StatusCode)
				return
			}
			lat.add(time.Since(start))
		}
	})
	b.StopTimer()
	lat.report(b)
}

func BenchmarkRawXADD(b *testing.B) {
	sc := storetest.Standalone(b)
	rdb := storetest.Redis(b, sc)
	key := sc.Prefix + "{0}:bench:xadd"
	body := `{"state":"running","job":"bench"}`
	ctx := context.Background()
	var lat latencies
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			start := time.Now()
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"b", body}}).Err(); err != nil {
				b.Error(err)
				return
			}
			lat.add(time.Since(start))
		}
	})
	b.StopTimer()
	lat.report(b)
}

// BenchmarkHookDeliveryLatency posts b.N events at 1,000 a second and
// measures from each 202 to the event's arrival in a long-polling reader
// that acks what it gets.
func BenchmarkHookDeliveryLatency(b *testing.B) {
	e := startEnv(b, storetest.Standalone(b), app.Config{HookRateLimit: 1000, HookBurst: 1 << 30, LogLevel: "error"})
	hook, token := e.hook(b, client.CreateHookInput{SessionID: e.session(b)})
	hc := benchTransport(b)
	e.read(b, hook, "consumer=r") // makes the group

	var mu sync.Mutex
	accepted := map[string]time.Time{}
	arrived := map[string]time.Time{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			mu.Lock()
			n := len(arrived)
			mu.Unlock()
			if n >= b.N {
				return
			}
			req, _ := http.NewRequest("GET", e.srv.URL+"/v1/hooks/"+hook+"/events?consumer=r&count=100&wait=5s", nil)
			req.Header.Set("Authorization", "Bearer "+e.alice)
			res, err := hc.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			var batch struct {
				Events []struct{ EventID string }
			}
			err = json.NewDecoder(res.Body).Decode(&batch)
			res.Body.Close()
			if err != nil {
				b.Error(err)
				return
			}
			now := time.Now()
			ids := make([]string, 0, len(batch.Events))
			mu.Lock()
			for _, ev := range batch.Events {
				arrived[ev.EventID] = now
				ids = append(ids, ev.EventID)
			}
			mu.Unlock()
			if len(ids) > 0 {
				body, _ := json.Marshal(map[string]any{"eventIds": ids})
				req, _ := http.NewRequest("POST", e.srv.URL+"/v1/hooks/"+hook+"/ack", strings.NewReader(string(body)))
				req.Header.Set("Authorization", "Bearer "+e.alice)
				req.Header.Set("Content-Type", "application/json")
				if res, err := hc.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}
		}
	}()

	b.ResetTimer()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for range b.N {
		<-tick.C
		res, err := hc.Post(e.srv.URL+"/v1/callback/"+token, "application/json", strings.NewReader(`{"n":1}`))
		if err != nil {
			b.Fatal(err)
		}
		var acc struct{ EventID string }
		_ = json.NewDecoder(res.Body).Decode(&acc)
		res.Body.Close()
		mu.Lock()
		accepted[acc.EventID] = time.Now()
		mu.Unlock()
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		b.Fatal("the reader did not get every event")
	}
	b.StopTimer()
	var lat latencies
	mu.Lock()
	for id, at := range accepted {
		if got, ok := arrived[id]; ok {
			// A reader can see an event before its poster reads the 202.
			lat.add(max(got.Sub(at), 0))
		}
	}
	mu.Unlock()
	lat.report(b)
}
