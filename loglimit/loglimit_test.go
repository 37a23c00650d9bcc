package loglimit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskhook/taskhook/loglimit"
)

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// limitWarnings limits the warnings that carry an err attribute.
func limitWarnings(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == "err"
		return !found
	})
	return r.Level >= slog.LevelWarn && found
}

// lines parses what a JSON handler wrote, one object a line.
func lines(t *testing.T, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var all []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		all = append(all, m)
	}
	return all
}

// A minute of two failures repeating every 100 ms gives each two lines: the
// first as it was logged, and one 30 s later that counts what was held back
// since when. Records Limits does not pick all pass, and each held record
// is counted once.
func TestRepeatsAreHeldAndCounted(t *testing.T) {
	var out bytes.Buffer
	clk := &clock{now: start}
	var held atomic.Int64
	log := slog.New(loglimit.New(slog.NewJSONHandler(&out, nil), loglimit.Config{
		Limits: limitWarnings, Now: clk.Now, Held: func() { held.Add(1) },
	}))
	down := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	const steps = 600
	for i := range steps {
		log.Warn("wake reader error", "partition", i%16, "err", down)
		log.Warn("outbox read failed", "partition", i%16, "err", down)
		log.Info("request", "status", 503)
		clk.Add(100 * time.Millisecond)
	}

	byMsg := map[string][]map[string]any{}
	for _, l := range lines(t, &out) {
		byMsg[l["msg"].(string)] = append(byMsg[l["msg"].(string)], l)
	}
	if n := len(byMsg["request"]); n != steps {
		t.Errorf("%d request lines, want all %d", n, steps)
	}
	for _, msg := range []string{"wake reader error", "outbox read failed"} {
		got := byMsg[msg]
		if len(got) != 2 {
			t.Fatalf("%q: %d lines, want 2: %v", msg, len(got), got)
		}
		first, later := got[0], got[1]
		if first["err"] != down.Error() || first["partition"] != 0.0 || first[loglimit.SuppressedKey] != nil {
			t.Errorf("%q: the first line is not the first record as logged: %v", msg, first)
		}
		// Each line carries the time it was let through, on the limiter's clock.
		if first["time"] != start.Format(time.RFC3339Nano) || later["time"] != start.Add(30*time.Second).Format(time.RFC3339Nano) {
			t.Errorf("%q: lines written at %v and %v, want at 0 s and 30 s", msg, first["time"], later["time"])
		}
		// Written at 30 s, the 301st record; 299 held back since 100 ms.
		if later[loglimit.SuppressedKey] != 299.0 || later[loglimit.SuppressedSinceKey] != start.Add(100*time.Millisecond).Format(time.RFC3339Nano) ||
			later["err"] != down.Error() || later["partition"] != float64(300%16) {
			t.Errorf("%q: the later line: %v", msg, later)
		}
	}
	if got, want := held.Load(), int64(2*(steps-2)); got != want {
		t.Errorf("Held called %d times, want %d", got, want)
	}
}

// A message that comes back after a quiet interval, nothing held back, is
// written as it is; loggers made With attributes count as the one they
// came from.
func TestQuietMessageIsWrittenPlain(t *testing.T) {
	var out bytes.Buffer
	clk := &clock{now: start}
	log := slog.New(loglimit.New(slog.NewJSONHandler(&out, nil), loglimit.Config{
		Interval: 10 * time.Second, Limits: limitWarnings, Now: clk.Now,
	}))
	fail := errors.New("store unavailable")
	log.Warn("read failed", "err", fail)
	clk.Add(10 * time.Second)
	log.Warn("read failed", "err", fail)
	log.With("component", "other").Warn("read failed", "err", fail) // held: the same message
	clk.Add(9 * time.Second)
	log.WithGroup("g").Warn("read failed", "err", fail) // held
	clk.Add(time.Second)
	log.Warn("read failed", "err", fail)

	got := lines(t, &out)
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3: %v", len(got), got)
	}
	for i, l := range got[:2] {
		if l[loglimit.SuppressedKey] != nil {
			t.Errorf("line %d counts repeats, with none held back: %v", i, l)
		}
	}
	if got[2][loglimit.SuppressedKey] != 2.0 || got[2][loglimit.SuppressedSinceKey] != start.Add(10*time.Second).Format(time.RFC3339) {
		t.Errorf("the third line: %v", got[2])
	}
}

// Records logged from many goroutines at once are each either written or
// counted as held, never both and never lost.
func TestConcurrentRecordsAreAllAccounted(t *testing.T) {
	var out bytes.Buffer // slog's JSON handler writes one record at a time
	clk := &clock{now: start}
	var held atomic.Int64
	log := slog.New(loglimit.New(slog.NewJSONHandler(&out, nil), loglimit.Config{
		Interval: time.Second, Limits: limitWarnings, Now: clk.Now, Held: func() { held.Add(1) },
	}))
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				log.Warn("read failed", "reader", g, "err", errors.New("down"))
				if i%50 == 0 {
					clk.Add(300 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	var written, counted int64
	for _, l := range lines(t, &out) {
		written++
		if n, ok := l[loglimit.SuppressedKey].(float64); ok {
			counted += int64(n)
		}
	}
	// The clock moved 300 ms 32 times: 9.6 s, so at most one line at the
	// start and one a second after.
	if written+held.Load() != goroutines*each || written > 11 {
		t.Errorf("%d written and %d held, of %d", written, held.Load(), goroutines*each)
	}
	if counted > held.Load() {
		t.Errorf("the lines count %d held back, only %d were", counted, held.Load())
	}
}
