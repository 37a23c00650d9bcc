package events_test

import (
	"testing"
	"time"

	"github.com/taskhook/taskhook/events"
)

// HeadTask reads back what AppendHead wrote of a task event, and nothing
// from an event of no task, whatever its data holds.
func TestHeadTaskReadsWhatAppendHeadWrote(t *testing.T) {
	at := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	ev := append(events.AppendHead(nil, "task.progress", at, "ses_1", "task_9", 42), `{"task":{"taskId":"task_x","revision":7}}}`...)
	if id, rev, ok := events.HeadTask(string(ev)); !ok || id != "task_9" || rev != 42 {
		t.Errorf("HeadTask(%s) = %q, %d, %v; want task_9, 42", ev, id, rev, ok)
	}
	session := append(events.AppendHead(nil, "session.created", at, "ses_1", "", 0), `{"taskId":"task_x","revision":7}}`...)
	if id, rev, ok := events.HeadTask(string(session)); ok {
		t.Errorf("HeadTask(%s) = %q, %d; want none", session, id, rev)
	}
}
