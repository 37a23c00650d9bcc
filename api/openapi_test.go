package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/api"
	"github.com/taskhook/taskhook/api/apitest"
	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/connections/providertest"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// publicRoutes need no token.
var publicRoutes = []string{"/", "/healthz", "/readyz", "/metrics", signedInRoute,
	"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp", "/.well-known/agent-card.json"}

// protocolRoutes carry another protocol's messages (MCP's and A2A's
// JSON-RPC): the
// API's conventions for a POST (an Idempotency-Key, its error codes, a
// strict JSON object) are that protocol's business there; the rest holds.
var protocolRoutes = []string{"/mcp", "/a2a"}

// signedInRoute is the page a finished provider sign-in lands on.
const signedInRoute = "/v1/connections/signed-in"

// capabilityRoutes take no bearer token either: the token in the path (or,
// from Slack, the signature) is the credential, and a 401 there is a refused
// signature, not a bearer challenge.
var capabilityRoutes = []string{"/v1/callback/{token}", "/v1/input/{token}", slackRoute,
	signInReturnRoute, "/v1/connections/{name}/callback"}

// signInReturnRoute is where an OAuth provider sends the browser back
// (the attempt in the path): a provider's form post carries no
// Idempotency-Key worth reading, since the attempt works once.
const signInReturnRoute = "/v1/connections/{name}/callback/{token}"

// noIdempotencyRoutes are POST routes whose callers send no Idempotency-Key.
var noIdempotencyRoutes = []string{slackRoute}

// rawBodyRoutes take any bytes as their body, whatever their type.
var rawBodyRoutes = []string{"/v1/callback/{token}"}

// slackRoute takes Slack's form bodies and no Idempotency-Key (Slack sends
// none; a repeated click finds its request closed and changes nothing).
const slackRoute = "/v1/channels/slack/interactions"

func TestDocumentValidates(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.Spec)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() || !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Errorf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Errorf("global security = %v, want bearerAuth", doc.Security)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			public := slices.Contains(publicRoutes, path)
			capability := slices.Contains(capabilityRoutes, path)
			bearer := !public && !capability
			switch {
			case !bearer && (op.Security == nil || len(*op.Security) != 0):
				t.Errorf("%s: want `security: []`", where)
			case bearer && op.Security != nil:
				t.Errorf("%s: want the global bearer security", where)
			}
			if bearer && op.Responses.Status(http.StatusUnauthorized) == nil {
				t.Errorf("%s: no 401", where)
			}
			if capability && op.Responses.Status(http.StatusNotFound) == nil {
				t.Errorf("%s: no 404 for an unknown token", where)
			}
			if op.Responses.Status(http.StatusInternalServerError) == nil {
				t.Errorf("%s: no 500", where)
			}
			if method == http.MethodPost && !slices.Contains(protocolRoutes, path) {
				if p := op.Parameters.GetByInAndName(openapi3.ParameterInHeader, "Idempotency-Key"); p == nil && !slices.Contains(noIdempotencyRoutes, path) {
					t.Errorf("%s: no Idempotency-Key", where)
				}
				want := []int{http.StatusRequestEntityTooLarge, http.StatusRequestTimeout}
				if bearer {
					want = append(want, http.StatusBadRequest, http.StatusConflict)
				}
				for _, status := range want {
					if op.Responses.Status(status) == nil {
						t.Errorf("%s: no %d", where, status)
					}
				}
				switch {
				case op.RequestBody == nil:
					t.Errorf("%s: no request body", where)
				case slices.Contains(rawBodyRoutes, path):
					if op.RequestBody.Value.Content.Get("*/*") == nil {
						t.Errorf("%s: the request body must take */*", where)
					}
				case path == slackRoute || path == signInReturnRoute:
					if op.RequestBody.Value.Content.Get("application/x-www-form-urlencoded") == nil {
						t.Errorf("%s: the request body must take a form", where)
					}
				default:
					mt := op.RequestBody.Value.Content.Get("application/json")
					if mt == nil || mt.Schema == nil {
						t.Errorf("%s: no application/json request body", where)
					} else if s := mt.Schema.Value; s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
						t.Errorf("%s: the request body must have additionalProperties: false", where)
					}
				}
			}
			if p := item.Parameters.GetByInAndName(openapi3.ParameterInHeader, "X-Request-Id"); p == nil {
				t.Errorf("%s: no X-Request-Id request header", where)
			}
			for status, resp := range op.Responses.Map() {
				if resp.Value.Headers["X-Request-Id"] == nil {
					t.Errorf("%s %s: no X-Request-Id header", where, status)
				}
			}
			for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
				if r := op.Responses.Status(status); r != nil && r.Value.Headers["Retry-After"] == nil {
					t.Errorf("%s %d: no Retry-After", where, status)
				}
			}
			if r := op.Responses.Status(http.StatusUnauthorized); r != nil {
				switch challenge := r.Value.Headers["WWW-Authenticate"] != nil; {
				case bearer && !challenge:
					t.Errorf("%s 401: no WWW-Authenticate", where)
				case !bearer && challenge:
					t.Errorf("%s 401: a capability route's 401 is not a bearer challenge", where)
				}
			}
		}
	}
}

