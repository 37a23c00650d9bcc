package tasks

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/taskhook/taskhook/events"
)

// eventJSON renders an event for the logs, without its id (the stream gives
// it). task.* events carry the snapshot, already rendered by json.Marshal.
//
// The bytes are those json.Marshal gives for an events.Event whose data is
// the event's map (keys sorted) with the snapshot under "task"; they are
// written here directly because that way copied and re-validated the
// snapshot twice, on every command.
func eventJSON(t Task, now time.Time, e Emitted, snapshot []byte) ([]byte, error) {
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

	b := make([]byte, 0, len(snapshot)+192)
	b = events.AppendHead(b, e.Type, now, t.SessionID, t.TaskID, t.Revision)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = events.AppendString(b, k)
		b = append(b, ':')
		if taskEvent && k == "task" {
			b = append(b, snapshot...)
			continue
		}
		v, err := json.Marshal(e.Data[k])
		if err != nil {
			return nil, err
		}
		b = append(b, v...)
	}
	return append(b, "}}"...), nil
}
