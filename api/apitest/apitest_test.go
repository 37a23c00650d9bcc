package apitest_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/apitest"
)

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) reports() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

const (
	sessionID = "ses_00aaaaaaaaaaaaaaaaaaaaaaaaaa"
	taskID    = "task_00aaaaaaaaaaaaaaaaaaaaaaaaaa"
	stream    = "id: 1-0\nevent: task.created\ndata: {\"not\":\"an event\"}\n\n: heartbeat\n\n"
	secret    = "Bearer very-secret-token"
	session   = `{"sessionId":"` + sessionID + `","status":"active","owner":"alice",` +
		`"createdAt":"2025-01-01T00:00:00.000Z","lastUpdatedAt":"2025-01-01T00:00:00.000Z","metadata":{},"notify":[]}`
)

// TestTransport runs canned exchanges through the transport and checks what
// it reports.
func TestTransport(t *testing.T) {
	cases := []struct {
		name    string
		method  string
		path    string
		body    string
		status  int
		header  map[string]string
		answer  string
		reports []string // substrings, one per expected report; none means clean
	}{
		{name: "valid session", method: "POST", path: "/v1/sessions", body: `{"metadata":{"a":1}}`,
			status: 201, answer: session},
		{name: "replayed session", method: "POST", path: "/v1/sessions", body: `{}`,
			status: 201, header: map[string]string{"Idempotent-Replayed": "true"}, answer: session},
		{name: "no X-Request-Id", method: "GET", path: "/v1/sessions/" + sessionID,
			status: 200, header: map[string]string{"X-Request-Id": ""}, answer: session,
			reports: []string{"GET /v1/sessions/{sessionId} → 200", "X-Request-Id"}},
		{name: "undocumented field", method: "GET", path: "/v1/sessions/" + sessionID,
			status: 200, answer: strings.Replace(session, `"notify":[]`, `"notify":[],"extra":1`, 1),
			reports: []string{"GET /v1/sessions/{sessionId} → 200: the response does not match"}},
		{name: "undocumented status", method: "GET", path: "/v1/sessions/" + sessionID,
			status: http.StatusTeapot, answer: `{"error":{"code":"internal","message":"x","errorId":"err_0123456789abcdef"}}`,
			reports: []string{"→ 418"}},
		{name: "undocumented error code", method: "GET", path: "/v1/sessions/" + sessionID,
			status: 404, answer: `{"error":{"code":"gone","message":"x"}}`,
			reports: []string{"→ 404: the response does not match"}},
		{name: "503 without Retry-After", method: "GET", path: "/v1/sessions/" + sessionID,
			status: 503, answer: `{"error":{"code":"store_unavailable","message":"x"}}`,
			reports: []string{"Retry-After"}},
		{name: "bad request refused", method: "POST", path: "/v1/sessions", body: `{"surprise":1}`,
			status: 400, answer: `{"error":{"code":"invalid_request","message":"x","details":[{"field":"surprise","message":"is not a known field"}]}}`},
		{name: "bad request accepted", method: "POST", path: "/v1/sessions", body: `{"surprise":1}`,
			status: 201, answer: session,
			reports: []string{"POST /v1/sessions → 201: the server accepted a request the document refuses"}},
		{name: "unknown path refused", method: "GET", path: "/v1/nothing",
			status: 404, answer: `{"error":{"code":"not_found","message":"no such resource"}}`},
		{name: "unknown method refused", method: "DELETE", path: "/v1/sessions",
			status: 405, answer: `{"error":{"code":"method_not_allowed","message":"no"}}`},
		{name: "unknown path served", method: "GET", path: "/v1/nothing",
			status: 200, answer: `{}`, reports: []string{"no operation in the document"}},
		{name: "unknown path with a bad error", method: "GET", path: "/v1/nothing",
			status: 404, answer: `{"oops":true}`, reports: []string{"not an Error"}},
		{name: "metrics text", method: "GET", path: "/metrics",
			status: 200, header: map[string]string{"Content-Type": "text/plain; version=0.0.4"}, answer: "# TYPE x counter\nx 1\n"},
		// A stream's body is not JSON and is not read; its status and
		// headers are still checked.
		{name: "event stream", method: "GET", path: "/v1/tasks/" + taskID + "/events",
			status: 200, header: map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, answer: stream},
		{name: "event stream without X-Request-Id", method: "GET", path: "/v1/tasks/" + taskID + "/events",
			status: 200, header: map[string]string{"Content-Type": "text/event-stream", "X-Request-Id": ""}, answer: stream,
			reports: []string{"GET /v1/tasks/{taskId}/events → 200", "X-Request-Id"}},
		{name: "event stream where none is documented", method: "GET", path: "/v1/sessions/" + sessionID,
			status: 200, header: map[string]string{"Content-Type": "text/event-stream"}, answer: stream,
			reports: []string{"GET /v1/sessions/{sessionId} → 200", `"text/event-stream"`}},
		{name: "event stream with an undocumented status", method: "GET", path: "/v1/tasks/" + taskID + "/events",
			status: http.StatusAccepted, header: map[string]string{"Content-Type": "text/event-stream"}, answer: stream,
			reports: []string{"→ 202"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var gotBody string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				gotBody = string(b)
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				w.Header().Set("X-Request-Id", "rq_1")
				for k, v := range tc.header {
					if v == "" {
						w.Header().Del(k)
					} else {
						w.Header().Set(k, v)
					}
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.answer)
			}))
			defer srv.Close()

			rec := &recorder{TB: t}
			client := &http.Client{Transport: apitest.Transport(rec, nil)}
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", secret)
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.answer || resp.StatusCode != tc.status {
				t.Errorf("the caller got %d %q, want %d %q", resp.StatusCode, got, tc.status, tc.answer)
			}
			if gotBody != tc.body {
				t.Errorf("the server got %q, want %q", gotBody, tc.body)
			}

			reports := rec.reports()
			for _, r := range reports {
				if strings.Contains(r, "very-secret-token") {
					t.Errorf("a report shows the Authorization header: %s", r)
				}
			}
			if len(tc.reports) == 0 && len(reports) > 0 {
				t.Errorf("unexpected reports:\n%s", strings.Join(reports, "\n"))
			}
			all := strings.Join(reports, "\n")
			for _, want := range tc.reports {
				if !strings.Contains(all, want) {
					t.Errorf("no report mentions %q; reports:\n%s", want, all)
				}
			}
		})
	}
}

