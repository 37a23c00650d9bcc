// Package tasks holds the task record, the pure state machine that decides
// every change to it, and the service that applies changes through the store.
//
// It imports store, ids, tokens, cache, events, problem, authz, metrics and
// api/wire, never handlers or another service.
package tasks

import (
	"encoding/json"
	"fmt"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/events"
)

// Status is where a task stands.
type Status string

const (
	Working       Status = wire.StatusWorking
	InputRequired Status = wire.StatusInputRequired
	Completed     Status = wire.StatusCompleted
	Failed        Status = wire.StatusFailed
	Cancelled     Status = wire.StatusCancelled
)

// Terminal reports whether no command can change the task any more.
func (s Status) Terminal() bool { return wire.Terminal(s) }

// Task is the durable record, exactly as the API shows it.
type Task wire.Task[events.Time, Status]

// decodeTask reads a task record as the store holds it, into a fresh Task.
func decodeTask(raw []byte) (Task, error) {
	var t Task
	if err := json.Unmarshal(raw, &t); err != nil {
		return Task{}, fmt.Errorf("decode task: %w", err)
	}
	return t, nil
}

type (
	// TaskError is why a task failed.
	TaskError = wire.TaskError
	// InputRequest is a question the executor asks a human (or a sign-in it
	// needs).
	InputRequest = wire.InputRequest
	// Option is one button of a request.
	Option = wire.Option
	// InputResponse is one answer to one request.
	InputResponse = wire.InputResponse
)

// sameAnswer reports whether two answers to one request say the same thing.
func sameAnswer(r, o InputResponse) bool {
	return r.OptionID == o.OptionID && r.Text == o.Text
}
