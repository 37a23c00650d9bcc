package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/client"
)

// recorder is a stand-in server that records the last request and answers
// with a canned reply.
type recorder struct {
	mu      sync.Mutex
	method  string
	uri     string
	body    string
	header  http.Header
	status  int
	reply   string
	headers map[string]string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.method, r.uri, r.body, r.header = req.Method, req.URL.RequestURI(), string(b), req.Header.Clone()
	for k, v := range r.headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(r.status)
	_, _ = io.WriteString(w, r.reply)
}

func newRecorder(t *testing.T, status int, reply string) (*recorder, *client.Client) {
	rec := &recorder{status: status, reply: reply}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return rec, client.New(srv.URL+"/", "tok-secret-123")
}

// TestRequestsOnTheWire checks what each call sends: method, path and query,
// and a body the server's strict decoder accepts.
func TestRequestsOnTheWire(t *testing.T) {
	t.Parallel()
	rec, c := newRecorder(t, http.StatusOK, `{}`)
	ctx := context.Background()
	cases := []struct {
		name              string
		call              func() error
		method, uri, body string
	}{
		{"create session", func() error { _, err := c.CreateSession(ctx, client.CreateSessionInput{}); return err },
			"POST", "/v1/sessions", `{}`},
		{"list sessions", func() error {
			_, err := c.ListSessions(ctx, client.ListSessionsParams{Status: "active", Limit: 5, Cursor: "a+b/c"})
			return err
		}, "GET", "/v1/sessions?cursor=a%2Bb%2Fc&limit=5&status=active", ``},
		{"session events", func() error {
			_, err := c.SessionEvents(ctx, "ses/1", client.EventsParams{After: "1-0", Limit: 10, Wait: 30 * time.Second})
			return err
		}, "GET", "/v1/sessions/ses%2F1/events?after=1-0&limit=10&wait=30s", ``},
		{"create task", func() error {
			_, err := c.CreateTask(ctx, client.CreateTaskInput{SessionID: "ses_1", TTLMs: client.Int64(5000)})
			return err
		}, "POST", "/v1/tasks", `{"sessionId":"ses_1","ttlMs":5000}`},
		{"get task", func() error { _, err := c.GetTask(ctx, "a b?c"); return err },
			"GET", "/v1/tasks/a%20b%3Fc", ``},
		{"dot segment", func() error { _, err := c.Cancel(ctx, "..", ""); return err },
			"POST", "/v1/tasks/%2E%2E/cancel", `{}`},
		{"wait task", func() error { _, err := c.WaitTask(ctx, "t1", 7, 1500*time.Millisecond); return err },
			"GET", "/v1/tasks/t1?afterRevision=7&wait=1.5s", ``},
		{"wait task without wait", func() error { _, err := c.WaitTask(ctx, "t1", 0, 0); return err },
			"GET", "/v1/tasks/t1?afterRevision=0", ``},
		{"result", func() error { _, _, err := c.Result(ctx, "t1", time.Minute); return err },
			"GET", "/v1/tasks/t1/result?wait=1m0s", ``},
		{"list tasks", func() error {
			_, err := c.ListTasks(ctx, client.ListTasksParams{SessionID: "s", Status: "working", Kind: "k&x"})
			return err
		}, "GET", "/v1/tasks?kind=k%26x&sessionId=s&status=working", ``},
		{"task events", func() error { _, err := c.TaskEvents(ctx, "t1", client.EventsParams{}); return err },
			"GET", "/v1/tasks/t1/events", ``},
		{"progress", func() error {
			_, err := c.Progress(ctx, "t1", client.ProgressInput{StatusMessage: client.String("")})
			return err
		}, "POST", "/v1/tasks/t1/progress", `{"statusMessage":""}`},
		{"message", func() error { _, err := c.Message(ctx, "t1", "hi", nil); return err },
			"POST", "/v1/tasks/t1/messages", `{"text":"hi"}`},
		{"require input", func() error {
			_, err := c.RequireInput(ctx, "t1", []client.InputRequest{{
				Prompt: "Go?", Options: []client.Choice{{ID: "y", Label: "Yes"}},
				AnswerURL: "https://x/v1/input/tok", AuthorizationURL: "https://provider/authorize",
			}})
			return err
		}, "POST", "/v1/tasks/t1/input-requests", `{"requests":[{"prompt":"Go?","options":[{"id":"y","label":"Yes"}]}]}`},
		{"respond", func() error {
			_, err := c.Respond(ctx, "t1", []client.Answer{{RequestID: "r", OptionID: "y"}})
			return err
		}, "POST", "/v1/tasks/t1/input", `{"responses":[{"requestId":"r","optionId":"y"}]}`},
		{"complete without result", func() error { _, err := c.Complete(ctx, "t1", nil); return err },
			"POST", "/v1/tasks/t1/complete", `{}`},
		{"complete", func() error { _, err := c.Complete(ctx, "t1", json.RawMessage(`[1,2]`)); return err },
			"POST", "/v1/tasks/t1/complete", `{"result":[1,2]}`},
		{"fail", func() error { _, err := c.Fail(ctx, "t1", "boom", nil); return err },
			"POST", "/v1/tasks/t1/fail", `{"error":{"message":"boom"}}`},
		{"cancel", func() error { _, err := c.Cancel(ctx, "t1", ""); return err },
			"POST", "/v1/tasks/t1/cancel", `{}`},
		{"info", func() error { _, err := c.Info(ctx); return err }, "GET", "/v1/info", ``},
		{"ready", func() error { return c.Ready(ctx) }, "GET", "/readyz", ``},
	}
	for _, tc := range cases {
		if err := tc.call(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		rec.mu.Lock()
		if rec.method != tc.method || rec.uri != tc.uri || rec.body != tc.body {
			t.Errorf("%s: sent %s %s %q, want %s %s %q", tc.name, rec.method, rec.uri, rec.body, tc.method, tc.uri, tc.body)
		}
		if got := rec.header.Get("Authorization"); got != "Bearer tok-secret-123" {
			t.Errorf("%s: Authorization %q", tc.name, got)
		}
		rec.mu.Unlock()
	}

	// Per-call headers.
	if _, err := c.Cancel(ctx, "t1", "x", client.WithIdempotencyKey("k1"), client.WithRequestID("r1")); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.header.Get("Idempotency-Key") != "k1" || rec.header.Get("X-Request-Id") != "r1" ||
		rec.header.Get("Content-Type") != "application/json" || rec.body != `{"reason":"x"}` {
		t.Errorf("headers %v, body %q", rec.header, rec.body)
	}
}

func TestErrorAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("rate limited", func(t *testing.T) {
		t.Parallel()
		rec, c := newRecorder(t, http.StatusTooManyRequests, `{"error":{"code":"rate_limited","message":"slow down"}}`)
		rec.headers = map[string]string{"Retry-After": "7", "X-Request-Id": "rq1"}
		_, err := c.GetTask(ctx, "t1")
		e := asError(t, err)
		if e.Code != client.CodeRateLimited || e.RetryAfter != 7*time.Second || e.RequestID != "rq1" || e.Message != "slow down" {
			t.Errorf("error %+v", e)
		}
		if got := e.Error(); !strings.Contains(got, "rate_limited") || !strings.Contains(got, "slow down") || !strings.Contains(got, "429") {
			t.Errorf("Error() = %q", got)
		}
	})
	t.Run("retry after a date", func(t *testing.T) {
		t.Parallel()
		rec, c := newRecorder(t, http.StatusServiceUnavailable, `{"error":{"code":"store_unavailable","message":"later"}}`)
		rec.headers = map[string]string{"Retry-After": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}
		err := c.Ready(ctx)
		if e := asError(t, err); e.RetryAfter < 58*time.Minute || e.RetryAfter > time.Hour {
			t.Errorf("RetryAfter %v", e.RetryAfter)
		}
	})
	t.Run("internal", func(t *testing.T) {
		t.Parallel()
		_, c := newRecorder(t, http.StatusInternalServerError, `{"error":{"code":"internal","message":"internal error","errorId":"err_1"}}`)
		_, err := c.Info(ctx)
		if e := asError(t, err); e.ErrorID != "err_1" || !strings.Contains(e.Error(), "err_1") {
			t.Errorf("error %+v", e)
		}
	})
	t.Run("not a taskhook body", func(t *testing.T) {
		t.Parallel()
		_, c := newRecorder(t, http.StatusBadGateway, "<html>\n<body>bad gateway for Bearer tok-secret-123</body></html>")
		_, err := c.Info(ctx)
		e := asError(t, err)
		if e.Status != http.StatusBadGateway || e.Code != "" || !strings.Contains(e.Message, "bad gateway") {
			t.Errorf("error %+v", e)
		}
		if strings.Contains(err.Error(), "tok-secret-123") {
			t.Errorf("the error shows the token: %v", err)
		}
	})
	t.Run("undecodable success", func(t *testing.T) {
		t.Parallel()
		_, c := newRecorder(t, http.StatusOK, `{"taskId": 5}`)
		_, err := c.GetTask(ctx, "t1")
		if err == nil || client.IsCode(err, client.CodeInternal) {
			t.Errorf("err %v", err)
		}
	})
}
