package tasks

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/store"
)

// eventJSON renders an event whole, without its id (the stream gives it).
// task.* events carry the snapshot, already rendered by json.Marshal.
//
// The bytes are those json.Marshal gives for an events.Event whose data is
// the event's map (keys sorted) with the snapshot under "task"; they are
// written here directly because that way copied and re-validated the
// snapshot twice, on every command.
func eventJSON(t Task, now time.Time, e Emitted, snapshot []byte) ([]byte, error) {
	b, _, err := writeEvent(t, now, e, snapshot, true)
	return b, err
}

// storedEvent renders an event as the logs keep it: as eventJSON would but
// with the snapshot (the write's task json) left out, and where it goes.
func storedEvent(t Task, now time.Time, e Emitted) (store.TaskEvent, error) {
	b, cut, err := writeEvent(t, now, e, nil, false)
	return store.TaskEvent{JSON: b, Cut: cut}, err
}

// writeEvent writes the event, the snapshot in its place when with is set;
// cut is where the snapshot goes (0 for an event that carries none).
func writeEvent(t Task, now time.Time, e Emitted, snapshot []byte, with bool) (b []byte, cut int, err error) {
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

	b = make([]byte, 0, len(snapshot)+192)
	b = events.AppendHead(b, e.Type, now, t.SessionID, t.TaskID, t.Revision)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = events.AppendString(b, k)
		b = append(b, ':')
		if taskEvent && k == "task" {
			cut = len(b)
			if with {
				b = append(b, snapshot...)
			}
			continue
		}
		v, err := json.Marshal(e.Data[k])
		if err != nil {
			return nil, 0, err
		}
		b = append(b, v...)
	}
	return append(b, "}}"...), cut, nil
}
