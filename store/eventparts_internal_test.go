package store

import (
	"strconv"
	"testing"
)

// A task event taken apart for the session log is written again byte for
// byte on a read; an event whose head does not read as a task event's goes
// as its JSON.
func TestEventPartsReadAsTheEventWas(t *testing.T) {
	for _, c := range []struct {
		head, tail string
		parts      bool
	}{
		{`{"type":"task.progress","at":"2026-12-06T03:13:32.288Z","taskId":"task_1","revision":2,"data":{"task":`, `}}`, true},
		{`{"type":"task.message","at":"2026-12-06T03:13:32.288Z","taskId":"task_1","revision":12,"data":{"data":{"pct":50},"task":`, `,"text":"a \"b\""}}`, true},
		{`{"type":"task.created","at":"2026-12-06T03:13:32.288Z","sessionId":"ses_1","taskId":"task_1","revision":1,"data":{"task":`, `}}`, false},
		{`{"type":"task.created","at":"2026\"x","taskId":"task_1","revision":1,"data":{"task":`, `}}`, false},
		{`{"type":"task created","at":"t","taskId":"task_1","revision":1,"data":{"task":`, `}}`, false},
		{`{"type":"task.created","at":"t","taskId":"","revision":1,"data":{"task":`, `}}`, false},
		{`{"type":"task.created","at":"t","taskId":"task_1","revision":x,"data":{"task":`, `}}`, false},
		{`{"type":"task.created","at":"t","taskId":"task_1","revision":1,"dat":{"task":`, `}}`, false},
	} {
		ev := TaskEvent{JSON: []byte(c.head + c.tail), Cut: len(c.head)}
		value, form := ev.args()
		if (form == eventFormParts) != c.parts {
			t.Errorf("%s: form %q, want parts %v", c.head, form, c.parts)
			continue
		}
		if !c.parts {
			if string(value) != c.head+c.tail || form != strconv.Itoa(len(c.head)) {
				t.Errorf("%s: sent as %q cut at %q, want its JSON", c.head, value, form)
			}
			continue
		}
		got, cut := storedEvent(map[string]any{eventFieldParts: string(value)})
		if got != c.head+c.tail || cut != strconv.Itoa(len(c.head)) {
			t.Errorf("parts %q read as %s cut at %s, want %s%s cut at %d", value, got, cut, c.head, c.tail, len(c.head))
		}
		if len(value) >= len(c.head)+len(c.tail) {
			t.Errorf("%s: its parts (%d bytes) are no shorter than its JSON", c.head, len(value))
		}
	}
}
