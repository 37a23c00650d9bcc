package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
)

// browserAccept is what a browser sends when it follows a link.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// pageAnswer is one answer to the person's browser, read whole.
type pageAnswer struct {
	status int
	header http.Header
	body   string
}

// open is the person's browser (or, with accept "application/json", a
// client) opening target, following no redirect.
func (e *signinEnv) open(t *testing.T, target, accept string) pageAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, body := apptest.Fetch(t, e.web, req)
	return pageAnswer{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// strictPageHeaders are the answer page's headers, which every page of a
// sign-in carries too.
var strictPageHeaders = map[string]string{
	"Cache-Control":           "no-store",
	"Referrer-Policy":         "no-referrer",
	"X-Content-Type-Options":  "nosniff",
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
}

// wantPage checks that a is an HTML page with status, the strict headers,
// the stylesheet, the title and each of texts, holding none of secrets.
func wantPage(t *testing.T, what string, a pageAnswer, status int, title string, texts, secrets []string) {
	t.Helper()
	if a.status != status || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
		t.Fatalf("%s: %d %s, want %d text/html:\n%s", what, a.status, a.header.Get("Content-Type"), status, a.body)
	}
	for name, v := range strictPageHeaders {
		if got := a.header.Get(name); got != v {
			t.Errorf("%s: %s = %q, want %q", what, name, got, v)
		}
	}
	if a.header.Get("Set-Cookie") != "" {
		t.Errorf("%s: sets a cookie", what)
	}
	want := append([]string{"<!doctype html>", `<link rel="stylesheet" href="/console/taskhook.css">`,
		`<main class="page-card">`, "<title>" + title + " · taskhook</title>", "<h1"}, texts...)
	for _, s := range want {
		if !strings.Contains(a.body, s) {
			t.Errorf("%s: the page lacks %q:\n%s", what, s, a.body)
		}
	}
	for _, s := range append(secrets, "<script", "style=") {
		if s != "" && strings.Contains(a.body, s) {
			t.Errorf("%s: the page holds %.12q…", what, s)
		}
	}
}

// secretsOf are the values of a redirect to a callback that are secret: the
// attempt token (state) and the code.
func secretsOf(t *testing.T, redirect string) []string {
	t.Helper()
	u, err := url.Parse(redirect)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	return []string{q.Get("state"), q.Get("code")}
}

