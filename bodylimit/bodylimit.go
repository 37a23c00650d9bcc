// Package bodylimit reads request bodies under limits, so that slow,
// stalled or large uploads can pin neither connections nor memory: a size
// limit per body, a deadline for its arrival, budgets of the body bytes the
// whole server holds in memory (one for authenticated requests, one for
// those read before a credential was verified) and a share of the latter
// per client address. Every face that reads a body reads it through a
// Guard.
//
// Its refusals are typed errors (TooLargeError, TimeoutError, ErrUnreadable,
// ErrOverloaded, ErrShareFull) for the face to answer in its own error
// shape. It imports no package of the project: never store, a service or a
// face.
package bodylimit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
)

// The server has no connection-wide read timeout: it would also cut
// long-polls and event streams, which read no body. Instead each request
// that carries a body gets a read deadline of its own while the body is
// read, and the bytes of bodies held in memory are drawn from budgets for
// the whole server (one for authenticated requests, one for the others:
// preauth.go), so slow or stalled uploads can pin neither connections nor
// memory.
//
// budgetWait is how long a read waits for room in the budget before it is
// refused with ErrOverloaded.
const budgetWait = time.Second

// Refusals of a read other than its size and its deadline.
var (
	// ErrUnreadable is a body whose read failed before its end (a broken
	// chunked encoding, a connection cut).
	ErrUnreadable = errors.New("could not read the body")
	// ErrOverloaded is a body that found no room in the server's budget in
	// time: the server is busy, not the client at fault.
	ErrOverloaded = errors.New("the server is taking in too many request bodies at once")
)

// TooLargeError is a body larger than the limit it was read under.
type TooLargeError struct {
	Max int64 // bytes
}

func (e *TooLargeError) Error() string { return fmt.Sprintf("the body is larger than %d bytes", e.Max) }

// TimeoutError is a body that did not arrive within the guard's Timeout.
type TimeoutError struct {
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the body did not arrive within %s", e.Timeout)
}

// Guard holds the limits every request body is read under.
type Guard struct {
	max     int64         // larger bodies are a TooLargeError
	timeout time.Duration // the whole body must arrive within it
	budget  *budget       // bytes of authenticated bodies held in memory, server-wide
	// preauth is the budget of bodies read before a bearer token was
	// verified, and shares bounds what one client address holds of it.
	preauth *budget
	shares  *addressShares
}

// Limits are the sizes a Guard is made with; a zero field takes its
// default.
type Limits struct {
	Max     int64         // one body (default 1 MiB)
	Timeout time.Duration // to read one body (default 15s)
	// Inflight is the main budget (default 64 MiB, at least Max).
	Inflight int64
	// Preauth is the pre-auth budget (default an eighth of Inflight, at
	// least Max).
	Preauth int64
	// PerAddress is one client address's share of the pre-auth budget
	// (default a quarter of Preauth, at least Max and at most Preauth).
	PerAddress int64
}

// withDefaults is l with every zero field set to its default and every
// budget large enough for one body.
func (l Limits) withDefaults() Limits {
	l.Max = cmp.Or(l.Max, 1<<20)
	l.Timeout = cmp.Or(l.Timeout, 15*time.Second)
	l.Inflight = max(cmp.Or(l.Inflight, 64<<20), l.Max)
	l.Preauth = max(cmp.Or(l.Preauth, l.Inflight/8), l.Max)
	l.PerAddress = min(max(cmp.Or(l.PerAddress, l.Preauth/4), l.Max), l.Preauth)
	return l
}

// New makes a Guard; gauge and preauthGauge show the bytes reserved of the
// main budget and of the pre-auth one.
func New(l Limits, gauge, preauthGauge prometheus.Gauge) *Guard {
	l = l.withDefaults()
	return &Guard{max: l.Max, timeout: l.Timeout,
		budget:  &budget{sem: semaphore.NewWeighted(l.Inflight), gauge: gauge},
		preauth: &budget{sem: semaphore.NewWeighted(l.Preauth), gauge: preauthGauge},
		shares:  &addressShares{most: l.PerAddress, held: map[netip.Prefix]int64{}}}
}

// budget is the server's bytes of request bodies, its use shown as a gauge.
type budget struct {
	sem   *semaphore.Weighted
	gauge prometheus.Gauge
}

func (b *budget) acquire(ctx context.Context, n int64) error {
	if err := b.sem.Acquire(ctx, n); err != nil {
		return err
	}
	b.gauge.Add(float64(n))
	return nil
}

func (b *budget) release(n int64) {
	b.gauge.Sub(float64(n))
	b.sem.Release(n)
}

// Middleware sets the body deadline of a request that carries a body and
// releases what its read reserved when the handler is done. The body draws
// on the pre-auth budget, within its client address's share, until
// Authenticated moves it to the main one. A handler that
// answers without reading the whole body (an unknown capability token, a
// refused bearer token, a body declared too large) hangs up: net/http would
// otherwise wait for the rest of the body, however slowly it comes. It must
// be the router's first middleware, to hold net/http's own ResponseWriter.
func (g *Guard) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		b := &guardedBody{src: r.Body, w: w, rc: http.NewResponseController(w), budget: g.preauth,
			shares: g.shares, remote: r.RemoteAddr, deadline: time.Now().Add(g.timeout)}
		_ = b.rc.SetReadDeadline(b.deadline)
		defer b.finish()
		r.Body = b
		next.ServeHTTP(&bodyWriter{ResponseWriter: w, body: b}, r)
	})
}

