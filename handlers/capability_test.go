package handlers_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/connections/providertest"
	"github.com/taskhook/taskhook/store/storetest"
)

// Raw HTTP throughout: these tests are about headers, and about methods and
// answers the client never sends or reads.

// wantHeaders checks the header values every answer of a route carries.
func wantHeaders(t *testing.T, what string, a answer, want map[string]string) {
	t.Helper()
	for name, v := range want {
		if got := a.header.Get(name); got != v {
			t.Errorf("%s (%d): %s = %q, want %q", what, a.status, name, got, v)
		}
	}
}

var callbackHeaders = map[string]string{
	"Content-Security-Policy": "sandbox; default-src 'none'",
	"X-Content-Type-Options":  "nosniff",
}

var answerURLHeaders = map[string]string{
	"Cache-Control":           "no-store",
	"Referrer-Policy":         "no-referrer",
	"X-Content-Type-Options":  "nosniff",
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
}

// Every answer of a callback URL, the hook's own static response above all,
// is sent in a sandbox that runs no script, and is never sniffed: accepted
// (the default answer, a duplicate, a static response), refused for each
// reason, and answered by the router.
func TestCallbackAnswersAreSandboxed(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{HookRateLimit: 0.01, HookBurst: 2, MaxBodyBytes: 1024})
	ses := e.session(t)
	_, plain := e.hook(t, client.CreateHookInput{SessionID: ses})
	_, static := e.hook(t, client.CreateHookInput{SessionID: ses,
		Response: &client.HookResponse{Status: 200, Body: "<script>alert(document.domain)</script>", ContentType: "text/plain"}})
	_, empty := e.hook(t, client.CreateHookInput{SessionID: ses, Response: &client.HookResponse{Status: 204}})
	_, signed := e.hook(t, client.CreateHookInput{SessionID: ses, Verify: &client.HookVerify{Scheme: "github", Secret: "s3cret"}})
	closedID, closed := e.hook(t, client.CreateHookInput{SessionID: ses})
	if _, err := e.api.CloseHook(t.Context(), closedID); err != nil {
		t.Fatal(err)
	}
	_, tooLarge := e.hook(t, client.CreateHookInput{SessionID: ses})

	cases := []struct {
		what   string
		answer answer
		status int
	}{
		{"accepted", e.post(t, plain, "{}", "Content-Type", "application/json", "Webhook-Id", "d1"), 202},
		{"duplicate", e.post(t, plain, "{}", "Content-Type", "application/json", "Webhook-Id", "d1"), 202},
		{"rate limited", e.post(t, plain, "{}"), 429},
		{"static response", e.post(t, static, "{}"), 200},
		{"static 204", e.post(t, empty, "{}"), 204},
		{"bad signature", e.post(t, signed, "{}"), 401},
		{"closed", e.post(t, closed, "{}"), 410},
		{"too large", e.post(t, tooLarge, strings.Repeat("x", 2048)), 413},
		{"unknown token", e.post(t, "whk_00nope", "{}"), 404},
		{"no token", e.do(t, "POST", "/v1/callback/", "", "{}"), 404},
		{"GET", e.do(t, "GET", "/v1/callback/"+plain, "", nil), 405},
		{"PUT", e.do(t, "PUT", "/v1/callback/"+plain, "", "{}"), 405},
		{"a method chi does not know", e.do(t, "PROPFIND", "/v1/callback/"+plain, "", nil), 405},
	}
	for _, c := range cases {
		if c.answer.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.what, c.answer.status, c.answer.raw, c.status)
		}
		wantHeaders(t, c.what, c.answer, callbackHeaders)
	}
	if got := cases[3].answer; got.header.Get("Content-Type") != "text/plain" || string(got.raw) != "<script>alert(document.domain)</script>" {
		t.Errorf("static response: %q %s", got.header.Get("Content-Type"), got.raw)
	}
	for _, c := range cases[len(cases)-3:] {
		if allow := c.answer.header.Get("Allow"); allow != "POST" {
			t.Errorf("%s: Allow %q, want POST", c.what, allow)
		}
	}
}

