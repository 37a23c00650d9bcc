// Package events holds the entries of every event log, a task's and a
// session's (their shape is api/wire's Event), and the timestamp every
// record shows. The logs themselves live in Redis streams.
//
// It imports api/wire only.
package events

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

// Known reports whether t is one of the contract's event types.
func Known(t string) bool { return slices.Contains(wire.EventTypes, t) }

// Event is one entry of a log. ID is the stream id of the entry: a cursor that
// increases strictly within a log. An event appended to a task log and to its
// session log gets the same id in both.
type Event = wire.Event[Time]

// Time is a timestamp that reads and writes as RFC 3339 UTC with milliseconds.
type Time struct{ time.Time }

// TimeFormat is the wire format of every timestamp.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// At returns t truncated to milliseconds, in UTC.
func At(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(TimeFormat) + `"`), nil
}

func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = parsed.UTC()
	return nil
}

// String is the wire form.
func (t Time) String() string { return t.UTC().Format(TimeFormat) }
