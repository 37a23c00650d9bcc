package tasks

import (
	"testing"

	"github.com/taskhook/taskhook/store"
)

// What a waiter for messages, that knows revision 1 and answers after it,
// makes of each wake-up.
func TestJudgeWake(t *testing.T) {
	kinds := store.Kinds{"task.message"}
	for _, c := range []struct {
		name string
		wk   store.Wake
		want wakeVerdict
	}{
		{"a revision it knows", store.Wake{Revision: 1, Types: []string{"task.created"}}, wakeKnown},
		{"the next revision", store.Wake{Revision: 2, Types: []string{"task.progress"}}, wakeNews},
		{"the next revision, of its kind", store.Wake{Revision: 2, Types: []string{"task.message"}}, wakeNews},
		{"a late creation merged with the next revision", store.Wake{Revision: 2, First: 1, Types: []string{"task.created", "task.progress"}}, wakeNews},
		{"a late creation merged with a message", store.Wake{Revision: 2, First: 1, Types: []string{"task.created", "task.message"}}, wakeUnclear},
		{"a revision after a missed one", store.Wake{Revision: 3, Types: []string{"task.progress"}}, wakeUnclear},
		{"types unknown", store.Wake{Revision: 2}, wakeUnclear},
		{"merged with another task's", store.Wake{Revision: 2, Merged: true, Types: []string{"task.progress"}}, wakeUnclear},
	} {
		if got := judge(c.wk, 1, 1, kinds); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
