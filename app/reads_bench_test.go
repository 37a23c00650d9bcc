package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// BenchmarkLogReads reads a session log of 1,000 task events (334 tasks
// through create, progress and complete, each event carrying its task's
// snapshot) as a client catching up would, from a server process of its
// own on real Redis: each op reads the whole log in JSON pages of 100, then
// streams it from the start over SSE until the last event. It reports the
// p50 and p99 of a page and of a catch-up, and the server's CPU time per
// event read (pages and stream together).
func BenchmarkLogReads(b *testing.B) {
	ctx := context.Background()
	sc := storetest.Standalone(b)
	cmd, url := apptest.StartProcess(b, sc)
	opts, err := redis.ParseURL(sc.URL)
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	token := apptest.Token(b, "bench-reader")
	cl := client.New(url, token)
	ses := apptest.Session(b, ctx, cl)
	const tasks = 334
	for i := range tasks {
		task, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Input: map[string]any{"repo": "r", "n": i}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("building")}); err != nil {
			b.Fatal(err)
		}
		if _, err := cl.Complete(ctx, task.TaskID, map[string]any{"ok": true, "n": i}); err != nil {
			b.Fatal(err)
		}
	}
	const events = 1 + 3*tasks // session.created too
	events0 := url + "/v1/sessions/" + ses.SessionID + "/events"
	get := func(path, accept string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", accept)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if res.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %s", path, res.Status)
		}
		return res
	}
	lat := &latencies{by: map[string][]time.Duration{}}
	cpu0, redis0 := serverCPU(b, cmd.Process.Pid), redisCPU(b, rdb)
	b.ResetTimer()
	for range b.N {
		read := 0
		for after := ""; ; {
			t0 := time.Now()
			res := get(events0+"?limit=100&after="+after, "application/json")
			var page struct {
				Events []struct{ ID string } `json:"events"`
			}
			err := json.NewDecoder(res.Body).Decode(&page)
			res.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			if len(page.Events) == 0 {
				break
			}
			lat.add("page100", time.Since(t0))
			read += len(page.Events)
			after = page.Events[len(page.Events)-1].ID
		}
		if read != events {
			b.Fatalf("the pages held %d events, want %d", read, events)
		}

		t0 := time.Now()
		res := get(events0, "text/event-stream")
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		streamed := 0
		for streamed < events && sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") {
				streamed++
			}
		}
		res.Body.Close()
		if streamed != events {
			b.Fatalf("the stream held %d events, want %d", streamed, events)
		}
		lat.add("catchup1000", time.Since(t0))
	}
	b.StopTimer()
	cpu, redisUsed := serverCPU(b, cmd.Process.Pid)-cpu0, redisCPU(b, rdb)-redis0
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(2*events*b.N), "server-cpu-µs/event")
	b.ReportMetric(float64(redisUsed.Nanoseconds())/1e3/float64(2*events*b.N), "redis-cpu-µs/event")
	lat.report(b, "")
}

// redisCPU is the CPU time, user and system, that Redis reports it has
// used (INFO cpu): the test Redis is its own process, which this measures
// whoever started it.
func redisCPU(b *testing.B, rdb *redis.Client) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, f := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(line, f); ok {
				s, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatalf("%s: %v", line, err)
				}
				total += s
			}
		}
	}
	return time.Duration(total * float64(time.Second))
}
