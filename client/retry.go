package client

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Retry bounds.
const (
	defaultMinBackoff = 100 * time.Millisecond
	defaultMaxBackoff = 5 * time.Second
	// maxRetryAfter caps the wait a Retry-After can impose, so that a
	// mistaken header cannot park an iterator for hours.
	maxRetryAfter = 5 * time.Minute
)

// retryPolicy is the one way the client comes back after a transient
// failure: exponential backoff with full jitter (the pause before retry n
// is a random duration up to min·2ⁿ, never above max), at least as long as
// the answer's Retry-After, for as long as the context lasts. Only the
// iterators use it, and only for what is safe to repeat: reads, streams,
// and hook acks (acking an event twice is harmless). A plain call is never
// retried.
type retryPolicy struct {
	min, max time.Duration
	// jitter returns a random duration in [0, d]; sleep waits d unless ctx
	// ends first. Tests replace them.
	jitter func(d time.Duration) time.Duration
	sleep  func(ctx context.Context, d time.Duration) error
}

// newRetryPolicy is the policy with pauses between min and max; zero means
// the default bound.
func newRetryPolicy(minPause, maxPause time.Duration) retryPolicy {
	if minPause <= 0 {
		minPause = defaultMinBackoff
	}
	if maxPause <= 0 {
		maxPause = defaultMaxBackoff
	}
	return retryPolicy{min: minPause, max: max(maxPause, minPause), jitter: fullJitter, sleep: sleepCtx}
}

// backoff is the pause before retry n (0 for the first) after err.
func (p retryPolicy) backoff(n int, err error) time.Duration {
	ceiling := p.min
	for i := 0; i < n && ceiling < p.max; i++ {
		ceiling *= 2
	}
	pause := p.jitter(min(ceiling, p.max))
	var e *Error
	if errors.As(err, &e) {
		pause = max(pause, min(e.RetryAfter, maxRetryAfter))
	}
	return pause
}

// do runs op until it succeeds or fails with an error that is not
// transient, pausing between attempts. It returns op's last error, or ctx's
// error when ctx ends during a pause.
func (p retryPolicy) do(ctx context.Context, op func(context.Context) error) error {
	r := retrier{policy: p}
	for {
		err := op(ctx)
		if err == nil {
			return nil
		}
		if err := r.wait(ctx, err); err != nil {
			return err
		}
	}
}

// retrier counts the attempts of one operation under a policy.
type retrier struct {
	policy retryPolicy
	n      int // retries since the last success
}

// wait pauses before the next attempt after err and returns nil, or returns
// err itself when it is not transient or ctx has ended, or ctx's error when
// ctx ends during the pause.
func (r *retrier) wait(ctx context.Context, err error) error {
	if ctx.Err() != nil || !transient(err) {
		return err
	}
	pause := r.policy.backoff(r.n, err)
	r.n++
	return r.policy.sleep(ctx, pause)
}

// reset starts the backoff again from its shortest pause, after progress.
func (r *retrier) reset() { r.n = 0 }

// transient reports whether a failed call may succeed if tried again, and
// nothing else does: no answer arrived or it was cut off (a connection
// error), or the server or a proxy said to come back later (502, 503, 504,
// or 429 with Retry-After). Every other answer, and an error made before
// anything was sent, is final.
func transient(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		switch e.Status {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		case http.StatusTooManyRequests:
			return e.retryAfterSent
		}
		return false
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op != "parse" // the HTTP client's errors name the method; "parse" is a bad URL
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// fullJitter is uniform in [0, d].
func fullJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d + 1)
}

// sleepCtx waits d, or until ctx ends (then it returns ctx's error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
