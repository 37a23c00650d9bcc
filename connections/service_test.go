package connections_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/connections"
	"github.com/taskhook/taskhook/connections/providertest"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

const publicURL = "http://taskhook.test"

// env is a connections service on one store, with two connections to one
// fake provider, "devbox" and "other", both with the callback form asked
// for. The owner holds the delegate scope: its tasks name alice as their
// requester.
type env struct {
	svc   *connections.Service
	tasks *tasks.Service
	store *store.Store
	prov  *providertest.Provider
	clock *providertest.Clock
	owner authz.Principal
}

func newEnv(t *testing.T, sc store.Config, callback string) *env {
	t.Helper()
	m := metrics.New()
	s := storetest.Open(t, sc, m)
	prov := providertest.New(t)
	conn := func(name string) connections.Connection {
		return connections.Connection{Name: name, AuthorizeURL: prov.URL + "/authorize", TokenURL: prov.URL + "/token",
			ClientID: prov.ClientID, ClientSecret: prov.ClientSecret, Scopes: []string{"repo", "read"}, PKCE: true,
			Return: callback}
	}
	clk := &providertest.Clock{}
	ts := tasks.NewService(tasks.Config{PublicURL: publicURL}, s, waits.New(waits.Config{}, nil, time.Now), m, time.Now)
	svc := connections.NewService(connections.Config{
		Connections: []connections.Connection{conn("devbox"), conn("other")}, PublicURL: publicURL, Now: clk.Now,
	}, authz.NewRandomVault(), s, ts, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return &env{svc: svc, tasks: ts, store: s, prov: prov, clock: clk,
		owner: authz.Principal{ID: "exec-owner", Scopes: []string{authz.ScopeDelegate}}}
}

// counts is the provider's successful code exchanges and refreshes. Issued
// takes the provider's lock, which its token endpoint held while counting:
// the counters read after it are the endpoint's last writes.
func (e *env) counts() (exchanges, refreshes int) {
	e.prov.Issued()
	return e.prov.Exchange, e.prov.Refreshs
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// task starts a working task of the owner's whose requester is alice.
func (e *env) task(t *testing.T) string {
	t.Helper()
	ctx := ctxFor(t)
	ses := sessions.NewService(sessions.Config{}, e.store, waits.New(waits.Config{}, nil, time.Now), time.Now)
	raw, _, err := ses.Create(ctx, e.owner, sessions.CreateInput{}, idem.Key{})
	if err != nil {
		t.Fatal(err)
	}
	var session sessions.Session
	if err := json.Unmarshal(raw, &session); err != nil {
		t.Fatal(err)
	}
	created, err := e.tasks.Create(ctx, e.owner, tasks.CreateInput{SessionID: session.SessionID, Requester: "alice"}, idem.Key{})
	if err != nil {
		t.Fatal(err)
	}
	var task tasks.Task
	if err := json.Unmarshal(created.JSON, &task); err != nil {
		t.Fatal(err)
	}
	return task.TaskID
}

func (e *env) ask(t *testing.T, taskID, conn string) (*wire.ConnectionToken, *wire.AuthorizationPending) {
	t.Helper()
	tok, pending, err := e.svc.Ask(ctxFor(t), e.owner, taskID, wire.AuthorizationAsk{Connection: conn}, idem.Key{})
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	if (tok == nil) == (pending == nil) {
		t.Fatalf("Ask: token %+v and pending %+v; want exactly one", tok, pending)
	}
	return tok, pending
}

// each runs fn, in parallel with other tests, on a fresh env over every
// store backend.
func each(t *testing.T, callback string, fn func(t *testing.T, e *env)) {
	t.Helper()
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) { fn(t, newEnv(t, sc, callback)) })
}

// eachReturn runs fn as each does, in a subtest for either return form.
func eachReturn(t *testing.T, fn func(t *testing.T, e *env, mode string)) {
	t.Helper()
	t.Parallel()
	for _, mode := range []string{connections.ReturnInPath, connections.ReturnInState} {
		t.Run(mode, func(t *testing.T) {
			each(t, mode, func(t *testing.T, e *env) { fn(t, e, mode) })
		})
	}
}

