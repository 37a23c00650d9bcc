package app_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/store/storetest"
)

// The kinds and release subsections work as printed, after the lines of
// the walk-through they continue (the endless stream is left out).
func TestReadmeKindsAndRelease(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	srv := apptest.Start(t, storetest.Embedded(t), app.Config{})
	var script []string
	for _, line := range strings.Split(readmeBlock(t, "## A first session with curl"), "\n") {
		if strings.HasPrefix(line, "API=") {
			line = "API=" + srv.URL + "/v1"
		}
		if strings.HasPrefix(line, "API=") || strings.HasPrefix(line, "AUTH=") || strings.HasPrefix(line, "field()") || strings.HasPrefix(line, "SID=") {
			script = append(script, line)
		}
	}
	for _, heading := range []string{"### Waking only on what matters: kinds", "### Cancel, release, and waiting"} {
		for _, line := range strings.Split(readmeBlock(t, heading), "\n") {
			if !strings.Contains(line, "text/event-stream") {
				script = append(script, line)
			}
		}
	}
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+strings.Join(script, "\n"))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TOKEN="+apptest.Token(t, "dev"), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walk-through failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"\"revision\":4\n", "working\n", `"type":"task.message"`, `"field":"kinds"`,
		`"code":"task_not_terminal"`, "cancelled\n", `"unreleasedTaskIds":["task_`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walk-through's output lacks %q:\n%s", want, out)
		}
	}
	// The release, and the waiting cancel's answer, each print releasedAt.
	if n := len(regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).FindAllString(string(out), -1)); n != 2 {
		t.Errorf("the walk-through printed releasedAt %d times, want 2:\n%s", n, out)
	}
}
