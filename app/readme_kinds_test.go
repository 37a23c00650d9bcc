package app_test

import (
	"regexp"
	"strings"
	"testing"
)

// The kinds and release subsections work as printed, after the lines of
// the walk-through they continue (the endless stream is left out).
func TestReadmeKindsAndRelease(t *testing.T) {
	t.Parallel()
	srv := readmeServer(t, "curl")
	script := walkthroughSetup(t, srv)
	for _, heading := range []string{"### Waking only on what matters: kinds", "### Cancel, release, and waiting"} {
		for _, line := range strings.Split(readmeBlock(t, heading), "\n") {
			if !strings.Contains(line, "text/event-stream") {
				script = append(script, line)
			}
		}
	}
	out := runReadme(t, "the walk-through", script)
	wantOutput(t, "the walk-through", out,
		"\"revision\":4\n", "working\n", `"type":"task.message"`, `"field":"kinds"`,
		`"code":"task_not_terminal"`, "cancelled\n", `"unreleasedTaskIds":["task_`)
	// The release, and the waiting cancel's answer, each print releasedAt.
	if n := len(regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).FindAllString(out, -1)); n != 2 {
		t.Errorf("the walk-through printed releasedAt %d times, want 2:\n%s", n, out)
	}
}
