package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
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

func TestErrorsDecode(t *testing.T) {
	eachTask(t, app.Config{}, func(t *testing.T, ctx context.Context, e *env, task *client.Task) {
		c := e.alice
		id := task.TaskID

		// Missing, and somebody else's: the same 404.
		var meta client.Response
		_, err := c.GetTask(ctx, "task_nope", client.WithRequestID("rq-client-test-1"), client.WithResponse(&meta))
		missing := wantCode(t, err, http.StatusNotFound, client.CodeNotFound)
		if missing.RequestID != "rq-client-test-1" || meta.Status != http.StatusNotFound || meta.RequestID != "rq-client-test-1" {
			t.Errorf("request id: error %q, response %+v", missing.RequestID, meta)
		}
		_, err = e.bob.GetTask(ctx, id)
		if other := wantCode(t, err, http.StatusNotFound, client.CodeNotFound); other.Message != missing.Message {
			t.Errorf("somebody else's task says %q, a missing one %q", other.Message, missing.Message)
		}
		_, err = e.bob.Cancel(ctx, id, "not mine")
		wantCode(t, err, http.StatusNotFound, client.CodeNotFound)
		_, err = e.bob.CreateTask(ctx, client.CreateTaskInput{SessionID: task.SessionID})
		wantCode(t, err, http.StatusNotFound, client.CodeNotFound)
		// Path segments are escaped: an id cannot reach another route.
		_, err = c.GetTask(ctx, id+"/result?wait=1s")
		wantCode(t, err, http.StatusNotFound, client.CodeNotFound)

		// Validation, with the field at fault.
		_, err = c.CreateTask(ctx, client.CreateTaskInput{SessionID: task.SessionID, TTLMs: client.Int64(5)})
		ve := wantCode(t, err, http.StatusBadRequest, client.CodeInvalidRequest)
		if len(ve.Details) != 1 || ve.Details[0].Field != "ttlMs" || ve.Details[0].Message == "" {
			t.Errorf("details %+v", ve.Details)
		}
		_, err = c.Progress(ctx, id, client.ProgressInput{})
		wantCode(t, err, http.StatusBadRequest, client.CodeInvalidRequest)
		_, err = c.ListTasks(ctx, client.ListTasksParams{Cursor: "not a cursor"})
		if ce := wantCode(t, err, http.StatusBadRequest, client.CodeInvalidRequest); len(ce.Details) != 1 || ce.Details[0].Field != "cursor" {
			t.Errorf("cursor details %+v", ce.Details)
		}

		// State refusals carry the task as it is.
		_, err = c.Respond(ctx, id, []client.Answer{{RequestID: "q1", OptionID: "yes"}})
		if se := wantCode(t, err, http.StatusConflict, client.CodeNotInputRequired); se.Task == nil || se.Task.Status != client.StatusWorking {
			t.Errorf("not_input_required task %+v", se.Task)
		}
		if _, err := c.RequireInput(ctx, id, []client.InputRequest{{RequestID: "q1", Prompt: "Go?", Display: client.DisplayConfirmation}}); err != nil {
			t.Fatalf("RequireInput: %v", err)
		}
		_, err = c.Respond(ctx, id, []client.Answer{{RequestID: "q2", OptionID: "yes"}})
		wantCode(t, err, http.StatusConflict, client.CodeUnknownRequest)
		_, err = c.Respond(ctx, id, []client.Answer{{RequestID: "q1", Text: "free text"}})
		if ve := wantCode(t, err, http.StatusBadRequest, client.CodeInvalidRequest); len(ve.Details) != 1 {
			t.Errorf("details %+v", ve.Details)
		}
		if _, err := c.Respond(ctx, id, []client.Answer{{RequestID: "q1", OptionID: "yes"}}); err != nil {
			t.Fatalf("Respond: %v", err)
		}
		_, err = c.Respond(ctx, id, []client.Answer{{RequestID: "q1", OptionID: "no"}})
		wantCode(t, err, http.StatusConflict, client.CodeInputConflict)

		failed, err := c.Fail(ctx, id, "disk full", map[string]int{"free": 0})
		if err != nil || failed.Status != client.StatusFailed || failed.Error == nil || failed.Error.Message != "disk full" ||
			!jsonEqual(t, failed.Error.Data, `{"free":0}`) {
			t.Fatalf("Fail: %+v, %v", failed, err)
		}
		_, err = c.Complete(ctx, id, "late")
		te := wantCode(t, err, http.StatusConflict, client.CodeTaskTerminal)
		if te.Task == nil || te.Task.Status != client.StatusFailed || te.Task.Revision != failed.Revision {
			t.Errorf("task_terminal task %+v", te.Task)
		}
		// Cancelling a finished task is a read.
		if got, err := c.Cancel(ctx, id, ""); err != nil || got.Status != client.StatusFailed || got.Revision != failed.Revision {
			t.Errorf("Cancel of a failed task: %+v, %v", got, err)
		}

		cancelled, err := c.Cancel(ctx, newTask(t, ctx, c).TaskID, "user left")
		if err != nil || cancelled.Status != client.StatusCancelled || cancelled.CancelReason != "user left" {
			t.Errorf("Cancel: %+v, %v", cancelled, err)
		}

		// No token, a bad token: 401, and the token stays out of the error.
		_, err = c.WithToken("").GetTask(ctx, id)
		wantCode(t, err, http.StatusUnauthorized, client.CodeUnauthorized)
		bad := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtYWxsb3J5In0.c2VjcmV0LXNpZ25hdHVyZQ"
		_, err = c.WithToken(bad).Info(ctx)
		wantCode(t, err, http.StatusUnauthorized, client.CodeUnauthorized)
		if strings.Contains(err.Error(), bad) || strings.Contains(fmt.Sprintf("%+v", err), bad) {
			t.Errorf("the error shows the token: %v", err)
		}
	})
}

