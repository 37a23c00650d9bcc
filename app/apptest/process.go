package apptest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// StartProcess runs the real server binary as its own process on the store
// of sc, with env (NAME=value) added, and returns its base URL. The test
// kills it as it likes.
func StartProcess(t testing.TB, sc store.Config, env ...string) (*exec.Cmd, string) {
	t.Helper()
	bin, err := serverBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"TASKHOOK_ADDR=127.0.0.1:0", "TASKHOOK_REDIS_URL="+sc.URL, "TASKHOOK_REDIS_PREFIX="+sc.Prefix,
		"TASKHOOK_JWT_SECRET="+Secret, "TASKHOOK_WAKE_BLOCK=500ms")
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if !sent && json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
				sent = true
			}
		}
	}()
	select {
	case a := <-addr:
		return cmd, "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("the server process did not start listening")
	}
	return nil, ""
}

// EmbeddedProcess is StartProcess on an embedded store of the process's own
// (storetest.Embedded).
func EmbeddedProcess(t testing.TB, env ...string) (*exec.Cmd, string) {
	t.Helper()
	return StartProcess(t, storetest.Embedded(t), env...)
}

// serverBinary builds the server once per test binary, beside the test
// binary itself (go test removes that folder when the run ends), so the
// tests of a package pay for one link however many processes they start.
var serverBinary = sync.OnceValues(func() (string, error) {
	dir := ""
	if exe, err := os.Executable(); err == nil {
		dir = filepath.Dir(exe)
	}
	f, err := os.CreateTemp(dir, "taskhook-server-")
	if err != nil {
		return "", fmt.Errorf("a file for the server binary: %w", err)
	}
	_ = f.Close()
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", f.Name(), "github.com/taskhook/taskhook/cmd/server")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the server: %w\n%s", err, out)
	}
	return f.Name(), nil
})
