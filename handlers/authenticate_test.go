package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/authz"
)

// A request without a token is challenged plainly; a refused token is
// challenged with error="invalid_token" and the reason (RFC 6750 section 3).
// A token living longer than the maximum age is refused so.
func TestAuthenticateChallenges(t *testing.T) {
	t.Parallel()
	secret := []byte("middleware-secret-0123456789abcdef")
	v, err := authz.NewVerifier(authz.VerifierConfig{HMACSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	a := &api{verifier: v}
	h := a.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	token := func(ttl time.Duration) string {
		tok, err := authz.IssueDevToken(secret, "alice", nil, ttl, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	cases := []struct {
		name, auth string
		status     int
		challenge  string // the whole WWW-Authenticate, or a part of it after "..."
	}{
		{"no token", "", 401, `Bearer realm="taskhook"`},
		{"not a bearer", "Basic YTpi", 401, `Bearer realm="taskhook"`},
		{"malformed", "Bearer x.y.z", 401, `...Bearer realm="taskhook", error="invalid_token", error_description="invalid token: malformed token"`},
		{"lifetime above the maximum", "Bearer " + token(authz.DefaultMaxAge+time.Hour), 401,
			`...error="invalid_token", error_description="invalid token: token lifetime (exp - iat) above the maximum age"`},
		{"lifetime at the maximum", "Bearer " + token(authz.DefaultMaxAge), 204, ""},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/v1/tasks", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		h.ServeHTTP(rec, req)
		got := rec.Header().Get("WWW-Authenticate")
		if rec.Code != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, rec.Code, rec.Body, c.status)
		}
		if part, ok := strings.CutPrefix(c.challenge, "..."); ok && !strings.Contains(got, part) || !ok && got != c.challenge {
			t.Errorf("%s: WWW-Authenticate %q, want %q", c.name, got, c.challenge)
		}
	}
}