// asking starts a task whose ask for devbox waits for alice to sign in.
func (e *env) asking(t *testing.T) (string, *wire.AuthorizationPending) {
	t.Helper()
	id := e.task(t)
	_, pending := e.ask(t, id, "devbox")
	return id, pending
}

func (e *env) get(t *testing.T, taskID string) tasks.Task {
	t.Helper()
	task, err := e.tasks.Executed(ctxFor(t), e.owner, taskID)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// land is the browser arriving at a redirect the provider sent: the path's
// attempt token (path form) and the query, as the callback route reads them.
func (e *env) land(t *testing.T, conn, redirect string) (*connections.Landing, url.Values, error) {
	t.Helper()
	u, err := url.Parse(redirect)
	if err != nil {
		t.Fatal(err)
	}
	base := "/v1/connections/" + conn + "/callback"
	pathToken := strings.TrimPrefix(strings.TrimPrefix(u.Path, base), "/")
	l, err := e.svc.Land(ctxFor(t), conn, pathToken, u.Query())
	return l, u.Query(), err
}

// landed is land for a redirect that must find its attempt.
func (e *env) landed(t *testing.T, conn, redirect string) (*connections.Landing, url.Values) {
	t.Helper()
	l, params, err := e.land(t, conn, redirect)
	if err != nil {
		t.Fatalf("Land: %v", err)
	}
	return l, params
}

// wantExchanges fails the test unless the provider exchanged want codes.
func (e *env) wantExchanges(t *testing.T, want int) {
	t.Helper()
	if n, _ := e.counts(); n != want {
		t.Fatalf("code exchanges: %d, want %d", n, want)
	}
}

// signIn asks for a connection's token on a task that has none, approves
// at the provider and completes the return: alice holds a token after it.
func (e *env) signIn(t *testing.T, taskID, conn string) {
	t.Helper()
	_, pending := e.ask(t, taskID, conn)
	if pending == nil {
		t.Fatal("the ask handed out a token before any sign-in")
	}
	l, params, err := e.land(t, conn, e.prov.Approve(t, pending.AuthorizationURL))
	if err != nil {
		t.Fatalf("Land: %v", err)
	}
	if outcome, err := e.svc.Complete(ctxFor(t), l, params); err != nil || outcome != tasks.OutcomeAuthorized {
		t.Fatalf("Complete = %q, %v", outcome, err)
	}
}

// With no token kept, Ask asks alice to sign in: the task goes
// input_required with an authorization request whose URL leads to the
// provider and back to the connection's callback; once she has, Ask hands
// out the token the provider issued.
func TestAskWithoutTokenRequiresAuthorization(t *testing.T) {
	each(t, connections.ReturnInPath, func(t *testing.T, e *env) {
		id := e.task(t)
		tok, pending := e.ask(t, id, "devbox")
		if tok != nil || pending.Status != "authorization_required" || pending.RequestID == "" || pending.Connection != "devbox" {
			t.Fatalf("first ask: %+v %+v", tok, pending)
		}
		u, err := url.Parse(pending.AuthorizationURL)
		if err != nil || !strings.HasPrefix(pending.AuthorizationURL, e.prov.URL+"/authorize?") {
			t.Fatalf("authorization URL %q: %v", pending.AuthorizationURL, err)
		}
		q := u.Query()
		state := q.Get("state")
		if !strings.HasPrefix(state, connections.AttemptTokenPrefix) || q.Get("client_id") != e.prov.ClientID ||
			q.Get("redirect_uri") != publicURL+"/v1/connections/devbox/callback/"+state || q.Get("code_challenge") == "" ||
			q.Get("scope") != "repo read" {
			t.Fatalf("authorization URL query: %v", q)
		}
		task := e.get(t, id)
		if task.Status != tasks.InputRequired || len(task.InputRequests) != 1 {
			t.Fatalf("the task after the ask: %s, requests %+v", task.Status, task.InputRequests)
		}
		if r := task.InputRequests[0]; r.RequestID != pending.RequestID || r.Kind != wire.KindAuthorization ||
			r.Connection != "devbox" || r.AuthorizationURL == "" {
			t.Fatalf("the task's request: %+v", r)
		}
		if _, again := e.ask(t, id, "devbox"); again.RequestID != pending.RequestID {
			t.Fatalf("a second ask while pending: %+v, want request %s", again, pending.RequestID)
		}

		l, params := e.landed(t, "devbox", e.prov.Approve(t, pending.AuthorizationURL))
		if _, err := e.svc.Complete(ctxFor(t), l, params); err != nil {
			t.Fatal(err)
		}
		tok, _ = e.ask(t, id, "devbox")
		if tok == nil || !e.prov.Active(tok.AccessToken) || tok.TokenType != "Bearer" || tok.Connection != "devbox" ||
			tok.ExpiresAt == nil || strings.Join(tok.Scopes, " ") != "repo read" {
			t.Fatalf("ask after the sign-in: %+v", tok)
		}
		e.wantExchanges(t, 1)
	})
}

// A kept token that ran out is refreshed through the provider on Ask: a
// new access token, kept in place of the old one.
func TestAskRefreshesAnExpiredToken(t *testing.T) {
	each(t, connections.ReturnInPath, func(t *testing.T, e *env) {
		id := e.task(t)
		e.signIn(t, id, "devbox")
		first, _ := e.ask(t, id, "devbox")
		if first == nil {
			t.Fatal("no token after the sign-in")
		}

		e.clock.Advance(2 * time.Hour) // the provider's tokens last an hour
		second, _ := e.ask(t, id, "devbox")
		if second == nil || second.AccessToken == first.AccessToken || !e.prov.Active(second.AccessToken) {
			t.Fatalf("after expiry: %+v, first %+v; want a fresh token", second, first)
		}
		// The provider dates its tokens by the real clock: back to it, the
		// refreshed token is the one kept, and it is not refreshed again.
		e.clock.Advance(-2 * time.Hour)
		third, _ := e.ask(t, id, "devbox")
		if third == nil || third.AccessToken != second.AccessToken {
			t.Fatalf("the refreshed token is not kept: %+v, want %s", third, second.AccessToken)
		}
		if _, n := e.counts(); n != 1 {
			t.Fatalf("refreshes: %d, want 1", n)
		}
	})
}

// A token that ran out and cannot be refreshed (the provider fails) is no
// token: Ask asks for a sign-in again.
func TestAskSignsInAgainWhenRefreshFails(t *testing.T) {
	each(t, connections.ReturnInPath, func(t *testing.T, e *env) {
		id := e.task(t)
		e.signIn(t, id, "devbox")
		e.clock.Advance(2 * time.Hour)
		e.prov.FailTokens(true)
		if tok, pending := e.ask(t, id, "devbox"); tok != nil || pending == nil {
			t.Fatalf("ask with a token that cannot be refreshed: %+v %+v", tok, pending)
		}
	})
}

// The provider's return finds its attempt in either form, the path's token
// or the state alone; Complete keeps the token and closes the request.
func TestSigninReturn(t *testing.T) {
	eachReturn(t, func(t *testing.T, e *env, mode string) {
		id, pending := e.asking(t)
		redirect := e.prov.Approve(t, pending.AuthorizationURL)
		u, _ := url.Parse(redirect)
		wantPath := "/v1/connections/devbox/callback"
		if mode == connections.ReturnInPath {
			wantPath += "/" + u.Query().Get("state")
		}
		if u.Path != wantPath {
			t.Fatalf("redirect path %q, want %q", u.Path, wantPath)
		}
		l, params := e.landed(t, "devbox", redirect)
		outcome, err := e.svc.Complete(ctxFor(t), l, params)
		if err != nil || outcome != tasks.OutcomeAuthorized {
			t.Fatalf("Complete = %q, %v", outcome, err)
		}
		if task := e.get(t, id); task.Status != tasks.Working || len(task.InputRequests) != 0 {
			t.Fatalf("the task after the sign-in: %s, requests %+v", task.Status, task.InputRequests)
		}
		if tok, _ := e.ask(t, id, "devbox"); tok == nil {
			t.Fatal("no token kept")
		}
		// Used: the same return again finds nothing.
		if _, _, err := e.land(t, "devbox", redirect); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("a used attempt: %v, want not found", err)
		}
	})
}