// TestTransportHandsStreamsOver: a stream reaches the caller as it is
// written, not when it ends.
func TestTransportHandsStreamsOver(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Request-Id", "rq_1")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "id: 1-0\nevent: task.created\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		select { // the stream stays open until the caller leaves
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	rec := &recorder{TB: t}
	client := &http.Client{Transport: apitest.Transport(rec, nil)}
	first := make(chan string, 1)
	go func() {
		req, err := http.NewRequest("GET", srv.URL+"/v1/tasks/"+taskID+"/events", nil)
		if err != nil {
			first <- err.Error()
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			first <- err.Error()
			return
		}
		defer resp.Body.Close()
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil {
			first <- err.Error()
			return
		}
		first <- line
	}()
	select {
	case line := <-first:
		if line != "id: 1-0\n" {
			t.Errorf("first line %q", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not reach the caller while it was open")
	}
	if r := rec.reports(); len(r) > 0 {
		t.Errorf("unexpected reports:\n%s", strings.Join(r, "\n"))
	}
}

// TestEventReader: blocks up to their blank lines, comments among them,
// empty blocks passed over, NextData past the comments, io.EOF at the end,
// and a line of no field of the format reported.
func TestEventReader(t *testing.T) {
	rec := &recorder{TB: t}
	r := apitest.NewEventReader(rec, strings.NewReader(stream+"\n\n:\n\n: heartbeat\n\ndata: {\"a\":1}\n\nretry: 5\n\n"))
	ev, err := r.Next()
	if err != nil || ev != (apitest.Event{ID: "1-0", Event: "task.created", Data: `{"not":"an event"}`}) {
		t.Fatalf("the first block: %+v %v", ev, err)
	}
	if ev, err := r.Next(); err != nil || ev != (apitest.Event{Comment: "heartbeat"}) {
		t.Fatalf("the heartbeat: %+v %v", ev, err)
	}
	if data, err := r.NextData(); err != nil || data != `{"a":1}` {
		t.Fatalf("the data after a heartbeat: %q %v", data, err)
	}
	if ev, err := r.Next(); err != io.EOF || ev != (apitest.Event{}) {
		t.Errorf("the end: %+v %v", ev, err)
	}
	if r := rec.reports(); len(r) != 1 || r[0] != `unexpected stream line "retry: 5"` {
		t.Errorf("reports: %q", r)
	}
}
