package tasks

import (
	"testing"

	"github.com/taskhook/taskhook/waits"
)

// What a waiter for messages, that knows revision 1 and answers after it,
// makes of each wake-up.
func TestJudgeWake(t *testing.T) {
	kinds := waits.Kinds{"task.message"}
	for _, c := range []struct {
		name string
		wk   waits.Wake
		want wakeVerdict
	}{
		{"a revision it knows", waits.Wake{Revision: 1, Types: []string{"task.created"}}, wakeKnown},
		{"the next revision", waits.Wake{Revision: 2, Types: []string{"task.progress"}}, wakeNews},
		{"the next revision, of its kind", waits.Wake{Revision: 2, Types: []string{"task.message"}}, wakeNews},
		{"a late creation merged with the next revision", waits.Wake{Revision: 2, First: 1, Types: []string{"task.created", "task.progress"}}, wakeNews},
		{"a late creation merged with a message", waits.Wake{Revision: 2, First: 1, Types: []string{"task.created", "task.message"}}, wakeUnclear},
		{"a revision after a missed one", waits.Wake{Revision: 3, Types: []string{"task.progress"}}, wakeUnclear},
		{"types unknown", waits.Wake{Revision: 2}, wakeUnclear},
		{"merged with another task's", waits.Wake{Revision: 2, Merged: true, Types: []string{"task.progress"}}, wakeUnclear},
	} {
		if got := judge(c.wk, 1, 1, kinds); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
