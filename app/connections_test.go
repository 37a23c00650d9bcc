package app_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/connections/providertest"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

type signinEnv struct {
	srv   *apptest.Server
	sc    store.Config
	prov  *providertest.Provider
	clock *providertest.Clock
	owner *client.Client
	web   *http.Client // the person's browser: follows no redirect
}

// startSignin runs a server with one connection, "devbox", to a fake
// provider, on the standalone Redis. Its owner, the executor, holds the
// delegate scope: its tasks may name any requester.
func startSignin(t *testing.T, callback string) *signinEnv {
	t.Helper()
	return startSigninWith(t, storetest.Standalone(t), callback, app.Config{})
}

// eachSignin runs fn, on every store backend, against a sign-in
// environment started as startSigninWith starts it.
func eachSignin(t *testing.T, callback string, cfg app.Config, fn func(t *testing.T, e *signinEnv)) {
	t.Helper()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) { fn(t, startSigninWith(t, sc, callback, cfg)) })
}

// startSigninWith is startSignin on the store sc, with more of the server's
// settings.
func startSigninWith(t *testing.T, sc store.Config, callback string, cfg app.Config) *signinEnv {
	t.Helper()
	prov := providertest.New(t)
	conns := []map[string]any{{
		"name": "devbox", "authorizeUrl": prov.URL + "/authorize", "tokenUrl": prov.URL + "/token",
		"clientId": prov.ClientID, "clientSecret": prov.ClientSecret, "scopes": []string{"repo", "read"},
		"pkce": true, "callback": callback,
	}}
	raw, _ := json.Marshal(conns)
	file := filepath.Join(t.TempDir(), "connections.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	clk := &providertest.Clock{}
	cfg.ConnectionsFile, cfg.Now = file, clk.Now
	cfg.VaultKeys = "k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	srv := apptest.Start(t, sc, cfg)
	return &signinEnv{srv: srv, sc: sc, prov: prov, clock: clk, owner: client.New(srv.URL, apptest.Token(t, "exec-owner", "delegate")),
		web: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (e *signinEnv) task(t *testing.T, requester string) *client.Task {
	t.Helper()
	_, task := apptest.SessionWithTask(t, context.Background(), e.owner, client.CreateTaskInput{Requester: requester})
	return task
}

// visit is the browser landing on a redirect: the status and Location.
func (e *signinEnv) visit(t *testing.T, target string) (int, string) {
	t.Helper()
	resp, err := e.web.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Location")
}

func (e *signinEnv) ask(t *testing.T, taskID string) (*client.ConnectionToken, *client.AuthorizationPending) {
	t.Helper()
	tok, pending, err := e.owner.Authorize(context.Background(), taskID, "devbox", nil)
	if err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	return tok, pending
}

func completedOutcomes(t *testing.T, cl *client.Client, taskID string) []string {
	t.Helper()
	page, err := cl.TaskEvents(context.Background(), taskID, client.EventsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range page.Events {
		if ev.Type == "authorization.completed" {
			var d struct{ Outcome, Connection string }
			_ = json.Unmarshal(ev.Data, &d)
			out = append(out, d.Connection+":"+d.Outcome)
		}
	}
	return out
}

// The whole sign-in, in both callback forms: 202 and input_required, the
// provider's redirect, the token, a refresh after expiry, a replayed
// callback, and nothing secret in clear anywhere.
func TestSigninFlow(t *testing.T) {
	for _, mode := range []string{"path", "state"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := startSignin(t, mode)
			ctx := context.Background()
			task := e.task(t, "alice")

			tok, pending := e.ask(t, task.TaskID)
			if tok != nil || pending == nil || pending.Status != "authorization_required" || pending.RequestID == "" {
				t.Fatalf("first ask: %+v %+v", tok, pending)
			}
			got, _ := e.owner.GetTask(ctx, task.TaskID)
			if got.Status != "input_required" || len(got.InputRequests) != 1 || got.InputRequests[0].Kind != "authorization" ||
				got.InputRequests[0].AuthorizationURL != pending.AuthorizationURL || got.InputRequests[0].Connection != "devbox" {
				t.Fatalf("the task after the ask: %+v", got)
			}
			wantPath := "/v1/connections/devbox/callback"
			if mode == "path" {
				wantPath += "/sgn_"
			}
			if !strings.Contains(pending.AuthorizationURL, "redirect_uri="+strings.ReplaceAll(
				strings.ReplaceAll(e.srv.URL+wantPath, ":", "%3A"), "/", "%2F")) {
				t.Fatalf("redirect URI of %s mode: %s", mode, pending.AuthorizationURL)
			}
			if _, again := e.ask(t, task.TaskID); again == nil || again.RequestID != pending.RequestID ||
				again.AuthorizationURL != pending.AuthorizationURL {
				t.Fatalf("a second ask while pending: %+v", again)
			}
			// The URL is put together when shown: the events show the same
			// one, and neither Redis nor the logs hold its attempt token.
			u, _ := url.Parse(pending.AuthorizationURL)
			state := u.Query().Get("state")
			if !strings.HasPrefix(state, "sgn_") {
				t.Fatalf("state: %q", state)
			}
			evs, err := e.owner.TaskEvents(ctx, task.TaskID, client.EventsParams{}, client.WithKinds("authorization.required"))
			if err != nil || len(evs.Events) != 1 || !strings.Contains(string(evs.Events[0].Data), state) {
				t.Fatalf("authorization.required does not show the URL: %+v %v", evs, err)
			}
			scanClear(t, e.srv, state)
			if strings.Contains(e.srv.Logs.String(), state) {
				t.Fatal("the attempt token is in the logs")
			}

			redirect := e.prov.Approve(t, pending.AuthorizationURL)
			status, loc := e.visit(t, redirect)
			if status != http.StatusSeeOther || !strings.Contains(loc, "outcome=authorized") {
				t.Fatalf("callback: %d %q", status, loc)
			}
			if status, _ := e.visit(t, e.srv.URL+loc); status != http.StatusOK {
				t.Fatalf("the closing page: %d", status)
			}
			got, _ = e.owner.GetTask(ctx, task.TaskID)
			if got.Status != "working" {
				t.Fatalf("the task after the sign-in: %s", got.Status)
			}
			if o := completedOutcomes(t, e.owner, task.TaskID); len(o) != 1 || o[0] != "devbox:authorized" {
				t.Fatalf("authorization.completed: %v", o)
			}
			if status, _ := e.visit(t, redirect); status != http.StatusNotFound {
				t.Fatalf("a replayed callback: %d", status)
			}

			tok, pending = e.ask(t, task.TaskID)
			issued := e.prov.Issued()
			if tok == nil || pending != nil || tok.AccessToken == "" || !contains(issued, tok.AccessToken) ||
				tok.TokenType != "Bearer" || tok.ExpiresAt == nil {
				t.Fatalf("the ask after the sign-in: %+v %+v", tok, pending)
			}
			first := tok.AccessToken

			e.clock.Advance(2 * time.Hour) // the token ran out; it has a refresh token
			tok, _ = e.ask(t, task.TaskID)
			if tok == nil || tok.AccessToken == first || !contains(e.prov.Issued(), tok.AccessToken) || e.prov.Refreshs != 1 {
				t.Fatalf("after expiry: %+v (refreshes %d)", tok, e.prov.Refreshs)
			}

			scanForSecrets(t, e, task.TaskID, append(e.prov.Issued(), e.prov.ClientSecret))
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// scanForSecrets looks for each secret in the logs, the task's and the
// session's events, the task, the metrics and every Redis value of the
// test's prefix.
func scanForSecrets(t *testing.T, e *signinEnv, taskID string, secrets []string) {
	t.Helper()
	ctx := context.Background()
	var places []string
	places = append(places, e.srv.Logs.String())
	task, _ := e.owner.GetTask(ctx, taskID)
	raw, _ := json.Marshal(task)
	places = append(places, string(raw))
	page, _ := e.owner.TaskEvents(ctx, taskID, client.EventsParams{})
	raw, _ = json.Marshal(page)
	places = append(places, string(raw))
	spage, _ := e.owner.SessionEvents(ctx, task.SessionID, client.EventsParams{})
	raw, _ = json.Marshal(spage)
	places = append(places, string(raw))
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	places = append(places, string(m))

	for key, value := range e.srv.Stored(t) {
		places = append(places, key, value)
	}
	for _, s := range secrets {
		for _, p := range places {
			if s != "" && strings.Contains(p, s) {
				t.Fatalf("a secret (%d bytes) is in clear in: %.200s", len(s), p)
			}
		}
	}
}

// unsentForm posts a form to path that declares a body and sends none of
// it: the answer, and whether the server then closed the connection.
func (e *signinEnv) unsentForm(t *testing.T, path string) (status int, code string, closed bool) {
	t.Helper()
	c := dial(t, e.srv)
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: taskhook\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 4096\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, raw, _ := c.answer(t)
	var body struct{ Error struct{ Code string } }
	_ = json.Unmarshal(raw, &body)
	_, err := c.br.ReadByte()
	return res.StatusCode, body.Error.Code, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// A form post to the callback whose attempt is unknown, used, or ran out is
// answered from its path before any of its body is read (the body never
// comes here); a live one is read and completes the sign-in.
func TestSigninFormPostFindsTheAttemptFirst(t *testing.T) {
	t.Parallel()
	e := startSignin(t, "path")
	task := e.task(t, "bob")
	if status, code, closed := e.unsentForm(t, "/v1/connections/devbox/callback/sgn_nothing"); status != 404 || code != "not_found" || !closed {
		t.Fatalf("an unknown attempt: %d %s (closed %v)", status, code, closed)
	}

	_, pending := e.ask(t, task.TaskID)
	redirect, _ := url.Parse(e.prov.Approve(t, pending.AuthorizationURL))
	res, err := e.web.PostForm(e.srv.URL+redirect.Path, redirect.Query())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "outcome=authorized") {
		t.Fatalf("the form post: %d %q", res.StatusCode, loc)
	}
	if status, code, closed := e.unsentForm(t, redirect.Path); status != 404 || code != "not_found" || !closed {
		t.Fatalf("a used attempt: %d %s (closed %v)", status, code, closed)
	}

	other := e.task(t, "carol")
	_, pending = e.ask(t, other.TaskID)
	redirect, _ = url.Parse(e.prov.Approve(t, pending.AuthorizationURL))
	e.clock.Advance(16 * time.Minute)
	if status, code, closed := e.unsentForm(t, redirect.Path); status != 410 || code != "signin_closed" || !closed {
		t.Fatalf("an attempt that ran out: %d %s (closed %v)", status, code, closed)
	}
}

// Declined, failed, expired and dead attempts.
func TestSigninOutcomes(t *testing.T) {
	t.Parallel()
	e := startSignin(t, "path")
	ctx := context.Background()

	task := e.task(t, "bob")
	_, pending := e.ask(t, task.TaskID)
	if status, loc := e.visit(t, e.prov.Deny(t, pending.AuthorizationURL)); status != http.StatusSeeOther || !strings.Contains(loc, "outcome=declined") {
		t.Fatalf("declined: %d %q", status, loc)
	}
	if got, _ := e.owner.GetTask(ctx, task.TaskID); got.Status != "working" {
		t.Fatalf("after declined: %s", got.Status)
	}

	_, pending = e.ask(t, task.TaskID)
	e.prov.FailTokens(true)
	if status, loc := e.visit(t, e.prov.Approve(t, pending.AuthorizationURL)); status != http.StatusSeeOther || !strings.Contains(loc, "outcome=failed") {
		t.Fatalf("failed: %d %q", status, loc)
	}
	e.prov.FailTokens(false)
	if o := completedOutcomes(t, e.owner, task.TaskID); len(o) != 2 || o[0] != "devbox:declined" || o[1] != "devbox:failed" {
		t.Fatalf("outcomes: %v", o)
	}

	_, pending = e.ask(t, task.TaskID)
	redirect := e.prov.Approve(t, pending.AuthorizationURL)
	e.clock.Advance(16 * time.Minute)
	if status, _ := e.visit(t, redirect); status != http.StatusGone {
		t.Fatalf("an expired attempt: %d", status)
	}
	_, fresh := e.ask(t, task.TaskID) // the ran-out request gives way to a new one
	if fresh == nil || fresh.RequestID == pending.RequestID {
		t.Fatalf("an ask after the attempt ran out: %+v", fresh)
	}

	if _, err := e.owner.Cancel(ctx, task.TaskID, "done"); err != nil {
		t.Fatal(err)
	}
	if status, _ := e.visit(t, e.prov.Approve(t, fresh.AuthorizationURL)); status != http.StatusGone {
		t.Fatalf("the attempt of a cancelled task: %d", status)
	}
	if status, _ := e.visit(t, e.srv.URL+"/v1/connections/devbox/callback/sgn_nothing?state=sgn_nothing"); status != http.StatusNotFound {
		t.Fatalf("an unknown attempt: %d", status)
	}

	var cerr *client.Error
	if _, _, err := e.owner.Authorize(ctx, e.task(t, "").TaskID, "nope", nil); !errors.As(err, &cerr) || cerr.Status != 400 {
		t.Fatalf("an unknown connection: %v", err)
	}
	other := e.task(t, "")
	_, err := e.owner.RequireInput(ctx, other.TaskID, []client.InputRequest{{Kind: "authorization", Prompt: "Sign in", Connection: "devbox"}})
	if !errors.As(err, &cerr) || cerr.Status != 400 || !strings.Contains(cerr.Message, "/authorizations") {
		t.Fatalf("an executor's authorization request: %v", err)
	}
}

// The loop guard fails a task that rejects a fresh token, and drops an old
// one so the next ask prompts again; client.Token waits through a sign-in.
func TestSigninLoopGuardAndClientToken(t *testing.T) {
	t.Parallel()
	e := startSignin(t, "state")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	task := e.task(t, "carol")

	type result struct {
		tok *client.ConnectionToken
		err error
	}
	done := make(chan result, 1)
	go func() {
		tok, err := e.owner.Token(ctx, task.TaskID, "devbox")
		done <- result{tok, err}
	}()
	waiting, err := e.owner.WaitTask(ctx, task.TaskID, 1, 30*time.Second, client.WithKinds("authorization.required"))
	if err != nil || waiting.Status != "input_required" {
		t.Fatalf("waiting for the sign-in: %+v %v", waiting, err)
	}
	e.visit(t, e.prov.Approve(t, waiting.InputRequests[0].AuthorizationURL))
	r := <-done
	if r.err != nil || r.tok == nil || !contains(e.prov.Issued(), r.tok.AccessToken) {
		t.Fatalf("Token: %+v %v", r.tok, r.err)
	}

	e.clock.Advance(10 * time.Minute) // the sign-in is old: a rejected token is dropped
	rej, err := e.owner.Reject(ctx, task.TaskID, "devbox")
	if err != nil || rej.Action != "token_dropped" {
		t.Fatalf("reject an old token: %+v %v", rej, err)
	}
	_, pending := e.ask(t, task.TaskID)
	if pending == nil {
		t.Fatal("the ask after a dropped token did not prompt")
	}
	e.visit(t, e.prov.Approve(t, pending.AuthorizationURL))
	rej, err = e.owner.Reject(ctx, task.TaskID, "devbox") // a fresh token refused: signing in again would loop
	if err != nil || rej.Action != "task_failed" {
		t.Fatalf("reject a fresh token: %+v %v", rej, err)
	}
	got, _ := e.owner.GetTask(ctx, task.TaskID)
	if got.Status != "failed" || got.Error == nil || got.Error.Message != "authorization rejected right after sign-in" {
		t.Fatalf("the task after the loop guard: %+v", got)
	}

	declined := e.task(t, "carol")
	go func() {
		tok, err := e.owner.Token(ctx, declined.TaskID, "devbox")
		done <- result{tok, err}
	}()
	waiting, _ = e.owner.WaitTask(ctx, declined.TaskID, 1, 30*time.Second, client.WithKinds("authorization.required"))
	e.visit(t, e.prov.Deny(t, waiting.InputRequests[0].AuthorizationURL))
	var serr *client.SigninError
	if r := <-done; !errors.As(r.err, &serr) || serr.Outcome != "declined" || !client.IsSigninError(r.err) {
		t.Fatalf("Token after a declined sign-in: %v", r.err)
	}
	if client.IsSigninError(errors.New("another error")) {
		t.Fatal("IsSigninError took an error that is no sign-in's")
	}

	conns, err := e.owner.Connections(ctx)
	if err != nil || len(conns) != 1 || conns[0].Name != "devbox" {
		t.Fatalf("the connections: %+v %v", conns, err)
	}
}

// Another principal can neither ask for, read nor complete someone else's
// sign-in, and a token goes only to tasks of its requester.
func TestSigninIsolation(t *testing.T) {
	t.Parallel()
	e := startSignin(t, "path")
	ctx := context.Background()
	mallory := e.srv.Client(t, "mallory")
	alice := e.srv.Client(t, "alice")
	task := e.task(t, "alice")

	for name, cl := range map[string]*client.Client{"another principal": mallory, "the requester, not the owner": alice} {
		var cerr *client.Error
		if _, _, err := cl.Authorize(ctx, task.TaskID, "devbox", nil); !errors.As(err, &cerr) || cerr.Status != 404 {
			t.Fatalf("%s asks: %v", name, err)
		}
		if _, err := cl.Reject(ctx, task.TaskID, "devbox"); !errors.As(err, &cerr) || cerr.Status != 404 {
			t.Fatalf("%s rejects: %v", name, err)
		}
	}
	_, pending := e.ask(t, task.TaskID)
	var cerr *client.Error
	if _, err := mallory.GetTask(ctx, task.TaskID); !errors.As(err, &cerr) || cerr.Status != 404 {
		t.Fatalf("another principal reads the sign-in: %v", err)
	}
	// A redirect with a code for another connection's attempt, or a forged state, completes nothing.
	redirect := e.prov.Approve(t, pending.AuthorizationURL)
	forged := strings.Replace(redirect, "state=sgn_", "state=sgn_x", 1)
	if status, _ := e.visit(t, forged); status != http.StatusNotFound {
		t.Fatalf("a forged state: %d", status)
	}
	e.visit(t, redirect)
	if tok, _ := e.ask(t, task.TaskID); tok == nil {
		t.Fatal("alice's task has no token after her sign-in")
	}

	bobs := e.task(t, "bob") // same owner, another requester: alice's token is not his
	if tok, pending := e.ask(t, bobs.TaskID); tok != nil || pending == nil {
		t.Fatalf("a token went to another requester's task: %+v", tok)
	}
	if err := alice.SignOut(ctx, "devbox"); err != nil {
		t.Fatal(err)
	}
	if tok, _ := e.ask(t, task.TaskID); tok != nil {
		t.Fatal("a token is handed out after its requester signed out")
	}
}

// A sign-in's authorizationUrl, in every answer that shows it (the ask's
// 202, the task, its events as JSON and as a stream), is written with a
// plain & between its parameters, never encoding/json's \u0026.
func TestAuthorizationURLReadsWithPlainAmpersands(t *testing.T) {
	t.Parallel()
	e := startSignin(t, "path")
	task := e.task(t, "alice")
	bearer := "Bearer " + apptest.Token(t, "exec-owner", "delegate") // the owner may use alice's sign-ins
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	read := func(method, path, body, accept string) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, e.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", bearer)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if accept != "text/event-stream" {
			raw, _ := io.ReadAll(resp.Body)
			return string(raw)
		}
		// The stream does not end: read up to the event wanted.
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "event: authorization.required") {
				sc.Scan()
				b.WriteString(sc.Text() + "\n")
				break
			}
		}
		return b.String()
	}
	answers := []struct{ what, body string }{
		{"the ask", read("POST", "/v1/tasks/"+task.TaskID+"/authorizations", `{"connection":"devbox"}`, "")},
		{"the task", read("GET", "/v1/tasks/"+task.TaskID, "", "")},
		{"the events", read("GET", "/v1/tasks/"+task.TaskID+"/events?kinds=authorization.required", "", "")},
		{"the stream", read("GET", "/v1/tasks/"+task.TaskID+"/events", "", "text/event-stream")},
	}
	authURL := regexp.MustCompile(`"authorizationUrl":"([^"]*)"`)
	for _, a := range answers {
		m := authURL.FindStringSubmatch(a.body)
		if m == nil {
			t.Errorf("%s shows no authorizationUrl: %s", a.what, a.body)
			continue
		}
		if !strings.Contains(m[1], "&state=") || strings.Contains(a.body, `\u0026`) {
			t.Errorf("%s: authorizationUrl %s", a.what, m[1])
		}
	}
}
