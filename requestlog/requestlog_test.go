package requestlog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/requestid"
)

// observed serves one request to h through an Observer, under chi at
// pattern, and returns the answer and the log lines.
func observed(t *testing.T, m *metrics.Metrics, pattern string, h http.HandlerFunc, path string) (*httptest.ResponseRecorder, []map[string]any) {
	t.Helper()
	var logs bytes.Buffer
	o := New(slog.New(slog.NewJSONHandler(&logs, nil)), m, func(w http.ResponseWriter, r *http.Request, err error) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(err.Error()))
	})
	r := chi.NewRouter()
	r.Use(requestid.Middleware, o.Middleware)
	r.Get(pattern, h)
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n")) {
		var v map[string]any
		if len(l) > 0 && json.Unmarshal(l, &v) == nil {
			lines = append(lines, v)
		}
	}
	return rec, lines
}

// A request is logged once with its route template (never its path), its
// status, bytes and id, and counted; a panic is answered by the face and
// logged as a 500.
func TestObserverLogsAndCounts(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	rec, lines := observed(t, m, "/v1/input/{token}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("hello"))
	}, "/v1/input/secret-token")
	if rec.Code != http.StatusCreated || len(lines) != 1 {
		t.Fatalf("%d, %d log lines", rec.Code, len(lines))
	}
	l := lines[0]
	if l["msg"] != "request" || l["route"] != "/v1/input/{token}" || l["status"] != float64(201) || l["bytes"] != float64(5) ||
		l["requestId"] != rec.Header().Get("X-Request-Id") || l["method"] != "GET" {
		t.Errorf("log line %v", l)
	}
	if n := testutil.ToFloat64(m.HTTPRequests.WithLabelValues("/v1/input/{token}", "GET", "201")); n != 1 {
		t.Errorf("counted %v requests", n)
	}

	rec, lines = observed(t, m, "/boom", func(http.ResponseWriter, *http.Request) { panic("boom") }, "/boom")
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != "panic: boom" ||
		len(lines) != 1 || lines[0]["status"] != float64(500) {
		t.Errorf("a panic: %d %q, logged %v", rec.Code, rec.Body, lines)
	}
}

// A parked request is not settled when its handler returns, but when the
// Recorder of its late answer is; the route it kept is the one logged.
func TestParkedRequestSettlesLate(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	var (
		start time.Time
		late  *http.Request
	)
	_, lines := observed(t, m, "/v1/tasks/{taskId}", func(w http.ResponseWriter, r *http.Request) {
		rec := RecorderOf(struct{ http.ResponseWriter }{w}) // a wrapper that does not say what it wraps
		if rec != nil {
			t.Errorf("found a Recorder under an opaque wrapper")
		}
		rec = RecorderOf(w)
		if rec == nil || rec.Status() != 0 {
			t.Fatalf("no fresh Recorder under the handler: %v", rec)
		}
		rec.Park()
		start = rec.Start()
		late = r.WithContext(WithRoute(requestid.With(r.Context(), "rq_late"), Route(r)))
	}, "/v1/tasks/task_1")
	if len(lines) != 0 {
		t.Fatalf("a parked request was logged when its handler returned: %v", lines)
	}
	var logs bytes.Buffer
	o := New(slog.New(slog.NewJSONHandler(&logs, nil)), m, nil)
	answer := httptest.NewRecorder()
	rec := NewRecorder(answer, start)
	func() {
		defer o.Settle(rec, late)
		rec.WriteHeader(http.StatusNotModified)
	}()
	var l map[string]any
	if err := json.Unmarshal(logs.Bytes(), &l); err != nil || l["route"] != "/v1/tasks/{taskId}" ||
		l["status"] != float64(304) || l["requestId"] != "rq_late" {
		t.Errorf("late log line %s (%v)", logs.String(), err)
	}
	if rec.Status() != http.StatusNotModified {
		t.Errorf("status %d", rec.Status())
	}
}

// unwrapOnly wraps a writer, says so, and does not flush itself.
type unwrapOnly struct{ http.ResponseWriter }

func (u unwrapOnly) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// A flush reaches the connection through a wrapper under the Recorder that
// only unwraps (the body guard's writer): an event stream answering a POST
// is sent as it is written, not when it ends.
func TestRecorderFlushesThroughWrappers(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewRecorder(unwrapOnly{rec}, time.Now())
	_, _ = s.Write([]byte("data: 1\n\n"))
	s.Flush()
	if !rec.Flushed {
		t.Fatal("the flush did not reach the writer under the wrapper")
	}
}
