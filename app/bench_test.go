package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
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

// report reports each series' p50 and p99, named prefix+series.
func (l *latencies) report(b *testing.B, prefix string) {
	for name, ds := range l.by {
		slices.Sort(ds)
		q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
		b.ReportMetric(q(0.50), prefix+name+"-p50-ms")
		b.ReportMetric(q(0.99), prefix+name+"-p99-ms")
	}
}

// BenchmarkTaskLifecycleHTTP drives create → progress → complete over HTTP on
// loopback against real Redis, from parallel clients (GOMAXPROCS × 8).
func BenchmarkTaskLifecycleHTTP(b *testing.B) {
	srv := apptest.Standalone(b, app.Config{LogLevel: "warn"})
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
	lat.report(b, "")
}

// BenchmarkNoisyNeighbour measures another tenant's task lifecycle latency
// on one Redis and two replicas (real server processes) while one tenant, on
// the other replica, cancels a session of 1,000 tasks (4 KiB each) and lists
// its tasks with filters in two loops, against the same tenant's latency with
// nobody else about. The noisy tenant lists as fast as the service lets it
// (it waits out a 429's Retry-After, as a client should). Each op is one
// quiet and one noisy round of 200 lifecycles (create, get, complete); the
// ratio of the p99s is reported.
func BenchmarkNoisyNeighbour(b *testing.B) {
	sc := storetest.Standalone(b)
	_, quietURL := apptest.StartProcess(b, sc)
	_, noisyURL := apptest.StartProcess(b, sc)
	ctx := context.Background()
	other := client.New(quietURL, apptest.Token(b, "other-tenant"))
	noisyToken := apptest.Token(b, "noisy-tenant")
	noisy := client.New(noisyURL, noisyToken)
	otherSes := apptest.Session(b, ctx, other)
	payload := string(make([]byte, 4096))
	round := func(lat *latencies, name string) {
		for range 200 {
			t0 := time.Now()
			tk, err := other.CreateTask(ctx, client.CreateTaskInput{SessionID: otherSes.SessionID})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := other.GetTask(ctx, tk.TaskID); err != nil {
				b.Fatal(err)
			}
			if _, err := other.Complete(ctx, tk.TaskID, nil); err != nil {
				b.Fatal(err)
			}
			lat.add(name, time.Since(t0))
		}
	}
	lat := &latencies{by: map[string][]time.Duration{}}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		ses := apptest.Session(b, ctx, noisy)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < 1000; i += 8 {
					if _, err := noisy.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Kind: "k", Input: payload}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.StartTimer()
		round(lat, "quiet")
		stop := make(chan struct{})
		var noise sync.WaitGroup
		noise.Add(3)
		go func() {
			defer noise.Done()
			if _, err := noisy.CancelSession(ctx, ses.SessionID, "noise"); err != nil {
				b.Error(err)
			}
		}()
		for _, status := range []string{"working", "completed"} {
			go func() {
				defer noise.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					// Raw HTTP, the page read and dropped: the noise must cost
					// the server its work, not this process (which also times
					// the other tenant) the decoding of 400 KB pages.
					wait, err := listRaw(ctx, noisyURL, noisyToken, "status="+status+"&kind=k&limit=100")
					switch {
					case err != nil:
						b.Error(err)
						return
					case wait > 0: // paced by the list limit: come back when told, as a client should
						select {
						case <-stop:
						case <-time.After(wait):
						}
					}
				}
			}()
		}
		round(lat, "noisy")
		close(stop)
		noise.Wait()
	}
	b.StopTimer()
	lat.report(b, "")
	q := func(name string) float64 {
		ds := lat.by[name]
		return float64(ds[int(0.99*float64(len(ds)-1))])
	}
	b.ReportMetric(q("noisy")/q("quiet"), "p99-ratio")
}

// listRaw lists tasks over plain HTTP and drops the page; on a 429 it says
// how long to wait.
func listRaw(ctx context.Context, base, token, query string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/tasks?"+query, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	switch resp.StatusCode {
	case http.StatusOK:
		return 0, nil
	case http.StatusTooManyRequests:
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return time.Duration(max(secs, 1)) * time.Second, nil
	}
	return 0, fmt.Errorf("list: %s", resp.Status)
}

// lagReceiver is a loopback notification receiver that notes when each
// event first arrived.
type lagReceiver struct {
	*httptest.Server
	mu sync.Mutex
	// by session id and webhook-id: an event id is unique within its
	// session's log only, and two sessions' events may share one
	received map[[2]string]time.Time
	repeats  int
	changed  chan struct{}
}

