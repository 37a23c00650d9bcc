package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/store/storetest"
)

// tickingClock moves on by step each time it is read: the log limiter reads
// it once a repeated warning, so time passes as fast as the warnings come.
type tickingClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// peek reads the clock without moving it.
func (c *tickingClock) peek() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// timedLog keeps each line written with the clock's time when it was.
type timedLog struct {
	mu    sync.Mutex
	clock *tickingClock
	buf   bytes.Buffer
	lines []timedLine
}

type timedLine struct {
	at   time.Time
	text string
}

func (l *timedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line) // the rest of a line yet to come
			break
		}
		l.lines = append(l.lines, timedLine{at: l.clock.peek(), text: strings.TrimSuffix(line, "\n")})
	}
	return len(p), nil
}

func (l *timedLog) all() []timedLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]timedLine(nil), l.lines...)
}

// A minute of Redis being unreachable, from the start: every line of the
// log is JSON, go-redis's own lines included, and each warning that repeats
// while the store is down is written at most once in 30 s, the first with
// its cause in full, a later one with the count of those held back. Before,
// the same 12 s wrote about 330 lines, some of them go-redis's plain text.
//
// Not parallel: go-redis has one logger per process, which writes to the
// log of the store opened last; here that is this server's.
func TestRedisDownLogsLittle(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := ln.Addr().String()
	ln.Close()

	start := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	// Each repeated warning is 250 ms of outage: a denser storm than the
	// real one, whose readers back off to one retry in 5 s.
	clk := &tickingClock{now: start, step: 250 * time.Millisecond}
	logs := &timedLog{clock: clk}
	ctx := context.Background()
	a, err := app.New(ctx, app.Config{
		Addr: "127.0.0.1:0", RedisURL: "redis://" + nobody + "/0", RedisPrefix: "downlog:",
		JWTSecret: apptest.Secret, Now: clk.Now,
	}, logs)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(ctx)
	const outage = 60 * time.Second
	// Or more lines than a minute may hold, to fail on them rather than
	// wait for a clock nothing reads.
	storetest.WaitFor(t, "a minute of outage on the log's clock", func() bool {
		return clk.peek().Sub(start) >= outage || len(logs.all()) > 100
	})
	if err := a.Stop(ctx); err != nil {
		t.Logf("stop: %v", err)
	}
	// go-redis probes an address it cannot dial once a second until its
	// client is closed; the probe of the closed client ends at its next
	// turn.
	storetest.WaitFor(t, "go-redis's dial probe to end", func() bool { return goleak.Find(before) == nil })

	type line struct {
		Time            time.Time
		Level, Msg, Err string
		Suppressed      *int
	}
	lastOf := map[string]time.Time{}
	perWindow := map[int]int{}
	var wake []line
	redisClient := 0
	for _, l := range logs.all() {
		var got line
		if err := json.Unmarshal([]byte(l.text), &got); err != nil {
			t.Fatalf("a line that is not JSON: %q", l.text)
		}
		if got.Level != "WARN" {
			continue
		}
		// A limited line carries the time the limiter let it through on
		// the test's clock; the clock read when the line reached the log
		// may be a step or more later, as other warnings read it meanwhile.
		if !got.Time.Before(start) {
			l.at = got.Time
		}
		perWindow[int(l.at.Sub(start)/(10*time.Second))]++
		if last, ok := lastOf[got.Msg]; ok && l.at.Sub(last) < 30*time.Second {
			t.Errorf("%q written at %v and again at %v", got.Msg, last.Sub(start), l.at.Sub(start))
		}
		lastOf[got.Msg] = l.at
		switch got.Msg {
		case "wake reader error":
			wake = append(wake, got)
		case "redis client":
			redisClient++
		}
	}
	for w, n := range perWindow {
		if n > 5 {
			t.Errorf("%d warnings between %ds and %ds of the outage, want at most 5", n, w*10, w*10+10)
		}
	}
	if redisClient == 0 {
		t.Error("no line of go-redis's own in the server's log")
	}
	if len(wake) < 2 {
		t.Fatalf("%d wake reader warnings in a minute, want the first and a later one", len(wake))
	}
	if !strings.Contains(wake[0].Err, "connection refused") || wake[0].Suppressed != nil {
		t.Errorf("the first wake reader warning: %+v, want its cause in full", wake[0])
	}
	if wake[1].Suppressed == nil || *wake[1].Suppressed < 1 {
		t.Errorf("the next wake reader warning: %+v, want the count of those held back", wake[1])
	}
	if held := testutil.ToFloat64(a.Metrics.LogLinesSuppressed); held < 100 {
		t.Errorf("taskhook_log_lines_suppressed_total = %v, want the storm's repeats", held)
	}
}
