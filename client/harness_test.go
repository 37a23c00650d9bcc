package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// env is one real server and clients of two principals.
type env struct {
	srv   *apptest.Server
	url   string
	alice *client.Client
	bob   *client.Client
}

// eachStore runs fn, in parallel, against a real server on every store
// backend (embedded, standalone Redis, and Redis Cluster when configured).
func eachStore(t *testing.T, cfg app.Config, fn func(t *testing.T, e *env)) {
	t.Helper()
	apptest.EachBackend(t, withTestDefaults(cfg), func(t *testing.T, srv *apptest.Server) {
		fn(t, newEnv(t, srv))
	})
}

// eachTask runs the test in parallel with the others and fn like
// eachStore, with a test context and a task of alice's that fn has to
// itself.
func eachTask(t *testing.T, cfg app.Config, fn func(t *testing.T, ctx context.Context, e *env, task *client.Task)) {
	t.Helper()
	t.Parallel()
	eachStore(t, cfg, func(t *testing.T, e *env) {
		ctx := testContext(t)
		fn(t, ctx, e, newTask(t, ctx, e.alice))
	})
}

// withTestDefaults shortens the fan-in readers' blocking read: a server's
// Stop waits for it to return (see the report on shutdown).
func withTestDefaults(cfg app.Config) app.Config {
	if cfg.WakeBlock == 0 {
		cfg.WakeBlock = 500 * time.Millisecond
	}
	return cfg
}

func newEnv(t *testing.T, srv *apptest.Server) *env {
	alice := newClient(t, srv.URL, apptest.Token(t, "alice"))
	return &env{srv: srv, url: srv.URL, alice: alice, bob: alice.WithToken(apptest.Token(t, "bob"))}
}

// newClient is a client whose transport checks every exchange against the
// contract's conventions.
func newClient(t *testing.T, url, token string, opts ...client.Option) *client.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &checkingTransport{t: t, next: tr}}
	return client.New(url, token, append([]client.Option{client.WithHTTPClient(hc)}, opts...)...)
}

// checkingTransport fails the test when a request body is not one JSON
// object, sends a field only the server fills, or when an answer lacks
// X-Request-Id or the JSON content type.
type checkingTransport struct {
	t    testing.TB
	next http.RoundTripper
}

func (c *checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		body, _ := io.ReadAll(rc)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
			c.t.Errorf("%s %s: body %q is not a JSON object", req.Method, req.URL.Path, body)
		}
		for _, f := range []string{`"answerUrl"`, `"authorizationUrl"`} {
			if bytes.Contains(body, []byte(f)) {
				c.t.Errorf("%s %s: body sends %s, which the server fills: %s", req.Method, req.URL.Path, f, body)
			}
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/json" {
			c.t.Errorf("%s %s: Content-Type %q", req.Method, req.URL.Path, ct)
		}
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	got := resp.Header.Get("X-Request-Id")
	if got == "" {
		c.t.Errorf("%s %s: answer %d has no X-Request-Id", req.Method, req.URL.Path, resp.StatusCode)
	}
	if sent := req.Header.Get("X-Request-Id"); sent != "" && got != sent {
		c.t.Errorf("%s %s: X-Request-Id %q, sent %q", req.Method, req.URL.Path, got, sent)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.t.Errorf("%s %s: answer %d has Content-Type %q", req.Method, req.URL.Path, resp.StatusCode, ct)
	}
	return resp, nil
}

// testContext ends with the test, and in any case after a minute.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newTask opens a session and starts a task in it.
func newTask(t *testing.T, ctx context.Context, c *client.Client) *client.Task {
	t.Helper()
	_, task := apptest.SessionWithTask(t, ctx, c, client.CreateTaskInput{Kind: "test"})
	return task
}

// sessionWithTasks opens a session and starts n tasks in it; ids are the
// tasks', in the order they started.
func sessionWithTasks(t *testing.T, ctx context.Context, c *client.Client, n int) (*client.Session, []string) {
	t.Helper()
	ses := apptest.Session(t, ctx, c)
	return ses, apptest.StartTasks(t, ctx, c, ses.SessionID, n)
}

// asError is err as an *Error, or a fatal failure.
func asError(t *testing.T, err error) *client.Error {
	t.Helper()
	if err == nil {
		t.Fatal("got no error, want an *client.Error")
	}
	e, ok := err.(*client.Error)
	if !ok {
		t.Fatalf("error %v (%T) is not a *client.Error", err, err)
	}
	return e
}

// wantCode checks err is an *Error with the status and code.
func wantCode(t *testing.T, err error, status int, code string) *client.Error {
	t.Helper()
	e := asError(t, err)
	if e.Status != status || e.Code != code || !client.IsCode(err, code) {
		t.Fatalf("error %v: got status %d code %q, want %d %q", err, e.Status, e.Code, status, code)
	}
	if e.Message == "" {
		t.Errorf("error %v has no message", err)
	}
	return e
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("decode %q: %v", got, err)
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("decode %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}