// TestDocumentCoversRouter: every route the router serves is in the
// document, and the document lists nothing the router does not serve. The
// web console's files under /console/ are pages, not API, and are left out.
func TestDocumentCoversRouter(t *testing.T) {
	// Every optional route mounted: the Slack route needs a signing secret,
	// the connection routes a connections file.
	prov := providertest.New(t)
	file := providertest.WriteConnectionsFile(t, prov.Connection("devbox", "path"))
	srv := apptest.Embedded(t, app.Config{SlackSigningSecret: "slack-secret", ConnectionsFile: file})
	routes, ok := srv.App.Handler.(chi.Routes)
	if !ok {
		t.Fatalf("the app's handler is a %T, not a chi.Routes", srv.App.Handler)
	}
	served := map[string]bool{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if route == "/console" || strings.HasPrefix(route, "/console/") {
			return nil // the web console's files: a page, not part of the API
		}
		if route == "/a2a/*" {
			return nil // the A2A HTTP+JSON binding's routes: the A2A specification's, listed in the README
		}
		served[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := apitest.Document()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	for _, r := range sortedKeys(served) {
		if !documented[r] {
			t.Errorf("%s is served but not in api/openapi.yaml", r)
		}
	}
	for _, r := range sortedKeys(documented) {
		if !served[r] {
			t.Errorf("%s is in api/openapi.yaml but not served", r)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// caller drives the server over HTTP through the validating transport.
type caller struct {
	t     *testing.T
	base  string
	token string
	hc    *http.Client
}

func newCaller(t *testing.T, base, token string) *caller {
	return &caller{t: t, base: base, token: token, hc: &http.Client{Transport: apitest.Transport(t, nil), Timeout: 90 * time.Second}}
}

func (c *caller) as(token string) *caller {
	cp := *c
	cp.token = token
	return &cp
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request. body is nil (none), a string or []byte (sent as is)
// or a value to encode. headers are name, value pairs.
func (c *caller) do(method, path string, body any, headers ...string) reply {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: raw}
}

// wantReplay posts body to path again with the idempotency key of first,
// and wants first's answer replayed: the same status and body, marked
// Idempotent-Replayed.
func (c *caller) wantReplay(first reply, path string, body any, key string) {
	c.t.Helper()
	again := c.want(c.do("POST", path, body, "Idempotency-Key", key), first.status, "", nil)
	if again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.body, again.body) {
		c.t.Errorf("replay of POST %s: header %q, body %s, want %s", path, again.header.Get("Idempotent-Replayed"), again.body, first.body)
	}
}

// wantTwoPages reads the list at first, wanting n items and a cursor, then
// the list at next followed by that cursor, wanting m items and no cursor.
func (c *caller) wantTwoPages(first string, n int, next string, m int) {
	c.t.Helper()
	var page struct {
		Items      []json.RawMessage
		NextCursor *string
	}
	c.want(c.do("GET", first, nil), 200, "", &page)
	if len(page.Items) != n || page.NextCursor == nil {
		c.t.Fatalf("first page of %s: %d items, cursor %v", first, len(page.Items), page.NextCursor)
	}
	c.want(c.do("GET", next+url.QueryEscape(*page.NextCursor), nil), 200, "", &page)
	if len(page.Items) != m || page.NextCursor != nil {
		c.t.Errorf("second page of %s: %d items, cursor %v", first, len(page.Items), page.NextCursor)
	}
}

// want checks the status (and, for an error, its code) and decodes the body
// into v when v is not nil.
func (c *caller) want(r reply, status int, code string, v any) reply {
	c.t.Helper()
	if r.status != status {
		c.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if code != "" {
		var e struct{ Error struct{ Code string } }
		if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Code != code {
			c.t.Fatalf("error code %q, want %q: %s", e.Error.Code, code, r.body)
		}
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			c.t.Fatalf("decode %s: %v", r.body, err)
		}
	}
	return r
}

type task struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	Revision       int64  `json:"revision"`
	StatusMessage  string `json:"statusMessage"`
	InputRequests  []inputRequest
	InputResponses []json.RawMessage
}

// wantAnswered wants the task's i-th answer to be want (a JSON object)
// with an answeredAt in the contract's form besides.
func wantAnswered(t *testing.T, tk task, i int, want string) {
	t.Helper()
	if len(tk.InputResponses) <= i {
		t.Fatalf("no answer %d in %+v", i, tk.InputResponses)
	}
	var got map[string]any
	if err := json.Unmarshal(tk.InputResponses[i], &got); err != nil {
		t.Fatal(err)
	}
	at, _ := got["answeredAt"].(string)
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", at); err != nil {
		t.Errorf("answer %d: answeredAt %q is not RFC 3339 UTC with milliseconds", i, at)
	}
	delete(got, "answeredAt")
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if g, _ := json.Marshal(got); string(g) != mustJSON(t, w) {
		t.Errorf("answer %d: %s, want %s", i, g, mustJSON(t, w))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type inputRequest struct {
	RequestID string `json:"requestId"`
	Kind      string `json:"kind"`
	Display   string `json:"display"`
	AnswerURL string `json:"answerUrl"`
	Options   []struct {
		ID string `json:"id"`
	} `json:"options"`
}

type eventPage struct {
	Events []struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	} `json:"events"`
	Cursor string `json:"cursor"`
}

// TestContract drives every route and the main error answers over real HTTP,
// on the embedded store, through apitest.Transport: each exchange is
// validated against the document.
func TestContract(t *testing.T) {
	srv := apptest.Embedded(t, app.Config{})
	alice := newCaller(t, srv.URL, apptest.Token(t, "alice"))
	bob := alice.as(apptest.Token(t, "bob"))
	carol := alice.as(apptest.Token(t, "carol"))
	aliceForCarol := alice.as(apptest.TokenActingFor(t, "alice", []string{"carol"}))
	anon := alice.as("")

	t.Run("system", func(t *testing.T) {
		anon.want(anon.do("GET", "/healthz", nil), 200, "", nil)
		anon.want(anon.do("GET", "/readyz", nil), 200, "", nil)
		r := anon.want(anon.do("GET", "/metrics", nil), 200, "", nil)
		if !strings.Contains(string(r.body), "# TYPE") {
			t.Errorf("/metrics does not look like Prometheus text")
		}
		var info struct{ Store string }
		alice.want(alice.do("GET", "/v1/info", nil), 200, "", &info)
		if info.Store != "embedded" {
			t.Errorf("store = %q", info.Store)
		}
		r = anon.want(anon.do("GET", "/v1/info", nil, "X-Request-Id", "trace-123"), 401, "unauthorized", nil)
		if got := r.header.Get("X-Request-Id"); got != "trace-123" {
			t.Errorf("X-Request-Id = %q, want the caller's", got)
		}
		alice.as("not-a-jwt").want(alice.as("not-a-jwt").do("GET", "/v1/info", nil), 401, "unauthorized", nil)
		anon.want(anon.do("GET", "/v1/nothing-here", nil), 404, "not_found", nil)
		alice.want(alice.do("DELETE", "/v1/tasks", nil), 405, "method_not_allowed", nil)
	})

	// Sessions.
	var ses, other struct{ SessionID string }
	t.Run("sessions", func(t *testing.T) {
		alice.want(alice.do("POST", "/v1/sessions", nil), 201, "", &ses)
		first := alice.want(alice.do("POST", "/v1/sessions", map[string]any{"metadata": map[string]any{"agent": "x"}},
			"Idempotency-Key", "ses-1"), 201, "", &other)
		alice.wantReplay(first, "/v1/sessions", map[string]any{"metadata": map[string]any{"agent": "x"}}, "ses-1")
		alice.want(alice.do("POST", "/v1/sessions", map[string]any{"metadata": map[string]any{"agent": "y"}},
			"Idempotency-Key", "ses-1"), 409, "idempotency_conflict", nil)
		alice.want(alice.do("POST", "/v1/sessions", `{"metadata":`), 400, "invalid_json", nil)
		alice.want(alice.do("POST", "/v1/sessions", `{"surprise":1}`), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/sessions", `{"metadata":[1]}`), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/sessions", `[]`), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/sessions", map[string]any{"notify": []any{map[string]any{"url": "http://127.0.0.1:9/loopback-is-refused"}}}),
			400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/sessions", nil, "Idempotency-Key", strings.Repeat("k", 256)), 400, "invalid_request", nil)
		huge := `{"metadata":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`
		alice.want(alice.do("POST", "/v1/sessions", huge), 413, "payload_too_large", nil)
		anon.want(anon.do("POST", "/v1/sessions", nil), 401, "unauthorized", nil)

		alice.want(alice.do("GET", "/v1/sessions/"+ses.SessionID, nil), 200, "", nil)
		bob.want(bob.do("GET", "/v1/sessions/"+ses.SessionID, nil), 404, "not_found", nil)
		alice.want(alice.do("GET", "/v1/sessions/ses_nope", nil), 404, "not_found", nil)

		var page struct {
			Items      []json.RawMessage
			NextCursor *string
		}
		alice.wantTwoPages("/v1/sessions?limit=1", 1, "/v1/sessions?status=active&limit=100&cursor=", 1)
		bob.want(bob.do("GET", "/v1/sessions", nil), 200, "", &page)
		if len(page.Items) != 0 {
			t.Errorf("bob sees %d sessions", len(page.Items))
		}
		alice.want(alice.do("GET", "/v1/sessions?limit=0", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", "/v1/sessions?limit=101", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", "/v1/sessions?cursor=%21%21", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", "/v1/sessions?status=gone", nil), 400, "invalid_request", nil)
	})

	// Tasks.
	var tk task
	t.Run("create task", func(t *testing.T) {
		body := map[string]any{
			"sessionId": ses.SessionID, "kind": "devbox", "label": "build", "input": map[string]any{"repo": "x"},
			"metadata": map[string]any{"k": "v"}, "ttlMs": 3600_000, "pollIntervalMs": 1000,
		}
		r := alice.want(alice.do("POST", "/v1/tasks", body, "Idempotency-Key", "task-1"), 201, "", &tk)
		if loc := r.header.Get("Location"); loc != "/v1/tasks/"+tk.TaskID {
			t.Errorf("Location = %q", loc)
		}
		r = alice.want(alice.do("POST", "/v1/tasks", body, "Idempotency-Key", "task-1"), 201, "", nil)
		if r.header.Get("Idempotent-Replayed") != "true" || r.header.Get("Location") == "" {
			t.Errorf("replay: %v", r.header)
		}
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID, "ttlMs": 1}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID, "label": 7}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/tasks", nil), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID,
			"notify": []any{map[string]any{"url": "http://127.0.0.1:9/loopback-is-refused"}}}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": "ses_nope"}), 404, "not_found", nil)
		bob.want(bob.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 404, "not_found", nil)
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID, "kind": "other"},
			"Idempotency-Key", "task-1"), 409, "idempotency_conflict", nil)
	})
	path := "/v1/tasks/" + tk.TaskID

	t.Run("read task", func(t *testing.T) {
		alice.want(alice.do("GET", path, nil), 200, "", nil)
		bob.want(bob.do("GET", path, nil), 404, "not_found", nil)
		alice.want(alice.do("GET", "/v1/tasks/task_nope", nil), 404, "not_found", nil)
		var same task
		alice.want(alice.do("GET", path+"?afterRevision=1&wait=50ms", nil), 200, "", &same)
		if same.Revision != 1 {
			t.Errorf("revision %d after a wait that ran out", same.Revision)
		}
		alice.want(alice.do("GET", path+"?afterRevision=-1", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", path+"?afterRevision=0&wait=soon", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", path+"/result?wait=0.05", nil), 202, "", nil)
		alice.want(alice.do("GET", path+"/result?wait=-1s", nil), 400, "invalid_request", nil)

		var page struct{ Items []task }
		alice.want(alice.do("GET", "/v1/tasks?sessionId="+ses.SessionID+"&status=working&kind=devbox&limit=10", nil), 200, "", &page)
		if len(page.Items) != 1 || page.Items[0].TaskID != tk.TaskID {
			t.Errorf("list: %+v", page.Items)
		}
		alice.want(alice.do("GET", "/v1/tasks?status=done", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", "/v1/tasks?limit=500", nil), 400, "invalid_request", nil)
		bob.want(bob.do("GET", "/v1/tasks?sessionId="+ses.SessionID, nil), 200, "", &page)
		if len(page.Items) != 0 {
			t.Errorf("bob lists %d of alice's tasks", len(page.Items))
		}
	})

	t.Run("long-poll wakes on progress", func(t *testing.T) {
		woke := make(chan reply, 1)
		go func() { woke <- alice.do("GET", path+"?afterRevision=1&wait=30s", nil) }()
		// The poll may start before or after the progress: either way it
		// answers revision 2 promptly.
		msg := "compiling"
		var after task
		alice.want(alice.do("POST", path+"/progress", map[string]any{"statusMessage": msg, "progress": map[string]any{"pct": 10}},
			"Idempotency-Key", "p-1"), 200, "", &after)
		select {
		case r := <-woke:
			var got task
			alice.want(r, 200, "", &got)
			if got.Revision < 2 {
				t.Errorf("woke with revision %d", got.Revision)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the long-poll did not wake")
		}
		r := alice.want(alice.do("POST", path+"/progress", map[string]any{"statusMessage": msg, "progress": map[string]any{"pct": 10}},
			"Idempotency-Key", "p-1"), 200, "", nil)
		if r.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("progress replay not marked")
		}
		alice.want(alice.do("POST", path+"/progress", map[string]any{"statusMessage": "other"}, "Idempotency-Key", "p-1"),
			409, "idempotency_conflict", nil)
		alice.want(alice.do("POST", path+"/progress", nil), 400, "invalid_request", nil)
		alice.want(alice.do("POST", path+"/progress", `{"progress":1,"extra":true}`), 400, "invalid_request", nil)
		bob.want(bob.do("POST", path+"/progress", map[string]any{"statusMessage": "x"}), 404, "not_found", nil)
	})

	t.Run("messages", func(t *testing.T) {
		alice.want(alice.do("POST", path+"/messages", map[string]any{"text": "halfway", "data": []int{1, 2}}), 200, "", nil)
		alice.want(alice.do("POST", path+"/messages", map[string]any{"data": 1}), 400, "invalid_request", nil)
	})

	t.Run("input", func(t *testing.T) {
		alice.want(alice.do("POST", path+"/input", map[string]any{"responses": []any{
			map[string]any{"requestId": "nobody", "optionId": "yes"}}}), 409, "not_input_required", nil)

		var asked task
		alice.want(alice.do("POST", path+"/input-requests", map[string]any{"requests": []any{
			map[string]any{"prompt": "Deploy?"},
			map[string]any{"requestId": "pick", "prompt": "Which?", "options": []any{
				map[string]any{"id": "a", "label": "A", "description": "first", "style": "primary"},
				map[string]any{"id": "b", "label": "B", "style": "danger"}}},
			map[string]any{"requestId": "why", "prompt": "Why?", "allowFreeform": true,
				"expiresAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
		}}), 200, "", &asked)
		if asked.Status != "input_required" || len(asked.InputRequests) != 3 {
			t.Fatalf("after asking: %+v", asked)
		}
		confirm := asked.InputRequests[0]
		if confirm.Display != "confirmation" || len(confirm.Options) != 2 || confirm.Options[0].ID != "yes" ||
			!strings.HasPrefix(confirm.RequestID, "req_") {
			t.Errorf("default confirmation: %+v", confirm)
		}
		alice.want(alice.do("POST", path+"/input-requests", map[string]any{"requests": []any{
			map[string]any{"requestId": "pick", "prompt": "Again?", "allowFreeform": true}}}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", path+"/input-requests", map[string]any{"requests": []any{}}), 400, "invalid_request", nil)
		// Only the service asks for a sign-in (POST .../authorizations).
		alice.want(alice.do("POST", path+"/input-requests", map[string]any{"requests": []any{
			map[string]any{"requestId": "login", "kind": "authorization", "prompt": "Sign in", "connection": "github"}}}),
			400, "invalid_request", nil)
		alice.want(alice.do("POST", path+"/input-requests", map[string]any{"requests": []any{
			map[string]any{"prompt": "x", "answerUrl": "https://example.com"}}}), 400, "invalid_request", nil)

		answer := func(c *caller, resps ...map[string]any) reply {
			items := make([]any, len(resps))
			for i, r := range resps {
				items[i] = r
			}
			return c.do("POST", path+"/input", map[string]any{"responses": items})
		}
		alice.want(answer(alice, map[string]any{"requestId": "ghost", "optionId": "a"}), 409, "unknown_request", nil)
		alice.want(answer(alice, map[string]any{"requestId": "pick", "optionId": "zzz"}), 400, "invalid_request", nil)
		alice.want(answer(alice, map[string]any{"requestId": "pick", "text": "free"}), 400, "invalid_request", nil)
		alice.want(answer(alice, map[string]any{"requestId": "pick"}), 400, "invalid_request", nil)
		var got task
		alice.want(answer(alice, map[string]any{"requestId": "pick", "optionId": "a"}), 200, "", &got)
		wantAnswered(t, got, 0, `{"requestId":"pick","optionId":"a","answeredBy":"alice","via":"api"}`)
		rev := got.Revision
		alice.want(answer(alice, map[string]any{"requestId": "pick", "optionId": "a"}), 200, "", &got)
		if got.Revision != rev {
			t.Errorf("a repeated answer changed the task: revision %d → %d", rev, got.Revision)
		}
		alice.want(answer(alice, map[string]any{"requestId": "pick", "optionId": "b"}), 409, "input_conflict", nil)
		bob.want(answer(bob, map[string]any{"requestId": "why", "text": "no"}), 404, "not_found", nil)
		alice.want(answer(alice,
			map[string]any{"requestId": confirm.RequestID, "optionId": "yes"},
			map[string]any{"requestId": "why", "text": "because"},
			map[string]any{"requestId": "why", "text": "twice"}), 400, "invalid_request", nil)
		alice.want(answer(alice, map[string]any{"requestId": "why", "action": "decline", "text": "no"}), 400, "invalid_request", nil)
		alice.want(answer(alice, map[string]any{"requestId": "why", "action": "maybe"}), 400, "invalid_request", nil)
		alice.want(answer(alice, map[string]any{"requestId": "why", "text": "x", "via": "slack"}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", path+"/input", map[string]any{"responses": []any{
			map[string]any{"requestId": "why", "text": "x"}}}, "X-Taskhook-Via", "slack"), 400, "invalid_request", nil)
		var left task // a fresh one: the answer omits inputRequests once none is open
		alice.want(alice.do("POST", path+"/input", map[string]any{"responses": []any{
			map[string]any{"requestId": confirm.RequestID, "optionId": "yes"},
			map[string]any{"requestId": "why", "action": "decline"}}}, "X-Taskhook-Via", "console"), 200, "", &left)
		if left.Status != "working" || len(left.InputRequests) != 0 {
			t.Errorf("no request should be left: %+v", left)
		}
		wantAnswered(t, left, 1, `{"requestId":"`+confirm.RequestID+`","optionId":"yes","answeredBy":"alice","via":"console"}`)
		wantAnswered(t, left, 2, `{"requestId":"why","action":"decline","answeredBy":"alice","via":"console"}`)
	})

	t.Run("requester", func(t *testing.T) {
		var tc task
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID, "requester": "carol"}), 403, "requester_not_allowed", nil)
		alice.want(aliceForCarol.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID, "requester": "carol"}), 201, "", &tc)
		cp := "/v1/tasks/" + tc.TaskID
		alice.want(alice.do("POST", cp+"/input-requests", map[string]any{"requests": []any{
			map[string]any{"requestId": "ok", "prompt": "OK?", "display": "confirmation"}}}), 200, "", nil)
		carol.want(carol.do("GET", cp, nil), 200, "", nil)
		carol.want(carol.do("GET", cp+"/events", nil), 200, "", nil)
		carol.want(carol.do("POST", cp+"/input", map[string]any{"responses": []any{
			map[string]any{"requestId": "ok", "optionId": "no"}}}), 200, "", nil)
		carol.want(carol.do("POST", cp+"/complete", map[string]any{"result": 1}), 404, "not_found", nil)
		var res task
		// The result is the owner's to collect: to the requester, the
		// route answers as for a missing task.
		carol.want(carol.do("GET", cp+"/result", nil), 404, "not_found", nil)
		alice.want(alice.do("GET", cp+"/result", nil), 202, "", &res)
		alice.want(alice.do("POST", cp+"/complete", `{"result":{"ok":true}}`), 200, "", nil)
		carol.want(carol.do("GET", cp+"/result?wait=1s", nil), 404, "not_found", nil)
		alice.want(alice.do("GET", cp+"/result?wait=1s", nil), 200, "", &res)
		if res.Status != "completed" {
			t.Errorf("result status %q", res.Status)
		}
	})

	t.Run("answer url", func(t *testing.T) {
		var ta, asked task
		alice.want(aliceForCarol.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID, "requester": "carol"}), 201, "", &ta)
		tp := "/v1/tasks/" + ta.TaskID
		alice.want(alice.do("POST", tp+"/input-requests", map[string]any{"requests": []any{
			map[string]any{"requestId": "go", "prompt": "Go?"},
			map[string]any{"requestId": "why", "prompt": "Why?", "allowFreeform": true},
		}}), 200, "", &asked)
		urls := map[string]string{}
		for _, q := range asked.InputRequests {
			if q.Kind == "ask" && !strings.HasPrefix(q.AnswerURL, srv.URL+"/v1/input/ans_") {
				t.Fatalf("answerUrl of %s: %q", q.RequestID, q.AnswerURL)
			}
			if q.Kind != "ask" && q.AnswerURL != "" {
				t.Errorf("an %s request has an answerUrl", q.Kind)
			}
			urls[q.RequestID] = strings.TrimPrefix(q.AnswerURL, srv.URL)
		}
		goURL, whyURL := urls["go"], urls["why"]
		anon.want(anon.do("POST", goURL, map[string]any{"optionId": "maybe"}), 400, "invalid_request", nil)
		anon.want(anon.do("POST", goURL, map[string]any{"text": "free"}), 400, "invalid_request", nil)
		anon.want(anon.do("POST", goURL, map[string]any{}), 400, "invalid_request", nil)
		anon.want(anon.do("POST", goURL, `{"optionId":"yes","requestId":"go"}`), 400, "invalid_request", nil)
		anon.want(anon.do("POST", goURL, `{"optionId":`), 400, "invalid_json", nil)
		anon.want(anon.do("POST", goURL, `{"text":"`+strings.Repeat("a", 1<<20)+`"}`), 413, "payload_too_large", nil)
		anon.want(anon.do("POST", "/v1/input/ans_nope", map[string]any{"optionId": "yes"}), 404, "not_found", nil)
		anon.want(anon.do("POST", goURL+"x", map[string]any{"optionId": "yes"}), 404, "not_found", nil)
		anon.want(anon.do("GET", goURL, nil), 200, "", nil) // shows the request, answers nothing
		anon.want(anon.do("DELETE", goURL, nil), 405, "method_not_allowed", nil)

		var ans struct {
			OK        bool   `json:"ok"`
			TaskID    string `json:"taskId"`
			RequestID string `json:"requestId"`
			Status    string `json:"status"`
		}
		first := anon.want(anon.do("POST", goURL, map[string]any{"optionId": "yes"}, "Idempotency-Key", "a-1"), 200, "", &ans)
		if !ans.OK || ans.TaskID != ta.TaskID || ans.RequestID != "go" || ans.Status != "input_required" {
			t.Errorf("answer: %+v", ans)
		}
		anon.wantReplay(first, goURL, map[string]any{"optionId": "yes"}, "a-1")
		anon.want(anon.do("POST", goURL, map[string]any{"optionId": "no"}, "Idempotency-Key", "a-1"), 409, "idempotency_conflict", nil)
		anon.want(anon.do("POST", goURL, map[string]any{"optionId": "yes"}), 410, "input_closed", nil)
		alice.want(alice.do("POST", tp+"/complete", nil), 200, "", nil)
		anon.want(anon.do("POST", whyURL, map[string]any{"text": "late"}), 410, "input_closed", nil)
	})

	t.Run("terminal", func(t *testing.T) {
		woke := make(chan reply, 1)
		go func() { woke <- alice.do("GET", path+"/result?wait=30s", nil) }()
		var done task
		alice.want(alice.do("POST", path+"/complete", map[string]any{"result": map[string]any{"artifact": "a.tgz"}}), 200, "", &done)
		if done.Status != "completed" || len(done.InputRequests) != 0 {
			t.Errorf("completed: %+v", done)
		}
		select {
		case r := <-woke:
			alice.want(r, 200, "", nil)
		case <-time.After(20 * time.Second):
			t.Fatal("the result long-poll did not wake")
		}
		alice.want(alice.do("POST", path+"/complete", map[string]any{"result": 2}), 409, "task_terminal", nil)
		alice.want(alice.do("POST", path+"/fail", map[string]any{"error": map[string]any{"message": "late"}}), 409, "task_terminal", nil)
		alice.want(alice.do("POST", path+"/progress", map[string]any{"statusMessage": "late"}), 409, "task_terminal", nil)
		alice.want(alice.do("POST", path+"/messages", map[string]any{"text": "late"}), 409, "task_terminal", nil)
		alice.want(alice.do("POST", path+"/input-requests", map[string]any{"requests": []any{
			map[string]any{"prompt": "late?"}}}), 409, "task_terminal", nil)
		alice.want(alice.do("POST", path+"/input", map[string]any{"responses": []any{
			map[string]any{"requestId": "login", "optionId": "x"}}}), 409, "task_terminal", nil)
		var same task
		alice.want(alice.do("POST", path+"/cancel", map[string]any{"reason": "too late"}), 200, "", &same)
		if same.Status != "completed" || same.Revision != done.Revision {
			t.Errorf("cancel of a completed task changed it: %+v", same)
		}
		alice.want(alice.do("GET", path+"/result", nil), 200, "", nil)

		var failed, cancelled, bare task
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 201, "", &failed)
		alice.want(alice.do("POST", "/v1/tasks/"+failed.TaskID+"/fail", map[string]any{}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/tasks/"+failed.TaskID+"/fail",
			map[string]any{"error": map[string]any{"message": "boom", "data": map[string]any{"exit": 2}}}), 200, "", &failed)
		alice.want(alice.do("GET", "/v1/tasks/"+failed.TaskID+"/result", nil), 200, "", nil)
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 201, "", &cancelled)
		alice.want(alice.do("POST", "/v1/tasks/"+cancelled.TaskID+"/cancel", map[string]any{"reason": "not needed"},
			"Idempotency-Key", "c-1"), 200, "", &cancelled)
		alice.want(alice.do("POST", "/v1/tasks/"+cancelled.TaskID+"/cancel", map[string]any{"reason": "other"},
			"Idempotency-Key", "c-1"), 409, "idempotency_conflict", nil)
		alice.want(alice.do("GET", "/v1/tasks/"+cancelled.TaskID+"/result", nil), 200, "", nil)
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID, "input": nil}), 201, "", &bare)
		alice.want(alice.do("POST", "/v1/tasks/"+bare.TaskID+"/cancel", nil), 200, "", &bare)
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 201, "", &bare)
		alice.want(alice.do("POST", "/v1/tasks/"+bare.TaskID+"/complete", nil), 200, "", &bare)
		bob.want(bob.do("POST", "/v1/tasks/"+bare.TaskID+"/cancel", nil), 404, "not_found", nil)
	})

	t.Run("events", func(t *testing.T) {
		var all eventPage
		alice.want(alice.do("GET", path+"/events?limit=1000", nil), 200, "", &all)
		seen := map[string]bool{}
		for _, e := range all.Events {
			seen[e.Type] = true
		}
		for _, typ := range []string{"task.created", "task.progress", "task.message", "task.status",
			"input.requested", "input.resolved", "task.terminal"} {
			if !seen[typ] {
				t.Errorf("the task log has no %s", typ)
			}
		}
		// Page through two at a time with the cursor.
		var n int
		after := ""
		for range 100 {
			var page eventPage
			alice.want(alice.do("GET", path+"/events?limit=2&after="+after, nil), 200, "", &page)
			n += len(page.Events)
			if len(page.Events) == 0 {
				if page.Cursor != after {
					t.Errorf("empty read moved the cursor: %q → %q", after, page.Cursor)
				}
				break
			}
			after = page.Cursor
		}
		if n != len(all.Events) {
			t.Errorf("paged %d events, want %d", n, len(all.Events))
		}
		var empty eventPage
		alice.want(alice.do("GET", path+"/events?after="+after+"&wait=50ms", nil), 200, "", &empty)
		alice.want(alice.do("GET", path+"/events?after=nope", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", path+"/events?limit=1001", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", path+"/events?wait=-1", nil), 400, "invalid_request", nil)
		bob.want(bob.do("GET", path+"/events", nil), 404, "not_found", nil)

		var sesLog eventPage
		alice.want(alice.do("GET", "/v1/sessions/"+ses.SessionID+"/events?after=0", nil), 200, "", &sesLog)
		if len(sesLog.Events) == 0 || sesLog.Events[0].Type != "session.created" {
			t.Errorf("the session log does not start with session.created: %+v", sesLog.Events)
		}
		woke := make(chan reply, 1)
		go func() {
			woke <- alice.do("GET", "/v1/sessions/"+other.SessionID+"/events?after="+"9999999999999-0"+"&wait=100ms", nil)
		}()
		alice.want(<-woke, 200, "", nil)
		alice.want(alice.do("GET", "/v1/sessions/"+ses.SessionID+"/events?limit=0", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", "/v1/sessions/"+ses.SessionID+"/events?after=1-x", nil), 400, "invalid_request", nil)
		bob.want(bob.do("GET", "/v1/sessions/"+ses.SessionID+"/events", nil), 404, "not_found", nil)
	})
}

// TestContractStoreUnavailable checks the 503 answers against the document:
// a server whose Redis does not answer.
func TestContractStoreUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close() // nothing listens there now: every connection is refused
	// go-redis logs every refused dial; this test expects them all.
	redis.SetLogger(quietRedis{})
	t.Cleanup(func() { redis.SetLogger(stderrRedis{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)}) })
	srv := apptest.Start(t, store.Config{URL: "redis://" + dead + "/0", Prefix: storetest.Prefix()}, app.Config{})
	c := newCaller(t, srv.URL, apptest.Token(t, "alice"))

	const sid = "ses_00aaaaaaaaaaaaaaaaaaaaaaaaaa"
	const tid = "task_00aaaaaaaaaaaaaaaaaaaaaaaaaa"
	const hid = "hook_00aaaaaaaaaaaaaaaaaaaaaaaaaa"
	const token = "whk_00aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" // well formed: the lookup reaches the store
	calls := []struct {
		method, path string
		body         any
	}{
		{"GET", "/readyz", nil},
		{"POST", "/v1/sessions", nil},
		{"GET", "/v1/sessions", nil},
		{"GET", "/v1/sessions/" + sid, nil},
		{"GET", "/v1/sessions/" + sid + "/events", nil},
		{"POST", "/v1/tasks", map[string]any{"sessionId": sid}},
		{"GET", "/v1/tasks", nil},
		{"GET", "/v1/tasks/" + tid, nil},
		{"GET", "/v1/tasks/" + tid + "/result", nil},
		{"GET", "/v1/tasks/" + tid + "/events", nil},
		{"POST", "/v1/tasks/" + tid + "/progress", map[string]any{"statusMessage": "x"}},
		{"POST", "/v1/tasks/" + tid + "/messages", map[string]any{"text": "x"}},
		{"POST", "/v1/tasks/" + tid + "/input-requests", map[string]any{"requests": []any{map[string]any{"prompt": "x"}}}},
		{"POST", "/v1/tasks/" + tid + "/input", map[string]any{"responses": []any{map[string]any{"requestId": "r", "optionId": "yes"}}}},
		{"POST", "/v1/tasks/" + tid + "/complete", nil},
		{"POST", "/v1/tasks/" + tid + "/fail", map[string]any{"error": map[string]any{"message": "x"}}},
		{"POST", "/v1/tasks/" + tid + "/cancel", nil},
		{"POST", "/v1/sessions/" + sid + "/cancel", nil},
		{"POST", "/v1/sessions/" + sid + "/reset", nil},
		{"POST", "/v1/hooks", map[string]any{"taskId": tid}},
		{"GET", "/v1/hooks", nil},
		{"GET", "/v1/hooks/" + hid, nil},
		{"POST", "/v1/hooks/" + hid + "/close", nil},
		{"GET", "/v1/hooks/" + hid + "/events", nil},
		{"POST", "/v1/hooks/" + hid + "/ack", map[string]any{"eventIds": []string{"1-0"}}},
		{"GET", "/v1/hooks/" + hid + "/log", nil},
		{"POST", "/v1/callback/" + token, "payload"},
	}
	for _, call := range calls {
		r := c.do(call.method, call.path, call.body)
		if r.status != http.StatusServiceUnavailable {
			t.Errorf("%s %s: status %d, want 503: %s", call.method, call.path, r.status, r.body)
			continue
		}
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s %s: 503 without Retry-After", call.method, call.path)
		}
	}
	// A stream checks access before it starts: a JSON 503.
	for _, path := range []string{"/v1/tasks/" + tid + "/events", "/v1/sessions/" + sid + "/events"} {
		r := c.do("GET", path, nil, "Accept", "text/event-stream")
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
			t.Errorf("GET %s as a stream: %d %s", path, r.status, r.body)
		}
	}
	// What needs no store still answers.
	c.want(c.do("GET", "/healthz", nil), 200, "", nil)
	c.want(c.do("GET", "/v1/info", nil), 200, "", nil)
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

type stderrRedis struct{ l *log.Logger }

func (s stderrRedis) Printf(_ context.Context, format string, v ...any) { s.l.Printf(format, v...) }
