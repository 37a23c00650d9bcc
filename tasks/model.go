// Package tasks holds the task record, the pure state machine that decides
// every change to it, and the service that applies changes through the store.
//
// It imports store, idem, paging, endpoints (to check notification
// endpoints), replay (to keep a create's answer sealed for a repeat), waits,
// ids, tokens, cache, events, problem, authz, metrics and api/wire, never
// handlers, callbacks or another service.
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

// UnmarshalJSON reads a task record, stored or shown: a record written
// before tasks had an executor has none, and its owner did the work, so it
// reads as executed by its owner. Every decode of a Task in this package
// passes here.
func (t *Task) UnmarshalJSON(b []byte) error {
	type plain Task // without this method
	if err := json.Unmarshal(b, (*plain)(t)); err != nil {
		return err
	}
	if t.Executor == "" {
		t.Executor = t.Owner
	}
	return nil
}

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
	// Answer is one answer to one request, as a client gives it.
	Answer = wire.Answer
	// InputResponse is an answer as the task records it, with who gave it,
	// when and through what.
	InputResponse = wire.InputResponse[events.Time]
)

// Answerer is who gives the answers of a respond command and through what:
// the face that heard them says so, never the answer's body. Apply records
// it with each answer, and the time of the change.
type Answerer struct {
	By          string // the principal, or wire.AnsweredByAnswerLink
	SlackUserID string // with Via slack: the Slack user who acted
	Via         string // wire.ViaAPI, wire.ViaConsole, ...
}

// sameAnswer reports whether two answers to one request say the same
// thing. Who gave them, when and how is no part of it: an answer retried
// through another channel is the same answer.
func sameAnswer(r, o Answer) bool {
	return r.OptionID == o.OptionID && r.Text == o.Text && action(r) == action(o)
}

// action is what an answer does: accept unless it says otherwise.
func action(a Answer) string {
	if a.Action == "" {
		return wire.ActionAccept
	}
	return a.Action
}
