// Package requestlog logs and counts every request once: one log line and
// the HTTP metrics by route template, method and status, written when the
// request is answered (when its handler returns or, for a request parked
// past its handler, such as a long-poll, when its answer is written). A
// panic in a handler becomes the face's own error answer. Every face is
// served through an Observer.
//
// It imports requestid and metrics: never store, a service or a face.
package requestlog

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/requestid"
)

// Observer logs and counts the requests it observes.
type Observer struct {
	log     *slog.Logger
	metrics httpMetrics
	onPanic func(w http.ResponseWriter, r *http.Request, err error)
}

// New makes an Observer that logs to log and counts in m. onPanic answers
// a request whose handler panicked, before anything was written (a 500 in
// the face's error shape, with an id that it logs).
func New(log *slog.Logger, m *metrics.Metrics, onPanic func(w http.ResponseWriter, r *http.Request, err error)) *Observer {
	return &Observer{log: log, metrics: httpMetrics{m: m}, onPanic: onPanic}
}

// Middleware answers the request through a Recorder and settles it when the
// handler returns.
func (o *Observer) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &Recorder{ResponseWriter: w, start: time.Now()}
		defer o.Settle(rec, r)
		next.ServeHTTP(rec, r)
	})
}

// Settle ends a request that was answered through rec: a panic becomes the
// face's error answer, then the request is logged and counted. Deferred, it
// runs when the handler returns or, for a parked request, when its answer
// is written; it leaves a parked Recorder alone.
func (o *Observer) Settle(rec *Recorder, r *http.Request) {
	if v := recover(); v != nil {
		if v == http.ErrAbortHandler {
			panic(v)
		}
		o.onPanic(rec, r, fmt.Errorf("panic: %v", v))
	}
	if rec.parked {
		return
	}
	route := Route(r)
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	d := time.Since(rec.start)
	o.metrics.observe(route, r.Method, status, d.Seconds())
	o.log.LogAttrs(r.Context(), slog.LevelInfo, "request", slog.String("requestId", requestid.From(r.Context())),
		slog.String("method", r.Method), slog.String("route", route), slog.Int("status", status),
		slog.Float64("durationMs", float64(d.Microseconds())/1000), slog.Int("bytes", rec.bytes))
}

type routeKey struct{}

// Route is the matched route template: never the path, which may hold a
// capability token.
func Route(r *http.Request) string {
	if route, ok := r.Context().Value(routeKey{}).(string); ok {
		return route
	}
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" {
			return p
		}
	}
	return "unmatched"
}

// WithRoute keeps the route template of a request answered after its
// handler returned, when the router has reused its routing context.
func WithRoute(ctx context.Context, route string) context.Context {
	return context.WithValue(ctx, routeKey{}, route)
}