func newLagReceiver(b *testing.B) *lagReceiver {
	r := &lagReceiver{received: map[[2]string]time.Time{}, changed: make(chan struct{}, 1)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		var ev struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.NewDecoder(req.Body).Decode(&ev); err != nil || ev.SessionID == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		key := [2]string{ev.SessionID, req.Header.Get("webhook-id")}
		r.mu.Lock()
		if _, seen := r.received[key]; seen {
			r.repeats++
		} else {
			r.received[key] = at
		}
		r.mu.Unlock()
		select {
		case r.changed <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(r.Close)
	return r
}

func (r *lagReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.received)
}

// BenchmarkNotify offers 1,000 events a second for 5 s (task messages over
// HTTP from 8 producers, each on a task in a session of its own whose
// endpoint is one loopback receiver) and measures what the receiver gets:
// deliveries a second, from the first event to the last receipt, and the
// lag from each event's commit (its id's milliseconds) to its receipt. Each
// op is one such round. The receiver tells events apart by session and
// webhook-id: an event id is unique within its session's log only, and
// shared-ids/op counts the events whose webhook-id an event of another
// session carried too.
func BenchmarkNotify(b *testing.B) {
	const (
		rate      = 1000
		load      = 5 * time.Second
		producers = 8
	)
	srv := apptest.Start(b, storetest.Standalone(b), app.Config{LogLevel: "warn", AllowPrivateTargets: true})
	ctx := context.Background()
	cl := client.New(srv.URL, apptest.Token(b, "bench-notify"))
	recv := newLagReceiver(b)
	tasks := make([]string, producers)
	for i := range tasks {
		ses, err := cl.CreateSession(ctx, client.CreateSessionInput{
			Notify: []client.EndpointRequest{{URL: recv.URL, Kinds: []string{"task.message"}}},
		})
		if err != nil {
			b.Fatal(err)
		}
		tk, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID})
		if err != nil {
			b.Fatal(err)
		}
		tasks[i] = tk.TaskID
	}
	total := int(rate * load / time.Second)
	var lags []time.Duration
	var busy, producing time.Duration
	sharing := 0 // events whose webhook-id another session's event carries too
	b.ResetTimer()
	for range b.N {
		before := recv.count()
		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= int64(total) {
						return
					}
					// Open loop: event i is due at its place in the schedule,
					// however long the ones before it took.
					time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / rate)))
					if _, err := cl.Message(ctx, tasks[w], "event", nil); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		producing += time.Since(start)
		deadline := time.After(time.Minute)
		for recv.count() < before+total {
			select {
			case <-recv.changed:
			case <-deadline:
				b.Fatalf("%d of %d notifications delivered after a minute", recv.count()-before, total)
			}
		}
		var last time.Time
		recv.mu.Lock()
		byID := map[string]int{}
		for key := range recv.received {
			byID[key[1]]++
		}
		for _, n := range byID {
			if n > 1 {
				sharing += n
			}
		}
		for key, at := range recv.received {
			id := key[1]
			msPart, _, _ := strings.Cut(id, "-")
			ms, err := strconv.ParseInt(msPart, 10, 64)
			if err != nil {
				b.Fatalf("webhook-id %q is not an event id", id)
			}
			if at.After(start) {
				lags = append(lags, at.Sub(time.UnixMilli(ms)))
				if at.After(last) {
					last = at
				}
			}
		}
		recv.mu.Unlock()
		busy += last.Sub(start)
	}
	b.StopTimer()
	slices.Sort(lags)
	q := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(total*b.N)/producing.Seconds(), "events/s")
	b.ReportMetric(float64(total*b.N)/busy.Seconds(), "deliveries/s")
	b.ReportMetric(q(0.50), "lag-p50-ms")
	b.ReportMetric(q(0.99), "lag-p99-ms")
	b.ReportMetric(float64(recv.repeats), "repeats")
	b.ReportMetric(float64(sharing)/float64(b.N), "shared-ids/op")
}