func TestInfoAndReady(t *testing.T) {
	t.Parallel()
	eachStore(t, app.Config{}, func(t *testing.T, e *env) {
		wantStore := "redis"
		switch {
		case e.srv.Store.URL == "":
			wantStore = "embedded"
		case e.srv.Store.Cluster:
			wantStore = "redis-cluster"
		}
		ctx := testContext(t)
		if err := e.alice.Ready(ctx); err != nil {
			t.Fatalf("Ready: %v", err)
		}
		info, err := e.alice.Info(ctx)
		if err != nil {
			t.Fatalf("Info: %v", err)
		}
		if info.Name != "taskhook" || info.Store != wantStore || info.Partitions < 1 ||
			!slices.Contains(info.Capabilities, "tasks") || info.Version == "" {
			t.Errorf("info %+v", info)
		}
	})
}

// A server whose Redis does not answer is up but not ready: 503
// store_unavailable with Retry-After, for readiness and for the API.
func TestReadyWithoutRedis(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	srv := apptest.Start(t, store.Config{URL: "redis://" + dead + "/0", Prefix: storetest.Prefix()}, withTestDefaults(app.Config{}))
	c := newClient(t, srv.URL, apptest.Token(t, "alice"))
	ctx := testContext(t)

	err = c.Ready(ctx)
	e := wantCode(t, err, http.StatusServiceUnavailable, client.CodeStoreUnavailable)
	if e.RetryAfter <= 0 || e.RetryAfter > time.Minute {
		t.Errorf("RetryAfter %v", e.RetryAfter)
	}
	if strings.Contains(e.Message, dead) || strings.Contains(e.Message, "dial") {
		t.Errorf("the error shows a Redis error: %q", e.Message)
	}
	_, err = c.CreateSession(ctx, client.CreateSessionInput{})
	wantCode(t, err, http.StatusServiceUnavailable, client.CodeStoreUnavailable)
	var ce *client.Error
	if !errors.As(fmt.Errorf("wrapped: %w", err), &ce) || !client.IsCode(fmt.Errorf("wrapped: %w", err), client.CodeStoreUnavailable) {
		t.Errorf("IsCode does not see through wrapping")
	}
}