// A person's browser through a sign-in: the provider's redirect lands on a
// page in the answer page's look, with its headers, saying how the sign-in
// ended and what happens next, holding no token or code; a client asking
// for JSON gets the same as JSON. A link opened again is a page to the
// browser (404 used, 410 expired) and the JSON error to a client.
func TestSigninPages(t *testing.T) {
	eachSignin(t, "path", app.Config{}, func(t *testing.T, e *signinEnv) {

		// Signed in.
		task := e.task(t, "alice")
		_, pending := e.ask(t, task.TaskID)
		redirect := e.prov.Approve(t, pending.AuthorizationURL)
		secrets := append(secretsOf(t, redirect), e.prov.ClientSecret)
		landed := e.open(t, redirect, browserAccept)
		loc := landed.header.Get("Location")
		if landed.status != http.StatusSeeOther || loc != "/v1/connections/signed-in?connection=devbox&outcome=authorized" {
			t.Fatalf("the callback: %d %q", landed.status, loc)
		}
		for name, v := range strictPageHeaders {
			if got := landed.header.Get(name); got != v {
				t.Errorf("the callback's redirect: %s = %q, want %q", name, got, v)
			}
		}
		page := e.open(t, e.srv.URL+loc, browserAccept)
		wantPage(t, "signed in", page, http.StatusOK, "Signed in to devbox", []string{
			`<h1 id="signin-title">Signed in to devbox</h1>`, `id="signin-connection">devbox</span>`,
			`id="signin-result" data-outcome="authorized"`, "You are signed in.",
			"The task goes on; you can close this tab."}, append(secrets, e.prov.Issued()...))
		css := e.open(t, e.srv.URL+"/console/taskhook.css", "text/css,*/*;q=0.1")
		if css.status != http.StatusOK || !strings.HasPrefix(css.header.Get("Content-Type"), "text/css") || !strings.Contains(css.body, ".page-card") {
			t.Fatalf("the page's stylesheet: %d %s", css.status, css.header.Get("Content-Type"))
		}

		asJSON := e.open(t, e.srv.URL+loc, "application/json")
		var got map[string]string
		if err := json.Unmarshal([]byte(asJSON.body), &got); err != nil || asJSON.status != http.StatusOK ||
			len(got) != 2 || got["connection"] != "devbox" || got["outcome"] != "authorized" {
			t.Fatalf("the page as JSON: %d %s (%v)", asJSON.status, asJSON.body, err)
		}
		if asJSON.header.Get("Cache-Control") != "no-store" {
			t.Errorf("the page as JSON: Cache-Control %q", asJSON.header.Get("Cache-Control"))
		}

		// The same link again: used.
		again := e.open(t, redirect, browserAccept)
		wantPage(t, "a used link", again, http.StatusNotFound, "Sign-in link already used",
			[]string{"has been used already", `id="problem"`}, secrets)
		wantJSONError(t, "a used link, as JSON", e.open(t, redirect, "application/json"), http.StatusNotFound, "not_found")
		wantJSONError(t, "a used link, asked for nothing", e.open(t, redirect, ""), http.StatusNotFound, "not_found")

		// Declined.
		_, pending = e.ask(t, e.task(t, "bob").TaskID)
		landed = e.open(t, e.prov.Deny(t, pending.AuthorizationURL), browserAccept)
		wantPage(t, "declined", e.open(t, e.srv.URL+landed.header.Get("Location"), browserAccept), http.StatusOK,
			"Sign-in to devbox declined", []string{`data-outcome="declined"`, "You declined.",
				"The task goes on; you can close this tab."}, nil)

		// Failed: the provider's token endpoint does not answer.
		_, pending = e.ask(t, e.task(t, "dave").TaskID)
		e.prov.FailTokens(true)
		landed = e.open(t, e.prov.Approve(t, pending.AuthorizationURL), browserAccept)
		e.prov.FailTokens(false)
		wantPage(t, "failed", e.open(t, e.srv.URL+landed.header.Get("Location"), browserAccept), http.StatusOK,
			"Sign-in to devbox failed", []string{`data-outcome="failed"`, "The sign-in did not complete.",
				"The task goes on; you can close this tab."}, nil)

		// Expired.
		_, pending = e.ask(t, e.task(t, "carol").TaskID)
		redirect = e.prov.Approve(t, pending.AuthorizationURL)
		e.clock.Advance(16 * time.Minute)
		wantPage(t, "an expired link", e.open(t, redirect, browserAccept), http.StatusGone, "Sign-in link expired",
			[]string{"has run out"}, secretsOf(t, redirect))
		wantJSONError(t, "an expired link, as JSON", e.open(t, redirect, "application/json"), http.StatusGone, "signin_closed")

		// A page link made up by hand says only what the service could have.
		made := e.open(t, e.srv.URL+"/v1/connections/signed-in?connection=<b>evil</b>&outcome=pwned", browserAccept)
		wantPage(t, "a made-up link", made, http.StatusOK, "Sign-in finished", []string{"The sign-in is over."},
			[]string{"evil", "pwned"})
	})
}

// wantJSONError checks that a is the JSON error with status and code.
func wantJSONError(t *testing.T, what string, a pageAnswer, status int, code string) {
	t.Helper()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	if a.status != status || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") ||
		json.Unmarshal([]byte(a.body), &body) != nil || body.Error.Code != code {
		t.Fatalf("%s: %d %s %s, want %d %s", what, a.status, a.header.Get("Content-Type"), a.body, status, code)
	}
}
