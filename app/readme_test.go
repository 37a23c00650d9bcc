package app_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
)

// The README's curl walk-through works as printed: its first sh block runs
// against a real server on the embedded store (the endless stream at the end
// is left out).
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	srv := readmeServer(t, "curl")
	script := readmeLines(t, "## A first session with curl")
	for i, line := range script {
		if strings.HasPrefix(line, "API=") {
			script[i] = "API=" + srv.URL + "/v1"
		}
	}
	out := runReadme(t, "the walk-through", script)
	wantOutput(t, "the walk-through", out, `"revision":2`, `"status":"input_required"`, "input_required\n",
		`"revision":4`, `"status":"completed"`, "completed\n", `"type":"task.created"`)
}

// The answerUrl subsection works as printed, after the walk-through it
// continues.
func TestReadmeAnswerURL(t *testing.T) {
	t.Parallel()
	srv := readmeServer(t, "curl")
	script := append(walkthroughSetup(t, srv), readmeBlock(t, "### Answering through answerUrl"))
	out := runReadme(t, "the answerUrl walk-through", script)
	wantOutput(t, "the answerUrl walk-through", out,
		`{"ok":true,"taskId":"task_`, `"requestId":"merge","status":"working"}`, `"code":"input_closed"`)
}

// The kinds and release subsections work as printed, after the lines of
// the walk-through they continue (the endless stream is left out).
func TestReadmeKindsAndRelease(t *testing.T) {
	t.Parallel()
	srv := readmeServer(t, "curl")
	script := append(walkthroughSetup(t, srv),
		readmeLines(t, "### Waking only on what matters: kinds", "### Cancel, release, and waiting")...)
	out := runReadme(t, "the walk-through", script)
	wantOutput(t, "the walk-through", out,
		"\"revision\":4\n", "working\n", `"type":"task.message"`, `"field":"kinds"`,
		`"code":"task_not_terminal"`, "cancelled\n", `"unreleasedTaskIds":["task_`)
	// The release, and the waiting cancel's answer, each print releasedAt.
	if n := len(regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).FindAllString(out, -1)); n != 2 {
		t.Errorf("the walk-through printed releasedAt %d times, want 2:\n%s", n, out)
	}
}

// The hooks walk-through works as printed too (it uses jq and openssl).
func TestReadmeHooksWalkthrough(t *testing.T) {
	t.Parallel()
	srv := readmeServer(t, "curl", "jq", "openssl")
	var script []string
	for _, line := range strings.Split(readmeBlock(t, "## Hooks: inbound webhooks"), "\n") {
		if strings.HasPrefix(line, "export API=") {
			line = `export API=` + srv.URL + `/v1 AUTH="Authorization: Bearer $TOKEN"`
		}
		script = append(script, line)
	}
	out := runReadme(t, "the hooks walk-through", script)
	wantOutput(t, "the hooks walk-through", out, `"duplicate":false`, `"duplicate":true`, `"signature_invalid"`,
		`"deliveryCount": 1`, `"acked":1`, `"type": "hook.received"`, `"hook_closed"`)
}

// readmeServer skips the test when one of the tools the README's blocks
// call is missing, and starts a server on the embedded store for them.
func readmeServer(t *testing.T, tools ...string) *apptest.Server {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	return apptest.Embedded(t, app.Config{})
}

// walkthroughSetup is what the README's subsections build on: the lines of
// the first walk-through that set API (to srv), AUTH, field() and SID.
func walkthroughSetup(t *testing.T, srv *apptest.Server) []string {
	t.Helper()
	var script []string
	for _, line := range readmeLines(t, "## A first session with curl") {
		if strings.HasPrefix(line, "API=") {
			line = "API=" + srv.URL + "/v1"
		}
		if strings.HasPrefix(line, "API=") || strings.HasPrefix(line, "AUTH=") || strings.HasPrefix(line, "field()") || strings.HasPrefix(line, "SID=") {
			script = append(script, line)
		}
	}
	return script
}

// readmeLines are the lines of the first sh block after each heading, in
// order, without the endless streams (text/event-stream).
func readmeLines(t *testing.T, headings ...string) []string {
	t.Helper()
	var lines []string
	for _, heading := range headings {
		for _, line := range strings.Split(readmeBlock(t, heading), "\n") {
			if !strings.Contains(line, "text/event-stream") {
				lines = append(lines, line)
			}
		}
	}
	return lines
}

// runReadme runs the lines with bash, stopping at the first failure, in a
// folder of its own and with the token of a principal in TOKEN; it returns
// what they printed, or fails the test with what names the script.
func runReadme(t *testing.T, what string, script []string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+strings.Join(script, "\n"))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TOKEN="+apptest.Token(t, "dev"), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s failed: %v\n%s", what, err, out)
	}
	return string(out)
}

// wantOutput checks that out holds each of want.
func wantOutput(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s's output lacks %q:\n%s", what, w, out)
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
