package app_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

var (
	printedToken   = regexp.MustCompile(`export TOKEN=(\S+)`)
	printedConsole = regexp.MustCompile(`Console: (http://\S+/console/)`)
)

// devRun is one app.Run of the development server, and what it printed.
type devRun struct {
	token, console string
	stop           func()
}

// runDev runs the server the way make run does (embedded store, no JWT
// secret) until stop, and waits for its console line.
func runDev(t *testing.T, cfg app.Config) devRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &apptest.SafeBuffer{}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, cfg, io.Discard, out) }()
	storetest.WaitFor(t, "the console line", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run ended: %v", err)
		default:
		}
		return printedConsole.MatchString(out.String())
	})
	r := devRun{
		token:   printedToken.FindStringSubmatch(out.String())[1],
		console: printedConsole.FindStringSubmatch(out.String())[1],
	}
	r.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	return r
}

// With TASKHOOK_DEV_SECRET_FILE the development secret is made into that
// file (mode 0600, its folder too) and read back on the next start, so a
// token printed before a restart works after it; the console's address is
// printed with the port the server really listens on.
func TestDevSecretFileOutlivesRestart(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "state", "dev-secret")
	cfg := app.Config{Addr: "127.0.0.1:0", DevSecretFile: file}
	first := runDev(t, cfg)
	info, err := os.Stat(file)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the secret file: %v, %v", info, err)
	}
	kept, _ := os.ReadFile(file)
	if !strings.HasPrefix(first.console, "http://127.0.0.1:") || strings.HasSuffix(first.console, ":0/console/") {
		t.Errorf("printed console %q", first.console)
	}
	resp, err := http.Get(first.console)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %v", first.console, resp, err)
	}
	resp.Body.Close()
	first.stop()

	second := runDev(t, cfg)
	defer second.stop()
	if again, _ := os.ReadFile(file); string(again) != string(kept) {
		t.Error("the second start made a new secret")
	}
	base := strings.TrimSuffix(second.console, "/console/")
	if _, err := client.New(base, first.token).Info(context.Background()); err != nil {
		t.Errorf("the token printed before the restart, after it: %v", err)
	}
}

// A secret file others may read, or one too short to be a secret, stops the
// start with a message naming the variable.
func TestDevSecretFileRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte(strings.Repeat("s", 43)), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{open, short} {
		_, err := app.New(context.Background(), app.Config{Addr: "127.0.0.1:0", DevSecretFile: file}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "TASKHOOK_DEV_SECRET_FILE") {
			t.Errorf("%s: %v", filepath.Base(file), err)
		}
	}
}

// make run prints the token and the console's address, and Ctrl-C (SIGINT
// to the whole foreground group, as a terminal sends it) drains the server
// and ends make with no error of its own (go run, which it ran before,
// exited 1 on the signal: "make: *** [run] Error 1").
func TestMakeRunStopsCleanlyOnInterrupt(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"make", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	cmd := exec.Command("make", "--no-print-directory", "-C", "..", "run", "ARGS=-addr=127.0.0.1:0")
	cmd.Env = append(os.Environ(), "TASKHOOK_DEV_SECRET_FILE="+filepath.Join(t.TempDir(), "dev-secret"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	printed := &apptest.SafeBuffer{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			_, _ = printed.Write(append(sc.Bytes(), '\n'))
		}
	}()
	deadline := time.Now().Add(3 * time.Minute) // the first build may take a while
	for !printedConsole.MatchString(printed.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("make run printed no console line:\n%s", printed.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	console := printedConsole.FindStringSubmatch(printed.String())[1]
	token := printedToken.FindStringSubmatch(printed.String())
	if token == nil {
		t.Fatalf("no token printed:\n%s", printed.String())
	}
	if _, err := client.New(strings.TrimSuffix(console, "/console/"), token[1]).Info(context.Background()); err != nil {
		t.Errorf("the printed token at the printed address: %v", err)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-copied
	// make itself ends by the signal once its recipe has (GNU make always
	// does on SIGINT); it reports an error only when the recipe failed.
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGINT) {
		t.Errorf("make run after Ctrl-C: %v\n%s", err, printed.String())
	}
	if strings.Contains(printed.String(), "make: ***") || !strings.Contains(printed.String(), `"msg":"shutting down"`) {
		t.Errorf("make run did not end cleanly on Ctrl-C:\n%s", printed.String())
	}
}

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
