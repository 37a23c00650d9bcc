package app_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// The development token `make run` prints works against the server that
// printed it, with the default maximum token age and with a shorter one.
func TestRunPrintsAWorkingDevToken(t *testing.T) {
	t.Parallel()
	for _, maxAge := range []time.Duration{0, 10 * time.Minute} {
		run := runDev(t, app.Config{Addr: "127.0.0.1:0", JWTMaxAge: maxAge})
		_, err := client.New(strings.TrimSuffix(run.console, "/console/"), run.token).Info(context.Background())
		if err != nil {
			t.Errorf("max age %v: the printed token is refused: %v", maxAge, err)
		}
		run.stop()
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
