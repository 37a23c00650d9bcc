// Package providertest is a fake OAuth 2.0 provider for tests: a real HTTP
// server speaking the authorization-code flow (with PKCE) and refresh,
// checking the client's credentials and the code verifier.
//
// Routes: GET /authorize approves at once (the person signs in and agrees)
// and redirects to redirect_uri with a code, or with error=access_denied
// when the URL carries deny=1; POST /token exchanges codes and refresh
// tokens; POST /introspect (RFC 7662, form field token) says whether an
// access token is one it issued, for a resource server that checks the
// tokens it is handed.
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
	access   map[string]bool   // access tokens issued
	issued   []string          // every access and refresh token and code handed out
	fail     bool              // the token endpoint answers 500
	expires  int               // expires_in of the tokens it issues
	Exchange int               // code exchanges that succeeded
	Refreshs int               // refreshes that succeeded
}

type grant struct {
	challenge, redirect, scope string
}

// New starts a provider on a loopback port that stops when the test ends.
func New(t testing.TB) *Provider {
	p := NewProvider()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// NewProvider makes a provider with a random client id and secret, to serve
// yourself (it is an http.Handler): set URL to where it is served.
func NewProvider() *Provider {
	return &Provider{ClientID: "client-" + random(), ClientSecret: "secret-" + random(),
		codes: map[string]grant{}, refresh: map[string]string{}, access: map[string]bool{}, expires: 3600}
}

// Active says whether token is an access token the provider issued.
func (p *Provider) Active(token string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.access[token]
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
	back, ok := p.approve(u.Query())
	if !ok {
		t.Fatalf("authorization URL: %s", authorizationURL)
	}
	return back
}

// approve grants a code for an authorization request's parameters and
// returns the redirect with it; ok is false for a request not of this
// provider's client.
func (p *Provider) approve(q url.Values) (string, bool) {
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" || back.Host == "" {
		return "", false
	}
	code := "code-" + random()
	p.mu.Lock()
	p.codes[code] = grant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), scope: q.Get("scope")}
	p.issued = append(p.issued, code)
	p.mu.Unlock()
	bq := back.Query()
	bq.Set("code", code)
	bq.Set("state", q.Get("state"))
	back.RawQuery = bq.Encode()
	return back.String(), true
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

// ServeHTTP serves /authorize, /token and /introspect.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/authorize" && r.Method == http.MethodGet:
		p.authorize(w, r)
	case r.URL.Path == "/token" && r.Method == http.MethodPost:
		p.token(w, r)
	case r.URL.Path == "/introspect" && r.Method == http.MethodPost:
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]bool{"active": p.Active(r.PostForm.Get("token"))})
	default:
		http.NotFound(w, r)
	}
}

// authorize is the provider's sign-in page, agreed to at once: a redirect
// with a code (or, with deny=1, error=access_denied).
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("deny") == "1" {
		back, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || back.Host == "" {
			http.Error(w, "bad redirect_uri", http.StatusBadRequest)
			return
		}
		bq := back.Query()
		bq.Set("error", "access_denied")
		bq.Set("state", q.Get("state"))
		back.RawQuery = bq.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
		return
	}
	back, ok := p.approve(q)
	if !ok {
		http.Error(w, "not an authorization request of this provider's client", http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, back, http.StatusFound)
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
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
	p.access[access] = true
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
