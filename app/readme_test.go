package app_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/store/storetest"
)

// The README's curl walk-through works as printed: its first sh block runs
// against a real server on the embedded store (the endless stream at the end
// is left out).
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## A first session with curl")
	if !ok {
		t.Fatal("README has no curl walk-through")
	}
	_, block, _ := strings.Cut(rest, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	srv := apptest.Start(t, storetest.Embedded(t), app.Config{})
	var script []string
	for _, line := range strings.Split(block, "\n") {
		if strings.Contains(line, "text/event-stream") {
			continue
		}
		if strings.HasPrefix(line, "API=") {
			line = "API=" + srv.URL + "/v1"
		}
		script = append(script, line)
	}
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+strings.Join(script, "\n"))
	cmd.Env = append(os.Environ(), "TOKEN="+apptest.Token(t, "dev"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walk-through failed: %v\n%s", err, out)
	}
	for _, want := range []string{`"revision":2`, `"status":"input_required"`, "input_required\n",
		`"revision":4`, `"status":"completed"`, "completed\n", `"type":"task.created"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walk-through's output lacks %q:\n%s", want, out)
		}
	}
}
