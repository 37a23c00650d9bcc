package app_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// tokenWriter takes what Run prints and hands over the development token.
type tokenWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	token chan string
}

func (w *tokenWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if _, rest, ok := bytes.Cut(w.buf.Bytes(), []byte("export TOKEN=")); ok {
		if tok, _, ok := bytes.Cut(rest, []byte("\n")); ok {
			select {
			case w.token <- string(tok):
			default:
			}
		}
	}
	return len(p), nil
}

// The development token `make run` prints works against the server that
// printed it, with the default maximum token age and with a shorter one.
func TestRunPrintsAWorkingDevToken(t *testing.T) {
	t.Parallel()
	for _, maxAge := range []time.Duration{0, 10 * time.Minute} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		ctx, cancel := context.WithCancel(context.Background())
		out := &tokenWriter{token: make(chan string, 1)}
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx, app.Config{Addr: addr, JWTMaxAge: maxAge}, io.Discard, out) }()
		var token string
		select {
		case token = <-out.token:
		case err := <-done:
			cancel()
			t.Fatalf("Run ended before printing a token: %v", err)
		case <-time.After(30 * time.Second):
			cancel()
			t.Fatal("Run printed no token")
		}
		_, err = client.New("http://"+addr, token).Info(ctx)
		cancel()
		if err != nil {
			t.Errorf("max age %v: the printed token is refused: %v", maxAge, err)
		}
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// Profiles are served only when asked for, only on loopback, and never on
// the API's listener.
func TestDebugListener(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "10.0.0.1:6060", "example.com:6060"} {
		if err := (app.Config{DebugAddr: addr}).Validate(); err == nil {
			t.Errorf("TASKHOOK_DEBUG_ADDR=%s was taken", addr)
		}
	}
	srv := apptest.Standalone(t, app.Config{DebugAddr: "127.0.0.1:0"})
	resp, err := http.Get("http://" + srv.App.DebugAddr() + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Fatalf("the profile index: %d %.200s", resp.StatusCode, body)
	}
	resp, err = http.Get(srv.URL + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the API listener serves profiles: %d", resp.StatusCode)
	}
	if off := apptest.Standalone(t, app.Config{}); off.App.DebugAddr() != "" {
		t.Fatal("profiles are served without TASKHOOK_DEBUG_ADDR")
	}
}
