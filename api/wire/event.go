package wire

import "encoding/json"

// Event types.
const (
	EventSessionCreated         = "session.created"
	EventSessionCancelled       = "session.cancelled"
	EventTaskCreated            = "task.created"
	EventTaskProgress           = "task.progress"
	EventTaskMessage            = "task.message"
	EventTaskStatus             = "task.status"
	EventTaskTerminal           = "task.terminal"
	EventInputRequested         = "input.requested"
	EventInputResolved          = "input.resolved"
	EventAuthorizationRequired  = "authorization.required"
	EventAuthorizationCompleted = "authorization.completed"
	EventHookReceived           = "hook.received"
)

// EventTypes are every event type, in the contract's order.
var EventTypes = []string{
	EventSessionCreated, EventSessionCancelled, EventTaskCreated, EventTaskProgress, EventTaskMessage,
	EventTaskStatus, EventTaskTerminal, EventInputRequested, EventInputResolved,
	EventAuthorizationRequired, EventAuthorizationCompleted, EventHookReceived,
}

// Event is one entry of a session's or a task's log. ID is the entry's
// stream id: a cursor that increases strictly within a log, and the same in
// a task's log and its session's. task.* events carry the task in data.task.
// T is the Go type of its timestamp.
type Event[T any] struct {
	ID        string          `json:"id,omitempty"`
	Type      string          `json:"type"`
	At        T               `json:"at"`
	SessionID string          `json:"sessionId"`
	TaskID    string          `json:"taskId,omitempty"`
	Revision  int64           `json:"revision,omitempty"`
	Data      json.RawMessage `json:"data"`
}
