package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/taskhook/taskhook/api/wire"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/authz"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	routeKey            // the route template of a request answered after its handler returned (detach)
)

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// withRequestID echoes a sane X-Request-Id or makes one.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "rq_" + hex.EncodeToString(b)
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= 0x20 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// statusRecorder remembers the status and passes Flush through (for SSE).
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
	start  time.Time
	// parked: the handler parked the request (a long-poll); it is logged
	// and counted when its answer is written, not when the handler returns.
	parked bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += n
	return n, err
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// routeOf is the matched route template: never the path, which may hold a
// capability token.
func routeOf(r *http.Request) string {
	if route, ok := r.Context().Value(routeKey).(string); ok {
		return route
	}
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" {
			return p
		}
	}
	return "unmatched"
}

// observe logs one line per request and updates the HTTP metrics; a panic
// becomes a 500 with an errorId.
func (a *api) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, start: time.Now()}
		defer a.settle(rec, r)
		next.ServeHTTP(rec, r)
	})
}

// settle ends a request that was answered through rec: a panic becomes a 500
// with an errorId, then the request is logged and counted. Deferred, it
// runs when the handler returns or, for a parked long-poll, when its answer
// is written.
func (a *api) settle(rec *statusRecorder, r *http.Request) {
	if v := recover(); v != nil {
		if v == http.ErrAbortHandler {
			panic(v)
		}
		a.writeError(rec, r, fmt.Errorf("panic: %v", v))
	}
	if rec.parked {
		return
	}
	route := routeOf(r)
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	d := time.Since(rec.start)
	a.httpMetrics.observe(route, r.Method, status, d.Seconds())
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "request", slog.String("requestId", requestID(r.Context())),
		slog.String("method", r.Method), slog.String("route", route), slog.Int("status", status),
		slog.Float64("durationMs", float64(d.Microseconds())/1000), slog.Int("bytes", rec.bytes))
}

// authenticate puts the bearer token's principal into the context, or
// answers 401.
func (a *api) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			writeAPIError(w, apiError(http.StatusUnauthorized, wire.CodeUnauthorized, "a bearer token is required"))
			return
		}
		p, err := a.verifier.Verify(strings.TrimSpace(token))
		if err != nil {
			e := apiError(http.StatusUnauthorized, wire.CodeUnauthorized, err.Error())
			e.BearerError = "invalid_token"
			writeAPIError(w, e)
			return
		}
		a.body.Authenticated(r)
		next.ServeHTTP(w, r.WithContext(authz.WithPrincipal(r.Context(), p)))
	})
}

func principal(r *http.Request) authz.Principal {
	p, _ := authz.FromContext(r.Context())
	return p
}
