// Package providertest is a fake OAuth 2.0 provider for tests: a real HTTP
// server speaking the authorization-code flow (with PKCE) and refresh,
// checking the client's credentials and the code verifier.
package providertest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Provider is one fake provider.
type Provider struct {
	URL          string // the server's base: /authorize and /token under it
	ClientID     string
	ClientSecret string

	mu       sync.Mutex
	codes    map[string]grant  // code -> what it was issued for
	refresh  map[string]string // refresh token -> scope
	issued   []string          // every access and refresh token and code handed out
	fail     bool              // the token endpoint answers 500
	expires  int               // expires_in of the tokens it issues
	Exchange int               // code exchanges that succeeded
	Refreshs int               // refreshes that succeeded
}

type grant struct {
	challenge, redirect, scope string
}

// New starts a provider that stops when the test ends.
func New(t testing.TB) *Provider {
	p := &Provider{ClientID: "client-" + random(), ClientSecret: "secret-" + random(),
		codes: map[string]grant{}, refresh: map[string]string{}, expires: 3600}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// FailTokens makes the token endpoint answer 500 (or work again).
func (p *Provider) FailTokens(fail bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = fail
}

// Issued is every secret the provider handed out: codes, access and
// refresh tokens.
func (p *Provider) Issued() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string{}, p.issued...)
}

// Approve is the person signing in and agreeing: it reads the
// authorization URL as the provider's page would and returns the redirect
// it sends the browser to, with a fresh code.
func (p *Provider) Approve(t testing.TB, authorizationURL string) string {
	t.Helper()
	u, err := url.Parse(authorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" {
		t.Fatalf("authorization URL: %s", authorizationURL)
	}
	code := "code-" + random()
	p.mu.Lock()
	p.codes[code] = grant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), scope: q.Get("scope")}
	p.issued = append(p.issued, code)
	p.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	bq := back.Query()
	bq.Set("code", code)
	bq.Set("state", q.Get("state"))
	back.RawQuery = bq.Encode()
	return back.String()
}

// Deny is the person declining: the redirect with error=access_denied.
func (p *Provider) Deny(t testing.TB, authorizationURL string) string {
	t.Helper()
	u, _ := url.Parse(authorizationURL)
	q := u.Query()
	back, _ := url.Parse(q.Get("redirect_uri"))
	bq := back.Query()
	bq.Set("error", "access_denied")
	bq.Set("state", q.Get("state"))
	back.RawQuery = bq.Encode()
	return back.String()
}

func (p *Provider) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/token" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	_ = r.ParseForm()
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.ClientID || secret != p.ClientSecret {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	var scope string
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		g, ok := p.codes[code]
		delete(p.codes, code) // a code works once
		if !ok || r.PostForm.Get("redirect_uri") != g.redirect {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if g.challenge == "" || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		scope = g.scope
		p.issued = append(p.issued, r.PostForm.Get("code_verifier"))
		p.Exchange++
	case "refresh_token":
		s, ok := p.refresh[r.PostForm.Get("refresh_token")]
		if !ok {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		scope = s
		p.Refreshs++
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	access, refresh := "at-"+random(), "rt-"+random()
	p.refresh[refresh] = scope
	p.issued = append(p.issued, access, refresh)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer",
		"expires_in": p.expires, "refresh_token": refresh, "scope": scope})
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

func random() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Connection is the connections-file entry of a connection named name to
// this provider, with PKCE, its redirect carrying the attempt as callback
// says ("path" or "state").
func (p *Provider) Connection(name, callback string, scopes ...string) map[string]any {
	return map[string]any{
		"name": name, "authorizeUrl": p.URL + "/authorize", "tokenUrl": p.URL + "/token",
		"clientId": p.ClientID, "clientSecret": p.ClientSecret, "scopes": append([]string{}, scopes...),
		"pkce": true, "callback": callback,
	}
}

// WriteConnectionsFile writes entries as a TASKHOOK_CONNECTIONS_FILE in a
// directory the test removes, and returns its path.
func WriteConnectionsFile(t testing.TB, entries ...map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "connections.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