// In the path form the state must be the path's token.
func TestSigninReturnPathStateMustMatch(t *testing.T) {
	each(t, connections.ReturnInPath, func(t *testing.T, e *env) {
		id, pending := e.asking(t)
		l, params := e.landed(t, "devbox", e.prov.Approve(t, pending.AuthorizationURL))
		params.Set("state", params.Get("state")+"x")
		if _, err := e.svc.Complete(ctxFor(t), l, params); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("Complete with another state: %v, want not found", err)
		}
		if task := e.get(t, id); task.Status != tasks.InputRequired {
			t.Fatalf("the task: %s, want still input_required", task.Status)
		}
	})
}

// Two returns landed on one attempt: the first to complete uses it, the
// second is refused.
func TestSigninAttemptServesOnce(t *testing.T) {
	each(t, connections.ReturnInState, func(t *testing.T, e *env) {
		_, pending := e.asking(t)
		redirect := e.prov.Approve(t, pending.AuthorizationURL)
		l1, params := e.landed(t, "devbox", redirect)
		l2, _ := e.landed(t, "devbox", redirect)
		if _, err := e.svc.Complete(ctxFor(t), l1, params); err != nil {
			t.Fatal(err)
		}
		if outcome, err := e.svc.Complete(ctxFor(t), l2, params); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("the second Complete = %q, %v; want not found", outcome, err)
		}
		e.wantExchanges(t, 1)
	})
}

