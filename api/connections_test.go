package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/connections/providertest"
)

type pendingSignin struct {
	Status           string `json:"status"`
	RequestID        string `json:"requestId"`
	Connection       string `json:"connection"`
	AuthorizationURL string `json:"authorizationUrl"`
}

// TestContractConnections drives provider sign-in over real HTTP through
// apitest.Transport: the token requests (200, 202 and refusals), both
// callback forms (GET and a form POST), the closing page, replayed, unknown
// and closed attempts, the loop guard, sign-out, and the events a sign-in
// appends.
func TestContractConnections(t *testing.T) {
	prov := providertest.New(t)
	file := providertest.WriteConnectionsFile(t,
		prov.Connection("devbox", "path", "repo"), prov.Connection("google", "state", "email"))
	srv := apptest.Embedded(t, app.Config{ConnectionsFile: file})
	// Alice's tasks name other requesters: her token carries delegate.
	alice := newCaller(t, srv.URL, apptest.Token(t, "alice", "delegate"))
	bob := alice.as(apptest.Token(t, "bob"))
	anon := alice.as("")
	browser := anon.noRedirects()

	var conns struct {
		Items []struct {
			Name   string   `json:"name"`
			Scopes []string `json:"scopes"`
		} `json:"items"`
	}
	alice.want(alice.do("GET", "/v1/connections", nil), 200, "", &conns)
	if len(conns.Items) != 2 || conns.Items[0].Name != "devbox" || conns.Items[1].Scopes[0] != "email" {
		t.Fatalf("connections: %+v", conns)
	}
	anon.want(anon.do("GET", "/v1/connections", nil), 401, "unauthorized", nil)

	var ses struct{ SessionID string }
	alice.want(alice.do("POST", "/v1/sessions", nil), 201, "", &ses)
	newTask := func(requester string) string {
		var tk task
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID, "requester": requester}), 201, "", &tk)
		return tk.TaskID
	}
	tid := newTask("alice")
	path := "/v1/tasks/" + tid + "/authorizations"

	// Refusals.
	alice.want(alice.do("POST", path, map[string]any{"connection": "nope"}), 400, "invalid_request", nil)
	alice.want(alice.do("POST", path, map[string]any{}), 400, "invalid_request", nil)
	alice.want(alice.do("POST", path, map[string]any{"connection": "devbox", "scopes": []string{"a b"}}), 400, "invalid_request", nil)
	alice.want(alice.do("POST", path, `{"connection":`), 400, "invalid_json", nil)
	bob.want(bob.do("POST", path, map[string]any{"connection": "devbox"}), 404, "not_found", nil)
	alice.want(alice.do("POST", "/v1/tasks/task_nope/authorizations", map[string]any{"connection": "devbox"}), 404, "not_found", nil)
	anon.want(anon.do("POST", path, map[string]any{"connection": "devbox"}), 401, "unauthorized", nil)

	// 202 and the task waiting on the sign-in; asking again gives the same request.
	var pending, again pendingSignin
	alice.want(alice.do("POST", path, map[string]any{"connection": "devbox"}, "Idempotency-Key", "auth-1"), 202, "", &pending)
	if pending.Status != "authorization_required" || pending.Connection != "devbox" || pending.AuthorizationURL == "" {
		t.Fatalf("pending: %+v", pending)
	}
	alice.want(alice.do("POST", path, map[string]any{"connection": "devbox"}), 202, "", &again)
	if again.RequestID != pending.RequestID {
		t.Fatalf("a second ask made another request: %+v", again)
	}
	alice.want(alice.do("POST", path, map[string]any{"connection": "devbox"}, "Idempotency-Key", "auth-1"), 202, "", &again)
	if again.RequestID != pending.RequestID {
		t.Fatalf("a repeat with the same key made another request: %+v", again)
	}
	alice.want(alice.do("POST", path, map[string]any{"connection": "google"}, "Idempotency-Key", "auth-1"), 409, "idempotency_conflict", nil)
	var waiting task
	alice.want(alice.do("GET", "/v1/tasks/"+tid, nil), 200, "", &waiting)
	if waiting.Status != "input_required" || len(waiting.InputRequests) != 1 || waiting.InputRequests[0].Kind != "authorization" {
		t.Fatalf("the task: %+v", waiting)
	}
	alice.want(alice.do("POST", "/v1/tasks/"+tid+"/input", map[string]any{"responses": []any{
		map[string]any{"requestId": pending.RequestID, "optionId": "authorized"}}}), 400, "invalid_request", nil)

	// The provider's redirect (path form), the closing page, a replay.
	redirect := strings.TrimPrefix(prov.Approve(t, pending.AuthorizationURL), srv.URL)
	r := browser.want(browser.do("GET", redirect, nil), 303, "", nil)
	loc := r.header.Get("Location")
	if loc != "/v1/connections/signed-in?connection=devbox&outcome=authorized" {
		t.Fatalf("Location: %q", loc)
	}
	wantPageHeaders(t, r, "the callback's redirect")
	page := browser.want(browser.do("GET", loc, nil, "Accept", htmlAccept), 200, "", nil)
	wantPageHeaders(t, page, "the closing page")
	if !strings.Contains(string(page.body), "Signed in to devbox") || !strings.Contains(string(page.body), "close this tab") {
		t.Errorf("the closing page: %s", page.body)
	}
	var result struct{ Connection, Outcome string }
	browser.want(browser.do("GET", loc, nil, "Accept", "application/json"), 200, "", &result)
	if result.Connection != "devbox" || result.Outcome != "authorized" {
		t.Errorf("the closing page as JSON: %+v", result)
	}
	browser.want(browser.do("GET", "/v1/connections/signed-in", nil), 200, "", nil)
	browser.want(browser.do("GET", "/v1/connections/signed-in", nil, "Accept", "application/json"), 200, "", nil)
	browser.want(browser.do("GET", redirect, nil), 404, "not_found", nil)
	used := browser.want(browser.do("GET", redirect, nil, "Accept", htmlAccept), 404, "", nil)
	wantPageHeaders(t, used, "a used link's page")
	if !strings.Contains(string(used.body), "already used") {
		t.Errorf("a used link's page: %s", used.body)
	}
	browser.want(browser.do("GET", "/v1/connections/devbox/callback/sgn_nothing?state=sgn_nothing&code=x", nil), 404, "not_found", nil)
	browser.want(browser.do("GET", "/v1/connections/nope/callback?state=sgn_nothing", nil), 404, "not_found", nil)
	browser.want(browser.do("GET", "/v1/connections/nope/callback?state=sgn_nothing", nil, "Accept", htmlAccept), 404, "", nil)

	var tok struct {
		Connection  string   `json:"connection"`
		AccessToken string   `json:"accessToken"`
		TokenType   string   `json:"tokenType"`
		ExpiresAt   *string  `json:"expiresAt"`
		Scopes      []string `json:"scopes"`
	}
	r = alice.want(alice.do("POST", path, map[string]any{"connection": "devbox"}), 200, "", &tok)
	if tok.AccessToken == "" || tok.TokenType != "Bearer" || tok.ExpiresAt == nil || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the token: %+v %v", tok, r.header)
	}

	// The state form, declined.
	alice.want(alice.do("POST", path, map[string]any{"connection": "google"}), 202, "", &pending)
	denied := strings.TrimPrefix(prov.Deny(t, pending.AuthorizationURL), srv.URL)
	if !strings.HasPrefix(denied, "/v1/connections/google/callback?") {
		t.Fatalf("the state form's redirect: %s", denied)
	}
	r = browser.want(browser.do("GET", denied, nil), 303, "", nil)
	if !strings.Contains(r.header.Get("Location"), "outcome=declined") {
		t.Fatalf("declined: %q", r.header.Get("Location"))
	}

	// A form post to the path form, for another requester.
	other := newTask("carol")
	// Without the grant alice may neither name carol, nor use or drop her
	// token through the task she named her in.
	withoutGrant := alice.as(apptest.Token(t, "alice"))
	withoutGrant.want(withoutGrant.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID, "requester": "carol"}), 403, "requester_not_allowed", nil)
	withoutGrant.want(withoutGrant.do("POST", "/v1/tasks/"+other+"/authorizations", map[string]any{"connection": "devbox"}), 403, "requester_not_allowed", nil)
	withoutGrant.want(withoutGrant.do("POST", "/v1/tasks/"+other+"/authorizations/devbox/reject", nil), 403, "requester_not_allowed", nil)
	alice.want(alice.do("POST", "/v1/tasks/"+other+"/authorizations", map[string]any{"connection": "devbox"}), 202, "", &pending)
	back, err := url.Parse(prov.Approve(t, pending.AuthorizationURL))
	if err != nil {
		t.Fatal(err)
	}
	// Too large a form for a live attempt is refused, and the attempt
	// still works; one for a used attempt is a 404, its body unread.
	browser.want(browser.do("POST", back.Path, strings.Repeat("a", 70<<10), "Content-Type", "application/x-www-form-urlencoded"),
		413, "payload_too_large", nil)
	form := back.Query().Encode()
	r = browser.want(browser.do("POST", back.Path, form, "Content-Type", "application/x-www-form-urlencoded"), 303, "", nil)
	if !strings.Contains(r.header.Get("Location"), "outcome=authorized") {
		t.Fatalf("a form post: %q", r.header.Get("Location"))
	}
	browser.want(browser.do("POST", back.Path, strings.Repeat("a", 70<<10), "Content-Type", "application/x-www-form-urlencoded"),
		404, "not_found", nil)

	// The loop guard: carol's token is fresh, so rejecting it fails the task.
	var rej struct{ Connection, Action string }
	alice.want(alice.do("POST", "/v1/tasks/"+other+"/authorizations/devbox/reject", nil), 200, "", &rej)
	if rej.Action != "task_failed" {
		t.Fatalf("reject: %+v", rej)
	}
	alice.want(alice.do("POST", "/v1/tasks/"+other+"/authorizations/devbox/reject", map[string]any{}), 200, "", &rej)
	if rej.Action != "token_dropped" {
		t.Fatalf("reject with no token: %+v", rej)
	}
	alice.want(alice.do("POST", "/v1/tasks/"+other+"/authorizations/nope/reject", nil), 404, "not_found", nil)
	bob.want(bob.do("POST", "/v1/tasks/"+tid+"/authorizations/devbox/reject", nil), 404, "not_found", nil)
	alice.want(alice.do("POST", "/v1/tasks/"+other+"/authorizations", map[string]any{"connection": "devbox"}), 409, "task_terminal", nil)

	// A sign-in whose task ended is closed.
	ended := newTask("dave")
	alice.want(alice.do("POST", "/v1/tasks/"+ended+"/authorizations", map[string]any{"connection": "devbox"}), 202, "", &pending)
	alice.want(alice.do("POST", "/v1/tasks/"+ended+"/cancel", nil), 200, "", nil)
	closed := strings.TrimPrefix(prov.Approve(t, pending.AuthorizationURL), srv.URL)
	browser.want(browser.do("GET", closed, nil), 410, "signin_closed", nil)
	if page := browser.want(browser.do("GET", closed, nil, "Accept", htmlAccept), 410, "", nil); !strings.Contains(string(page.body), "expired") {
		t.Errorf("a closed link's page: %s", page.body)
	}

	// Sign-out.
	alice.want(alice.do("DELETE", "/v1/connections/devbox/token", nil), 204, "", nil)
	alice.want(alice.do("DELETE", "/v1/connections/devbox/token", nil), 204, "", nil)
	alice.want(alice.do("DELETE", "/v1/connections/nope/token", nil), 404, "not_found", nil)
	anon.want(anon.do("DELETE", "/v1/connections/devbox/token", nil), 401, "unauthorized", nil)

	// The logs, with every authorization event, validate.
	var log eventPage
	alice.want(alice.do("GET", "/v1/tasks/"+tid+"/events?limit=1000", nil), 200, "", &log)
	seen := map[string]int{}
	for _, e := range log.Events {
		seen[e.Type]++
	}
	if seen["authorization.required"] != 2 || seen["authorization.completed"] != 2 {
		t.Errorf("the task log: %v", seen)
	}
	alice.want(alice.do("GET", "/v1/sessions/"+ses.SessionID+"/events?limit=1000", nil), 200, "", nil)
	alice.want(alice.do("GET", "/v1/tasks/"+tid+"/events?kinds=authorization.completed&wait=10ms", nil), 200, "", nil)
}

// noRedirects is the caller as a browser that shows each redirect instead
// of following it.
func (c *caller) noRedirects() *caller {
	cp := *c
	hc := *c.hc
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cp.hc = &hc
	return &cp
}
