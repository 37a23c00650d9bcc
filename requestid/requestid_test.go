package requestid

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// A sane id the client sent is echoed and kept in the context; any other is
// replaced by a new one.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	made := regexp.MustCompile(`^rq_[0-9a-f]{24}$`)
	for _, c := range []struct {
		sent string
		echo bool
	}{
		{"trace-1", true},
		{strings.Repeat("x", 128), true},
		{"~!#$%&'*+-.^_`|", true},
		{"", false},
		{strings.Repeat("x", 129), false},
		{"a b", false},
		{"a\tb", false},
		{"caf\u00e9", false},
		{"a\x7f", false},
	} {
		var seen string
		h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = From(r.Context()) }))
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if c.sent != "" {
			req.Header.Set("X-Request-Id", c.sent)
		}
		h.ServeHTTP(rec, req)
		got := rec.Header().Get("X-Request-Id")
		if got != seen {
			t.Errorf("%q: answered %q, the context held %q", c.sent, got, seen)
		}
		if c.echo && got != c.sent || !c.echo && !made.MatchString(got) {
			t.Errorf("%q: answered %q (echoed: %v)", c.sent, got, c.echo)
		}
	}
	if id := From(context.Background()); id != "" {
		t.Errorf("an id without Middleware: %q", id)
	}
	if id := From(With(context.Background(), "rq_1")); id != "rq_1" {
		t.Errorf("With: %q", id)
	}
}