// A return after the attempt ran out is refused as closed, and nothing is
// exchanged.
func TestSigninAttemptExpires(t *testing.T) {
	each(t, connections.ReturnInPath, func(t *testing.T, e *env) {
		_, pending := e.asking(t)
		redirect := e.prov.Approve(t, pending.AuthorizationURL)
		e.clock.Advance(15*time.Minute + time.Second) // the default SigninTTL
		if _, _, err := e.land(t, "devbox", redirect); !errors.Is(err, connections.ErrSigninClosed) {
			t.Fatalf("Land after the attempt ran out: %v, want ErrSigninClosed", err)
		}
		e.wantExchanges(t, 0)
	})
}

// The person declining at the provider ends the request as declined; no
// token is kept.
func TestSigninDeclined(t *testing.T) {
	each(t, connections.ReturnInPath, func(t *testing.T, e *env) {
		id, pending := e.asking(t)
		l, params := e.landed(t, "devbox", e.prov.Deny(t, pending.AuthorizationURL))
		if outcome, err := e.svc.Complete(ctxFor(t), l, params); err != nil || outcome != tasks.OutcomeDeclined {
			t.Fatalf("Complete = %q, %v; want declined", outcome, err)
		}
		if task := e.get(t, id); task.Status != tasks.Working || len(task.InputRequests) != 0 {
			t.Fatalf("the task after declining: %s, requests %+v", task.Status, task.InputRequests)
		}
		if _, err := e.store.ConnectionToken(ctxFor(t), "alice", "devbox"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a token kept after declining: %v", err)
		}
	})
}

// Reject of a token a sign-in gave just now fails the task: asking again
// would loop. An older token is only dropped, and the next Ask asks for a
// sign-in.
func TestRejectLoopGuard(t *testing.T) {
	each(t, connections.ReturnInPath, func(t *testing.T, e *env) {
		ctx := ctxFor(t)

		fresh := e.task(t)
		e.signIn(t, fresh, "devbox")
		got, err := e.svc.Reject(ctx, e.owner, fresh, "devbox")
		if err != nil || got.Action != "task_failed" || got.Connection != "devbox" {
			t.Fatalf("Reject of a fresh token = %+v, %v; want task_failed", got, err)
		}
		if task := e.get(t, fresh); task.Status != tasks.Failed {
			t.Fatalf("the task after a fresh token was rejected: %s, want failed", task.Status)
		}
		if _, err := e.store.ConnectionToken(ctx, "alice", "devbox"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the rejected token is kept: %v", err)
		}

		older := e.task(t)
		e.signIn(t, older, "devbox")
		e.clock.Advance(connections.LoopGuardWindow)
		got, err = e.svc.Reject(ctx, e.owner, older, "devbox")
		if err != nil || got.Action != "token_dropped" {
			t.Fatalf("Reject of an older token = %+v, %v; want token_dropped", got, err)
		}
		if task := e.get(t, older); task.Status != tasks.Working {
			t.Fatalf("the task after an older token was rejected: %s, want working", task.Status)
		}
		if tok, pending := e.ask(t, older, "devbox"); tok != nil || pending == nil {
			t.Fatalf("ask after the token was dropped: %+v %+v; want a sign-in", tok, pending)
		}
	})
}

