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
	block := readmeBlock(t, "## A first session with curl")
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

// The answerUrl subsection works as printed, after the walk-through it
// continues.
func TestReadmeAnswerURL(t *testing.T) {
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
	script = append(script, readmeBlock(t, "### Answering through answerUrl"))
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+strings.Join(script, "\n"))
	cmd.Env = append(os.Environ(), "TOKEN="+apptest.Token(t, "dev"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the answerUrl walk-through failed: %v\n%s", err, out)
	}
	for _, want := range []string{`{"ok":true,"taskId":"task_`, `"requestId":"merge","status":"working"}`, `"code":"input_closed"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the answerUrl walk-through's output lacks %q:\n%s", want, out)
		}
	}
}

// The hooks walk-through works as printed too (it uses jq and openssl).
func TestReadmeHooksWalkthrough(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"curl", "jq", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	block := readmeBlock(t, "## Hooks: inbound webhooks")
	srv := apptest.Start(t, storetest.Embedded(t), app.Config{})
	var script []string
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "export TH=") {
			line = `export TH=` + srv.URL + ` AUTH="Authorization: Bearer $TOKEN"`
		}
		script = append(script, line)
	}
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+strings.Join(script, "\n"))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TOKEN="+apptest.Token(t, "dev"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the hooks walk-through failed: %v\n%s", err, out)
	}
	for _, want := range []string{`"duplicate":false`, `"duplicate":true`, `"signature_invalid"`, `"deliveryCount": 1`,
		`"acked":1`, `"type": "hook.received"`, `"hook_closed"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the hooks walk-through's output lacks %q:\n%s", want, out)
		}
	}
}

// readmeBlock is the first sh block after a heading of README.md.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), heading)
	if !ok {
		t.Fatalf("README has no %q", heading)
	}
	_, block, _ := strings.Cut(rest, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	return block
}
