package tasks

import (
	"encoding/json"
	"slices"
	"strconv"
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
	b = append(b, `{"type":`...)
	b = appendJSONString(b, e.Type)
	b = append(b, `,"at":"`...)
	b = events.At(now).UTC().AppendFormat(b, events.TimeFormat)
	b = append(b, `","sessionId":`...)
	b = appendJSONString(b, t.SessionID)
	if t.TaskID != "" {
		b = append(b, `,"taskId":`...)
		b = appendJSONString(b, t.TaskID)
	}
	if t.Revision != 0 {
		b = append(b, `,"revision":`...)
		b = strconv.AppendInt(b, t.Revision, 10)
	}
	b = append(b, `,"data":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
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

// appendJSONString appends s as json.Marshal writes it: printable ASCII
// other than the quote, the backslash and the characters it escapes for
// HTML goes as it is; anything else through json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			quoted, _ := json.Marshal(s) // a string always encodes
			return append(b, quoted...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