// SignOut drops the caller's own token for that connection, not its token
// for another.
func TestSignOut(t *testing.T) {
	each(t, connections.ReturnInState, func(t *testing.T, e *env) {
		id := e.task(t)
		e.signIn(t, id, "devbox")
		e.signIn(t, id, "other")
		if err := e.svc.SignOut(ctxFor(t), authz.Principal{ID: "alice"}, "devbox"); err != nil {
			t.Fatal(err)
		}
		if tok, pending := e.ask(t, id, "devbox"); tok != nil || pending == nil {
			t.Fatalf("ask after signing out: %+v %+v; want a sign-in", tok, pending)
		}
		if tok, _ := e.ask(t, id, "other"); tok == nil {
			t.Fatal("signing out of devbox dropped the token for other")
		}
		if err := e.svc.SignOut(ctxFor(t), authz.Principal{ID: "alice"}, "nope"); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("SignOut of an unknown connection: %v, want not found", err)
		}
	})
}

// Ask and Reject by a caller that may read the task but not act for its
// requester are refused, whether a token is kept or not: an admin that is
// not the owner, and the owner whose token no longer carries the grant.
// The refused Reject leaves the token in place.
func TestDelegationRule(t *testing.T) {
	each(t, connections.ReturnInPath, func(t *testing.T, e *env) {
		ctx := ctxFor(t)
		id := e.task(t)
		refused := map[string]authz.Principal{
			"admin":             {ID: "someone", Scopes: []string{authz.ScopeAdmin}},
			"owner, no grant":   {ID: e.owner.ID},
			"owner, other user": {ID: e.owner.ID, ActFor: []string{"bob"}},
		}
		check := func(when string) {
			for name, p := range refused {
				tok, pending, err := e.svc.Ask(ctx, p, id, wire.AuthorizationAsk{Connection: "devbox"}, idem.Key{})
				if !errors.Is(err, problem.ErrRequesterNotAllowed) || tok != nil || pending != nil {
					t.Errorf("%s: Ask by %s = %+v, %+v, %v; want requester not allowed", when, name, tok, pending, err)
				}
				if _, err := e.svc.Reject(ctx, p, id, "devbox"); !errors.Is(err, problem.ErrRequesterNotAllowed) {
					t.Errorf("%s: Reject by %s: %v; want requester not allowed", when, name, err)
				}
			}
		}
		check("no token")
		if task := e.get(t, id); task.Status != tasks.Working {
			t.Fatalf("refused asks changed the task: %s", task.Status)
		}
		e.signIn(t, id, "devbox")
		check("a token kept")
		if tok, _ := e.ask(t, id, "devbox"); tok == nil {
			t.Fatal("a refused Reject dropped the token")
		}
		// One the requester named in act_for may.
		named := authz.Principal{ID: e.owner.ID, ActFor: []string{"alice"}}
		if tok, _, err := e.svc.Ask(ctx, named, id, wire.AuthorizationAsk{Connection: "devbox"}, idem.Key{}); err != nil || tok == nil {
			t.Fatalf("Ask by the owner acting for alice = %+v, %v", tok, err)
		}
	})
}

