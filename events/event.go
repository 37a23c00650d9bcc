// Package events holds the shape of the entries in every event log: a task's,
// a session's and a hook's. The logs themselves live in Redis streams.
package events

import (
	"encoding/json"
	"time"
)

// Event types, as listed in the contract.
const (
	SessionCreated         = "session.created"
	SessionCancelled       = "session.cancelled"
	TaskCreated            = "task.created"
	TaskProgress           = "task.progress"
	TaskMessage            = "task.message"
	TaskStatus             = "task.status"
	TaskTerminal           = "task.terminal"
	InputRequested         = "input.requested"
	InputResolved          = "input.resolved"
	AuthorizationRequired  = "authorization.required"
	AuthorizationCompleted = "authorization.completed"
	HookReceived           = "hook.received"
)

// Event is one entry of a log. ID is the stream id of the entry: a cursor that
// increases strictly within a log. An event appended to a task log and to its
// session log gets the same id in both.
type Event struct {
	ID        string          `json:"id,omitempty"`
	Type      string          `json:"type"`
	At        Time            `json:"at"`
	SessionID string          `json:"sessionId"`
	TaskID    string          `json:"taskId,omitempty"`
	Revision  int64           `json:"revision,omitempty"`
	Data      json.RawMessage `json:"data"`
}

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
