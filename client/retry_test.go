package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// errorAnswer is the *Error the client makes of an answer with this status
// and Retry-After header ("" for none).
func errorAnswer(status int, retryAfter string) *Error {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	body := `{"error":{"code":"x","message":"y"}}`
	return New("http://example.invalid", "").decodeError(&http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))})
}

func TestRetryTransient(t *testing.T) {
	type transientCase struct {
		name string
		err  error
		want bool
	}
	cases := []transientCase{
		{"connection refused", fmt.Errorf("taskhook: %w", &url.Error{Op: "Get", URL: "http://x", Err: errors.New("connection refused")}), true},
		{"answer cut off", fmt.Errorf("taskhook: decode: %w", io.ErrUnexpectedEOF), true},
		{"stream ended", errStreamEnded, true},
		{"503", errorAnswer(503, "1"), true},
		{"429 with Retry-After", errorAnswer(429, "2"), true},
		{"429 with Retry-After 0", errorAnswer(429, "0"), true},
		{"429 without Retry-After", errorAnswer(429, ""), false},
		{"501", errorAnswer(501, "1"), false},
		{"a bad URL", fmt.Errorf("taskhook: %w", &url.Error{Op: "parse", URL: "::", Err: errors.New("missing scheme")}), false},
		{"an answer that is not JSON", fmt.Errorf("taskhook: decode: %w", json.Unmarshal([]byte("<html>"), new(any))), false},
		{"anything else", errors.New("boom"), false},
	}
	// An error answer of each status, without Retry-After.
	for want, statuses := range map[bool][]int{true: {502, 504}, false: {400, 401, 404, 409, 410, 500}} {
		for _, status := range statuses {
			cases = append(cases, transientCase{strconv.Itoa(status), errorAnswer(status, ""), want})
		}
	}
	for _, c := range cases {
		if got := transient(c.err); got != c.want {
			t.Errorf("%s: transient(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestRetryJitterBounded: the pause before retry n is drawn from
// [0, min·2ⁿ], never above max, and each bound is reached.
func TestRetryJitterBounded(t *testing.T) {
	p := newRetryPolicy(10*time.Millisecond, 100*time.Millisecond)
	ceilings := []time.Duration{10, 20, 40, 80, 100, 100, 100}
	transientErr := errorAnswer(503, "")
	for n, c := range ceilings {
		c *= time.Millisecond
		seen := map[time.Duration]bool{}
		p.jitter = func(d time.Duration) time.Duration {
			seen[d] = true
			return fullJitter(d)
		}
		var lo, hi time.Duration = c, 0
		for range 2000 {
			d := p.backoff(n, transientErr)
			if d < 0 || d > c {
				t.Fatalf("retry %d: pause %v outside [0, %v]", n, d, c)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		if len(seen) != 1 || !seen[c] {
			t.Fatalf("retry %d: jitter drawn up to %v, want %v", n, seen, c)
		}
		if lo > c/10 || hi < c-c/10 { // 2000 uniform draws cover the range
			t.Errorf("retry %d: pauses from %v to %v, not spread over [0, %v]", n, lo, hi, c)
		}
	}
	if p := newRetryPolicy(0, 0); p.min != defaultMinBackoff || p.max != defaultMaxBackoff {
		t.Errorf("default bounds %v, %v", p.min, p.max)
	}
	if p := newRetryPolicy(time.Second, time.Millisecond); p.max != time.Second {
		t.Errorf("a max below the min: %v", p.max)
	}
	if d := newRetryPolicy(time.Second, time.Hour).backoff(1000, transientErr); d > time.Hour {
		t.Errorf("pause %v after many retries", d)
	}
}

// TestRetryHonoursRetryAfter: a pause is never shorter than Retry-After,
// in seconds or as an HTTP date, up to the cap.
func TestRetryHonoursRetryAfter(t *testing.T) {
	p := newRetryPolicy(10*time.Millisecond, 100*time.Millisecond)
	p.jitter = func(d time.Duration) time.Duration { return d }
	cases := []struct {
		err      error
		min, max time.Duration
	}{
		{errorAnswer(503, "3"), 3 * time.Second, 3 * time.Second},
		{errorAnswer(429, "1"), time.Second, time.Second},
		{errorAnswer(503, time.Now().Add(30*time.Second).UTC().Format(http.TimeFormat)), 28 * time.Second, 30 * time.Second},
		{errorAnswer(503, "86400"), maxRetryAfter, maxRetryAfter},
		{errorAnswer(503, "0"), 10 * time.Millisecond, 10 * time.Millisecond}, // the backoff, when longer
		{errorAnswer(503, "bogus"), 10 * time.Millisecond, 10 * time.Millisecond},
	}
	for _, c := range cases {
		if d := p.backoff(0, c.err); d < c.min || d > c.max {
			t.Errorf("%v (Retry-After %v): pause %v, want %v to %v", c.err, c.err.(*Error).RetryAfter, d, c.min, c.max)
		}
	}
}

// fakeSleeps records the pauses of a policy instead of waiting them.
func fakeSleeps(p *retryPolicy) *[]time.Duration {
	var slept []time.Duration
	p.jitter = func(d time.Duration) time.Duration { return d }
	p.sleep = func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		return ctx.Err()
	}
	return &slept
}

func TestRetryDo(t *testing.T) {
	ctx := t.Context()
	t.Run("transient errors are retried until success", func(t *testing.T) {
		p := newRetryPolicy(10*time.Millisecond, time.Second)
		slept := fakeSleeps(&p)
		script := []error{errorAnswer(503, "1"), &url.Error{Op: "Get", URL: "u", Err: io.EOF}, errorAnswer(502, ""), nil}
		calls := 0
		err := p.do(ctx, func(context.Context) error {
			calls++
			return script[calls-1]
		})
		want := []time.Duration{time.Second, 20 * time.Millisecond, 40 * time.Millisecond}
		if err != nil || calls != 4 || fmt.Sprint(*slept) != fmt.Sprint(want) {
			t.Fatalf("err %v after %d calls, pauses %v; want nil after 4, pauses %v", err, calls, *slept, want)
		}
	})
	t.Run("other errors are not retried", func(t *testing.T) {
		for _, final := range []error{errorAnswer(400, ""), errorAnswer(404, ""), errorAnswer(409, ""),
			errorAnswer(429, ""), errorAnswer(500, "1"), errors.New("boom")} {
			p := newRetryPolicy(0, 0)
			slept := fakeSleeps(&p)
			calls := 0
			err := p.do(ctx, func(context.Context) error { calls++; return final })
			if err != final || calls != 1 || len(*slept) != 0 {
				t.Errorf("%v: got %v after %d calls and %d pauses", final, err, calls, len(*slept))
			}
		}
	})
	t.Run("the context ends a pause", func(t *testing.T) {
		p := newRetryPolicy(time.Hour, time.Hour) // a pause the test never waits out
		sleeping := make(chan struct{})
		p.sleep = func(ctx context.Context, d time.Duration) error {
			close(sleeping)
			return sleepCtx(ctx, d)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		calls := 0
		done := make(chan error, 1)
		go func() {
			done <- p.do(ctx, func(context.Context) error { calls++; return errorAnswer(503, "") })
		}()
		<-sleeping
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) || calls != 1 {
				t.Fatalf("got %v after %d calls, want the context's error after 1", err, calls)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the pause outlived its context")
		}
	})
	t.Run("an ended context stops at once", func(t *testing.T) {
		p := newRetryPolicy(0, 0)
		slept := fakeSleeps(&p)
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		calls := 0
		op503 := errorAnswer(503, "")
		err := p.do(ctx, func(context.Context) error { calls++; return op503 })
		if err != op503 || calls != 1 || len(*slept) != 0 {
			t.Fatalf("got %v after %d calls and %d pauses", err, calls, len(*slept))
		}
	})
	t.Run("the real sleep waits, and ends with its context", func(t *testing.T) {
		start := time.Now()
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil || time.Since(start) < 20*time.Millisecond {
			t.Fatalf("sleepCtx: %v after %v", err, time.Since(start))
		}
		short, cancel := context.WithCancel(ctx)
		cancel()
		if err := sleepCtx(short, time.Hour); !errors.Is(err, context.Canceled) {
			t.Fatalf("sleepCtx with an ended context: %v", err)
		}
	})
}
