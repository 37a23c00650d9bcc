package tasks

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/store"
)

// storedEvent renders an event as the logs keep it, without its id (the
// stream gives it): task.* events with their snapshot (the write's task
// json) and their sessionId left out, and Cut where the snapshot goes (0
// for an event that carries none). A read puts both back.
//
// With the snapshot put back, the bytes are those json.Marshal gives for an
// events.Event whose data is the event's map (keys sorted) with the
// snapshot under "task"; they are written here directly because that way
// copied and re-validated the snapshot twice, on every command.
func storedEvent(t Task, now time.Time, e Emitted) (store.TaskEvent, error) {
	taskEvent := isTaskEvent(e.Type)
	keys := make([]string, 0, len(e.Data)+1)
	for k := range e.Data {
		if !(taskEvent && k == "task") {
			keys = append(keys, k)
		}
	}
	if taskEvent {
		keys = append(keys, "task")
	}
	slices.Sort(keys)

	out := store.TaskEvent{JSON: make([]byte, 0, 192)}
	session := t.SessionID
	if taskEvent {
		session = "" // the snapshot holds it, and a read puts it back from there
	}
	b := events.AppendHead(out.JSON, e.Type, now, session, t.TaskID, t.Revision)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = events.AppendString(b, k)
		b = append(b, ':')
		if taskEvent && k == "task" {
			out.Cut = len(b)
			continue
		}
		v, err := json.Marshal(e.Data[k])
		if err != nil {
			return store.TaskEvent{}, err
		}
		b = append(b, v...)
	}
	out.JSON = append(b, "}}"...)
	return out, nil
}