// BenchmarkNotifyFairShare measures one tenant's notifications while
// another tenant's four endpoints hang (loopback receivers that take each
// request and answer none until the round ends), against the same tenant
// with nobody else about. Each op is one quiet and one hanging round; in
// each, the tenant sends fairShareEvents task messages one at a time, each
// timed from the call to its receipt, then a burst of as many without
// waiting, timed from the first call to the last receipt. Before the
// hanging round, the other tenant has sent enough events to fill every
// delivery slot of the replica sixteen times over (its endpoints' shares
// alone would let it take them all) and holds its share of them. Reported:
// p50 and p99 of the single deliveries, the burst's duration, for each
// round, and the ratio of the p50s.
func BenchmarkNotifyFairShare(b *testing.B) {
	const fairShareEvents = 200
	srv := apptest.Start(b, storetest.Standalone(b), app.Config{
		LogLevel: "warn", AllowPrivateTargets: true,
		// The longest a hanging delivery holds a slot: without fair shares
		// the other tenant waits about this long, with them not at all.
		NotifyTimeout: 5 * time.Second,
	})
	ctx := context.Background()
	quiet := client.New(srv.URL, apptest.Token(b, "bench-quiet-tenant"))
	recv := receivertest.NewAt(b, "127.0.0.2", nil)
	_, task := apptest.SessionWithTask(b, ctx, quiet, client.CreateTaskInput{})
	if _, err := quiet.AddTaskEndpoint(ctx, task.TaskID, client.EndpointRequest{URL: recv.URL, Kinds: []string{"task.message"}}); err != nil {
		b.Fatal(err)
	}
	// round sends the quiet tenant's messages and times their receipt.
	round := func(lat *latencies, name string) time.Duration {
		for range fairShareEvents {
			changed, before := recv.Changed(), len(recv.Got())
			t0 := time.Now()
			if _, err := quiet.Message(ctx, task.TaskID, "one", nil); err != nil {
				b.Fatal(err)
			}
			for len(recv.Got()) == before {
				<-changed
				changed = recv.Changed()
			}
			lat.add(name, time.Since(t0))
		}
		want := len(recv.Got()) + fairShareEvents
		t0 := time.Now()
		for range fairShareEvents {
			if _, err := quiet.Message(ctx, task.TaskID, "burst", nil); err != nil {
				b.Fatal(err)
			}
		}
		for {
			changed := recv.Changed()
			if len(recv.Got()) >= want {
				return time.Since(t0)
			}
			<-changed
		}
	}
	noisy := client.New(srv.URL, apptest.Token(b, "bench-hanging-tenant"))
	lat := &latencies{by: map[string][]time.Duration{}}
	var quietBurst, hangingBurst time.Duration
	b.ResetTimer()
	for range b.N {
		quietBurst += round(lat, "quiet")

		b.StopTimer()
		var hanging []*receivertest.Receiver
		var eps []client.EndpointRequest
		for range 4 {
			h := receivertest.New(b, nil)
			h.Answer = h.Block
			hanging = append(hanging, h)
			eps = append(eps, client.EndpointRequest{URL: h.URL, Kinds: []string{"task.message"}})
		}
		_, tk := apptest.NotifyingSessionWithTask(b, ctx, noisy, eps)
		const flood = 256 // 4 endpoints: 1,024 deliveries, sixteen times the replica's slots
		for range flood {
			if _, err := noisy.Message(ctx, tk.TaskID, "flood", nil); err != nil {
				b.Fatal(err)
			}
		}
		held := func() int {
			n := 0
			for _, h := range hanging {
				n += len(h.Got())
			}
			return n
		}
		deadline := time.Now().Add(time.Minute)
		for held() < 16 { // its share of a replica's 64 slots, at the least
			if time.Now().After(deadline) {
				b.Fatalf("the hanging endpoints hold %d deliveries after a minute", held())
			}
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()

		hangingBurst += round(lat, "hanging")

		b.StopTimer()
		for _, h := range hanging {
			h.Release()
		}
		deadline = time.Now().Add(time.Minute)
		for held() < 4*flood { // the next quiet round starts quiet
			if time.Now().After(deadline) {
				b.Fatalf("the released endpoints have %d of %d deliveries after a minute", held(), 4*flood)
			}
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
	}
	b.StopTimer()
	lat.report(b, "")
	p50 := func(name string) float64 {
		ds := lat.by[name]
		return float64(ds[(len(ds)-1)/2])
	}
	b.ReportMetric(p50("hanging")/p50("quiet"), "p50-hanging/quiet")
	b.ReportMetric(float64(quietBurst.Milliseconds())/float64(b.N), "quiet-burst-ms")
	b.ReportMetric(float64(hangingBurst.Milliseconds())/float64(b.N), "hanging-burst-ms")
}

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
	rs := storetest.StartRedisServer(b)
	sc := store.Config{URL: "redis://" + rs.Addr() + "/0", Prefix: "scale:"}
	rdb := storetest.Redis(b, sc)
	srv := apptest.Start(b, sc, app.Config{LogLevel: "warn"})
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
			lat.report(b, label+"-")
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
		raw, _, err := l.srv.App.Sessions.Create(ctx, l.p, sessions.CreateInput{}, idem.Key{})
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
				reply, err := l.srv.App.Tasks.Create(ctx, l.p, in, idem.Key{})
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