// An attempt is found only at the callback of its own connection, even
// while the task awaits a sign-in to the other one too, and in the state
// form a token in the path finds nothing.
func TestSigninReturnAtAnotherCallback(t *testing.T) {
	eachReturn(t, func(t *testing.T, e *env, mode string) {
		id, pending := e.asking(t)
		e.ask(t, id, "other") // other's sign-in is pending too: only the attempt tells them apart
		u, _ := url.Parse(e.prov.Approve(t, pending.AuthorizationURL))
		state := u.Query().Get("state")
		pathToken := ""
		if mode == connections.ReturnInPath {
			pathToken = state
		}
		if _, err := e.svc.Land(ctxFor(t), "other", pathToken, u.Query()); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("devbox's attempt at other's callback: %v, want not found", err)
		}
		if _, err := e.svc.Land(ctxFor(t), "nope", pathToken, u.Query()); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("an unknown connection's callback: %v, want not found", err)
		}
		if mode == connections.ReturnInState {
			if _, err := e.svc.Land(ctxFor(t), "devbox", state, u.Query()); !errors.Is(err, problem.ErrNotFound) {
				t.Fatalf("a path token in the state form: %v, want not found", err)
			}
		}
		if _, err := e.svc.Land(ctxFor(t), "devbox", pathToken, u.Query()); err != nil {
			t.Fatalf("the attempt at its own callback: %v", err)
		}
	})
}

// Ask refuses an unknown connection, a bad scope and a task that ended,
// and hands out no token for a scope the kept one lacks.
func TestAskRefuses(t *testing.T) {
	each(t, connections.ReturnInPath, func(t *testing.T, e *env) {
		ctx := ctxFor(t)
		id := e.task(t)
		for name, c := range map[string]struct {
			in    wire.AuthorizationAsk
			field string
		}{
			"no connection":      {wire.AuthorizationAsk{}, "connection"},
			"unknown connection": {wire.AuthorizationAsk{Connection: "nope"}, "connection"},
			"bad scope":          {wire.AuthorizationAsk{Connection: "devbox", Scopes: []string{"ok", "a b"}}, "scopes[1]"},
		} {
			var invalid *problem.ValidationError
			if _, _, err := e.svc.Ask(ctx, e.owner, id, c.in, idem.Key{}); !errors.As(err, &invalid) || invalid.Field != c.field {
				t.Errorf("%s: %v, want %s invalid", name, err, c.field)
			}
		}
		if task := e.get(t, id); task.Status != tasks.Working {
			t.Fatalf("refused asks changed the task: %s", task.Status)
		}
		e.signIn(t, id, "devbox")
		tok, pending, err := e.svc.Ask(ctx, e.owner, id, wire.AuthorizationAsk{Connection: "devbox", Scopes: []string{"admin"}}, idem.Key{})
		if err != nil || tok != nil || pending == nil {
			t.Fatalf("ask for a scope the token lacks = %+v, %+v, %v; want a sign-in", tok, pending, err)
		}
		if !strings.Contains(pending.AuthorizationURL, "scope=repo+read+admin") {
			t.Fatalf("the sign-in does not ask for the wider scope: %s", pending.AuthorizationURL)
		}

		ended := e.task(t)
		fail := tasks.Command{Kind: tasks.CmdFail, Error: &tasks.TaskError{Message: "done"}}
		if _, err := e.tasks.Run(ctx, e.owner, ended, fail, idem.Key{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.Ask(ctx, e.owner, ended, wire.AuthorizationAsk{Connection: "devbox"}, idem.Key{}); !errors.Is(err, tasks.ErrTerminal) {
			t.Fatalf("ask on a failed task: %v, want ErrTerminal", err)
		}
	})
}

// A return for a task that ended since the ask is refused as closed.
func TestSigninClosedWhenTaskEnds(t *testing.T) {
	each(t, connections.ReturnInState, func(t *testing.T, e *env) {
		id, pending := e.asking(t)
		redirect := e.prov.Approve(t, pending.AuthorizationURL)
		fail := tasks.Command{Kind: tasks.CmdFail, Error: &tasks.TaskError{Message: "gave up"}}
		if _, err := e.tasks.Run(ctxFor(t), e.owner, id, fail, idem.Key{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.land(t, "devbox", redirect); !errors.Is(err, connections.ErrSigninClosed) {
			t.Fatalf("Land for an ended task: %v, want ErrSigninClosed", err)
		}
	})
}
