package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os/exec"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// -h lists every variable the configuration reads (the list is what
// FromEnv asks of the environment, so it cannot drift from the help), each
// with a default and a meaning on its line.
func TestHelpListsEverySetting(t *testing.T) {
	t.Parallel()
	asked := map[string]bool{}
	if _, err := app.FromEnv(nil, func(name string) string { asked[name] = true; return "" }); err != nil {
		t.Fatal(err)
	}
	if len(asked) < 40 {
		t.Fatalf("FromEnv read %d variables", len(asked))
	}
	var help bytes.Buffer
	app.Usage(&help)
	lines := map[string][]string{}
	for _, line := range strings.Split(help.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			lines[f[0]] = f[1:]
		}
	}
	for name := range asked {
		rest, ok := lines[name]
		if !ok {
			t.Errorf("-h does not list %s", name)
			continue
		}
		if len(rest) < 2 {
			t.Errorf("-h gives %s no default and meaning: %q", name, rest)
		}
	}
}

// -h, -help and --help ask for the help and -version for the version,
// even beside a variable that cannot be read; a word that is no flag is
// refused.
func TestHelpAndVersionFlags(t *testing.T) {
	t.Parallel()
	badEnv := func(name string) string {
		if name == "TASKHOOK_PARTITIONS" {
			return "many"
		}
		return ""
	}
	for _, c := range []struct {
		args []string
		want error
	}{
		{[]string{"-h"}, flag.ErrHelp},
		{[]string{"-help"}, flag.ErrHelp},
		{[]string{"--help"}, flag.ErrHelp},
		{[]string{"-version"}, app.ErrVersion},
		{[]string{"--version"}, app.ErrVersion},
	} {
		if _, err := app.FromEnv(c.args, badEnv); !errors.Is(err, c.want) {
			t.Errorf("%v: %v, want %v", c.args, err, c.want)
		}
	}
	if _, err := app.FromEnv([]string{"serve"}, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), `"serve"`) {
		t.Errorf("a stray argument: %v", err)
	}
}

// The server binary: -h and --help print the help and exit 0, --version
// prints the version /v1/info reports and exits 0, and a flag it does not
// know exits 2, pointing at -h.
func TestServerBinaryFlags(t *testing.T) {
	t.Parallel()
	proc, url := apptest.EmbeddedProcess(t)
	var want bytes.Buffer
	app.Usage(&want)
	for _, arg := range []string{"-h", "--help"} {
		out, err := exec.Command(proc.Path, arg).Output()
		if err != nil || string(out) != want.String() {
			t.Errorf("%s: %v, printed:\n%s", arg, err, out)
		}
	}
	info, err := client.New(url, apptest.Token(t, "ops")).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(proc.Path, "--version").Output()
	if err != nil || string(out) != info.Version+"\n" || info.Version == "" {
		t.Errorf("--version: %q, %v; /v1/info says %q", out, err, info.Version)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(proc.Path, "-no-such-flag")
	cmd.Stderr = &stderr
	var exit *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "taskhook -h") {
		t.Errorf("an unknown flag: %v, printed %q", err, stderr.String())
	}
}

// A TASKHOOK_* variable no setting reads is warned of once at start, with
// the setting it most likely meant, and its value is not logged; the
// variables of tests and tools beside the server are left alone.
func TestUnknownVariablesAreWarnedOf(t *testing.T) {
	t.Parallel()
	srv := apptest.Embedded(t, app.Config{Environ: []string{
		"TASKHOOK_REDIS_ULR=redis://secret-host:6379", "TASKHOOK_QUUX=1", "TASKHOOK_LOGLEVEL=debug",
		"TASKHOOK_TEST_REDIS_URL=redis://x", "TASKHOOK_TOKEN=t", "TASKHOOK_ADDR=:1", "HOME=/root",
	}})
	type warning struct{ Level, Msg, Name, DidYouMean string }
	var got []warning
	for _, line := range strings.Split(strings.TrimSpace(srv.Logs.String()), "\n") {
		var w warning
		if err := json.Unmarshal([]byte(line), &w); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if w.Msg == "unknown TASKHOOK_ variable" {
			got = append(got, w)
		}
	}
	want := []warning{
		{"WARN", "unknown TASKHOOK_ variable", "TASKHOOK_REDIS_ULR", "TASKHOOK_REDIS_URL"},
		{"WARN", "unknown TASKHOOK_ variable", "TASKHOOK_QUUX", ""},
		{"WARN", "unknown TASKHOOK_ variable", "TASKHOOK_LOGLEVEL", "TASKHOOK_LOG_LEVEL"},
	}
	if len(got) != len(want) {
		t.Fatalf("warnings %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("warning %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if strings.Contains(srv.Logs.String(), "secret-host") {
		t.Error("the log shows a variable's value")
	}
}