// guardedBody is a request body read under the guard: it clears the read
// deadline once the body is read to its end, so the connection's later
// reads (net/http watches for the client going away) are not cut.
type guardedBody struct {
	src      io.ReadCloser
	w        http.ResponseWriter // net/http's own
	rc       *http.ResponseController
	budget   *budget
	shares   *addressShares // nil once the request is authenticated
	remote   string         // the client's address, as net/http gives it
	deadline time.Time
	done     bool  // read to its end
	hungUp   bool  // the rest of the body is not read
	reserved int64 // bytes of the budget held
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.src.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (b *guardedBody) Close() error { return b.src.Close() }

// reserve takes n more bytes of the budget, waiting up to budgetWait (and
// never past the body deadline) for room.
func (b *guardedBody) reserve(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	until := time.Now().Add(budgetWait)
	if b.deadline.Before(until) {
		until = b.deadline
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	var who netip.Prefix
	if b.shares != nil {
		who = clientOf(b.remote)
		if !b.shares.take(who, n) {
			return ErrShareFull
		}
	}
	if err := b.budget.acquire(ctx, n); err != nil {
		if b.shares != nil {
			b.shares.give(who, n)
		}
		return err
	}
	b.reserved += n
	return nil
}

// hangUp gives up on the rest of a body nobody reads: the connection is
// closed after the answer. A MaxBytesReader over its limit is net/http's
// documented way to ask for that, and it half-closes the connection first,
// so the client reads the answer before the bytes it still sends are
// refused. The past read deadline ends net/http's own wait for the body.
func (b *guardedBody) hangUp() {
	if b.done || b.hungUp {
		return
	}
	b.hungUp = true
	_, _ = http.MaxBytesReader(b.w, io.NopCloser(strings.NewReader("-")), 0).Read(make([]byte, 1))
	_ = b.rc.SetReadDeadline(time.Unix(1, 0))
}

// finish runs when the handler is done with the request.
func (b *guardedBody) finish() {
	b.hangUp()
	if b.reserved > 0 {
		b.budget.release(b.reserved)
		if b.shares != nil {
			b.shares.give(clientOf(b.remote), b.reserved)
		}
		b.reserved = 0
	}
}

// bodyWriter hangs up before the answer is written when the body was not
// read to its end.
type bodyWriter struct {
	http.ResponseWriter
	body  *guardedBody
	wrote bool
}

func (w *bodyWriter) WriteHeader(code int) {
	if !w.wrote && code >= http.StatusOK {
		w.wrote = true
		w.body.hangUp()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *bodyWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *bodyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Read reads the whole body under the guard's limits. The bytes go into
// pooled chunks as they arrive, so a stalled upload holds what it sent and
// no more, and are joined once the body is whole: no buffer is ever sized
// by a declared Content-Length before the bytes are there. The budget is
// reserved before the bytes are read: all of a declared length at once (so
// a request never holds part of the budget while it waits for the rest), or
// chunk by chunk when the length is not declared.
func (g *Guard) Read(r *http.Request) ([]byte, error) { return g.ReadUpTo(r, g.max) }

// ReadUpTo is Read with a smaller limit than the server's, for a route
// whose bodies are small by nature.
func (g *Guard) ReadUpTo(r *http.Request, most int64) ([]byte, error) {
	most = min(most, g.max)
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, nil
	}
	if r.ContentLength > most {
		return nil, tooLarge(most)
	}
	b, ok := r.Body.(*guardedBody)
	if !ok {
		return nil, errors.New("read body: the request was not guarded (Middleware)")
	}
	size := r.ContentLength // -1: not declared
	limit := most
	if size >= 0 {
		limit = size
		if err := b.reserve(r.Context(), size); err != nil {
			return nil, g.budgetError(r, err)
		}
	}
	var parts []*chunk
	defer func() {
		for _, c := range parts {
			chunks.Put(c)
		}
	}()
	var total int64
	for {
		if total == limit {
			// All the body may be is here: one more byte is either its end
			// or too much.
			var probe [1]byte
			n, err := io.ReadFull(b, probe[:])
			if n > 0 {
				return nil, tooLarge(most)
			}
			if err == io.EOF {
				return join(parts, total), nil
			}
			return nil, g.readError(err)
		}
		if total == int64(len(parts))*chunkSize {
			if size < 0 {
				if err := b.reserve(r.Context(), min(chunkSize, limit-total)); err != nil {
					return nil, g.budgetError(r, err)
				}
			}
			parts = append(parts, chunks.Get().(*chunk))
		}
		at := total - int64(len(parts)-1)*chunkSize
		n, err := b.Read(parts[len(parts)-1][at:min(chunkSize, at+limit-total)])
		total += int64(n)
		if err == io.EOF {
			return join(parts, total), nil
		}
		if err != nil {
			return nil, g.readError(err)
		}
	}
}

// chunkSize is the unit a body is read in.
const chunkSize = 32 << 10

type chunk [chunkSize]byte

var chunks = sync.Pool{New: func() any { return new(chunk) }}

// join copies the first total bytes of parts into one buffer.
func join(parts []*chunk, total int64) []byte {
	out := make([]byte, total)
	for i, c := range parts {
		copy(out[int64(i)*chunkSize:], c[:])
	}
	return out
}

func tooLarge(most int64) error { return &TooLargeError{Max: most} }

func (g *Guard) readError(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &TimeoutError{Timeout: g.timeout}
	}
	return ErrUnreadable
}

// budgetError is the refusal of a read that found no room in the budget in
// time (ErrOverloaded); or, before authentication, of one whose client
// address holds its whole share (ErrShareFull).
func (g *Guard) budgetError(r *http.Request, err error) error {
	switch {
	case r.Context().Err() != nil:
		return r.Context().Err() // the client went away
	case errors.Is(err, ErrShareFull):
		return ErrShareFull
	}
	return ErrOverloaded
}
