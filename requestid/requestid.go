// Package requestid puts an X-Request-Id on every answer: Middleware echoes
// a sane one the client sent or makes one, and keeps it in the request's
// context for the log; StampServerErrors adds one to the answers net/http
// writes by itself, before any handler runs. Every face is served through
// both.
//
// It imports only the standard library.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
)

type ctxKey struct{}

// From is the request id kept in ctx, "" when there is none.
func From(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// With keeps id in ctx, as Middleware does: for a request answered after
// its handler returned, whose own context has ended.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// Middleware echoes a sane X-Request-Id or makes one.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !sane(id) {
			id = New()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(With(r.Context(), id)))
	})
}

// New makes a request id: rq_ and 24 hex digits.
func New() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "rq_" + hex.EncodeToString(b)
}

// sane reports whether a client's id may be echoed: 1 to 128 printable
// ASCII characters, no space.
func sane(id string) bool {
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
