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

// HeadType reads the type off what a read answers, the id first, and off
// a stored event; what it cannot read it leaves to a decoder.
func TestHeadTypeReadsTheHead(t *testing.T) {
	at := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	stored := append(events.AppendHead(nil, "input.requested", at, "ses_1", "task_9", 4), `{"type":"x"}}`...)
	read := append([]byte(`{"id":"1-0",`), stored[1:]...)
	for _, ev := range [][]byte{stored, read} {
		if typ, ok := events.HeadType(ev); !ok || typ != "input.requested" {
			t.Errorf("HeadType(%s) = %q, %v; want input.requested", ev, typ, ok)
		}
	}
	for _, other := range []string{`{"at":"x","type":"task.created"}`, `{"id":"1-0","at":"x"}`, `{"type":"a\"b"}`, `[]`} {
		if typ, ok := events.HeadType([]byte(other)); ok {
			t.Errorf("HeadType(%s) = %q, want none", other, typ)
		}
	}
}