// Every answer of an answer URL carries the answer page's headers, the
// router's 405 to any method but GET and POST and its 404s included, and a
// 405 says which methods are allowed.
func TestAnswerURLHeadersOnEveryAnswer(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	task, err := e.api.RequireInput(t.Context(), e.task(t, e.session(t)), []client.InputRequest{{Prompt: "Ship it?", Display: client.DisplayConfirmation}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(task.InputRequests[0].AnswerURL)
	if err != nil {
		t.Fatal(err)
	}
	page := u.Path
	for _, method := range []string{"PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "PROPFIND"} {
		for _, path := range []string{page, "/v1/input/ans_00nope"} {
			a := e.do(t, method, path, "", nil)
			if a.status != 405 || (method != "HEAD" && a.str("error", "code") != "method_not_allowed") {
				t.Errorf("%s %s: %d %s, want 405 method_not_allowed", method, path, a.status, a.raw)
			}
			if allow := a.header.Get("Allow"); allow != "GET, POST" {
				t.Errorf("%s %s: Allow %q, want GET, POST", method, path, allow)
			}
			wantHeaders(t, method, a, answerURLHeaders)
		}
	}
	for what, a := range map[string]answer{
		"GET":             e.do(t, "GET", page, "", nil),
		"GET unknown":     e.do(t, "GET", "/v1/input/ans_00nope", "", nil),
		"POST unknown":    e.do(t, "POST", "/v1/input/ans_00nope", "", `{"optionId":"yes"}`),
		"a path below it": e.do(t, "GET", page+"/more", "", nil),
	} {
		wantHeaders(t, what, a, answerURLHeaders)
	}
}

// Every answer of a sign-in's pages (the connection callbacks, which hold
// the attempt in their URL, and the page they land on) carries the answer
// page's headers: the refusals, the router's 405, and the page itself. A
// connection route that is no page of a sign-in does not.
func TestSigninPagesHeadersOnEveryAnswer(t *testing.T) {
	prov := providertest.New(t)
	e := startEnv(t, storetest.Embedded(t), app.Config{ConnectionsFile: providertest.WriteConnectionsFile(t,
		prov.Connection("devbox", "path", "repo"), prov.Connection("callback", "state", "repo"))})
	for what, a := range map[string]answer{
		"an unknown attempt":          e.do(t, "GET", "/v1/connections/devbox/callback/sgn_00nope?state=sgn_00nope", "", nil),
		"an unknown attempt, a page":  e.do(t, "GET", "/v1/connections/devbox/callback/sgn_00nope?state=sgn_00nope", "", nil, "Accept", "text/html"),
		"an unknown attempt, a form":  e.do(t, "POST", "/v1/connections/devbox/callback/sgn_00nope", "", "state=x"),
		"the state form":              e.do(t, "GET", "/v1/connections/callback/callback?state=sgn_00nope", "", nil),
		"an unknown connection":       e.do(t, "GET", "/v1/connections/nope/callback?state=sgn_00nope", "", nil),
		"a method the callback lacks": e.do(t, "PUT", "/v1/connections/devbox/callback/sgn_00nope", "", nil),
		"the page":                    e.do(t, "GET", "/v1/connections/signed-in?connection=devbox&outcome=declined", "", nil),
		"the page as JSON":            e.do(t, "GET", "/v1/connections/signed-in", "", nil, "Accept", "application/json"),
		"a method the page lacks":     e.do(t, "DELETE", "/v1/connections/signed-in", "", nil),
		"a path below the state form": e.do(t, "GET", "/v1/connections/callback/callback/x/y", "", nil),
	} {
		wantHeaders(t, what, a, answerURLHeaders)
	}
	// The sign-out of a connection named "callback" is an API route.
	if a := e.do(t, "DELETE", "/v1/connections/callback/token", e.alice, nil); a.status != 204 || a.header.Get("Content-Security-Policy") != "" {
		t.Errorf("a sign-out: %d, policy %q", a.status, a.header.Get("Content-Security-Policy"))
	}
}
