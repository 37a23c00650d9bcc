package handlers

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/taskhook/taskhook/problem"
)

// A request whose client went away is not a server error: no 500, no error
// log line; and an unknown error is a 500 whose id is logged, its text never
// sent.
func TestWriteErrorStatuses(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	a := &api{log: slog.New(slog.NewJSONHandler(&logs, nil))}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/v1/tasks/x", nil).WithContext(ctx)
	a.writeError(rec, req, fmt.Errorf("read task: %w", context.Canceled))
	if rec.Code != statusClientClosed || logs.Len() != 0 {
		t.Fatalf("client gone: status %d, logs %q", rec.Code, logs.String())
	}

	rec = httptest.NewRecorder()
	req = httptest.NewRequest(http.MethodGet, "/v1/tasks/x", nil)
	a.writeError(rec, req, fmt.Errorf("decode: ERR secret redis detail"))
	if rec.Code != http.StatusInternalServerError || bytes.Contains(rec.Body.Bytes(), []byte("redis detail")) ||
		!bytes.Contains(rec.Body.Bytes(), []byte(`"errorId":"err_`)) || !bytes.Contains(logs.Bytes(), []byte(`"errorId":"err_`)) {
		t.Fatalf("internal: %d %s; logs %s", rec.Code, rec.Body, logs.String())
	}

	rec = httptest.NewRecorder()
	a.writeError(rec, req, fmt.Errorf("%w: dial tcp: connection refused", problem.ErrUnavailable))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("unavailable: %d %v", rec.Code, rec.Header())
	}
}
