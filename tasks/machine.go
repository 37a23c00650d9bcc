package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/problem"

	"github.com/taskhook/taskhook/events"
)

// CommandKind names a change an executor, agent or human asks for.
type CommandKind string

const (
	CmdProgress     CommandKind = "progress"
	CmdMessage      CommandKind = "message"
	CmdRequireInput CommandKind = "require_input"
	CmdRespond      CommandKind = "respond"
	CmdComplete     CommandKind = "complete"
	CmdFail         CommandKind = "fail"
	CmdCancel       CommandKind = "cancel"
	CmdRelease      CommandKind = "release"

	// CmdRequireAuthorization asks the requester to sign in to a connection;
	// CmdResolveAuthorization records how the sign-in ended. Only the service
	// sends them (package connections), never a route of its own.
	CmdRequireAuthorization CommandKind = "require_authorization"
	CmdResolveAuthorization CommandKind = "resolve_authorization"
)

// Sign-in outcomes, recorded as the optionId of the authorization request's
// response and carried by authorization.completed.
const (
	OutcomeAuthorized = "authorized"
	OutcomeDeclined   = "declined"
	OutcomeFailed     = "failed"
	OutcomeExpired    = "expired" // a newer sign-in took the place of one whose attempt ran out
)

// Command is one requested change. Only the fields of its kind are read.
// Request ids are filled in before Apply (Apply does no I/O, random included).
type Command struct {
	Kind          CommandKind
	StatusMessage *string         // progress
	Progress      json.RawMessage // progress
	Text          string          // message
	Data          json.RawMessage // message
	Requests      []InputRequest  // require_input
	Responses     []Answer        // respond
	Answerer      Answerer        // respond: who answers and through what, recorded with each answer
	OpenOnly      bool            // respond: through an answer URL, so each request must still be open
	Result        json.RawMessage // complete
	Error         *TaskError      // fail
	Reason        string          // cancel
	LiveOnly      bool            // cancel: a task that has ended is refused (ErrTerminal), not read
	Authorization *InputRequest   // require_authorization: the request, with its id, connection and expiresAt
	AskedAt       time.Time       // require_authorization: the clock pending attempts are judged by (zero: now)
	RequestID     string          // resolve_authorization
	Outcome       string          // resolve_authorization
}

// Domain errors. The handlers map each to its status code and error code.
var (
	ErrTerminal         = errors.New("task is terminal")
	ErrNotInputRequired = errors.New("task is not waiting for input")
	ErrUnknownRequest   = errors.New("unknown input request")
	ErrInputConflict    = errors.New("request already answered differently")
	ErrInputClosed      = errors.New("input request is no longer open")
	ErrNotTerminal      = errors.New("task has not ended")
)

// Emitted is an event a change produces, before it gets its log id.
type Emitted struct {
	Type string
	Data map[string]any
}

// Change is what Apply decided. When Changed is false the task is returned as
// it was and nothing is written.
type Change struct {
	Task    Task
	Events  []Emitted
	Changed bool
}

// Apply is the state machine: it decides what cmd does to task at now. It has
// no I/O. An error leaves the task as it is.
func Apply(task Task, cmd Command, now time.Time) (Change, error) {
	if cmd.Kind == CmdRelease {
		return release(task, now)
	}
	if task.Status.Terminal() {
		if cmd.Kind == CmdCancel && !cmd.LiveOnly {
			return Change{Task: task}, nil // cancelling a finished task is a read
		}
		return Change{}, fmt.Errorf("%w: task %s is %s", ErrTerminal, task.TaskID, task.Status)
	}
	next := task.clone()
	var emitted []Emitted
	switch cmd.Kind {
	case CmdProgress:
		if cmd.StatusMessage == nil && cmd.Progress == nil {
			return Change{}, problem.Invalid("statusMessage", "statusMessage or progress is required")
		}
		if cmd.StatusMessage != nil {
			next.StatusMessage = *cmd.StatusMessage
		}
		if cmd.Progress != nil {
			next.Progress = cmd.Progress
		}
		emitted = []Emitted{{Type: wire.EventTaskProgress, Data: map[string]any{}}}
	case CmdMessage:
		if cmd.Text == "" {
			return Change{}, problem.Invalid("text", "is required")
		}
		data := map[string]any{"text": cmd.Text}
		if cmd.Data != nil {
			data["data"] = cmd.Data
		}
		emitted = []Emitted{{Type: wire.EventTaskMessage, Data: data}}
	case CmdRequireInput:
		if err := checkNewRequests(task, cmd.Requests); err != nil {
			return Change{}, err
		}
		next.Status = InputRequired
		next.InputRequests = append(next.InputRequests, cmd.Requests...)
		emitted = []Emitted{
			{Type: wire.EventTaskStatus, Data: map[string]any{}},
			{Type: wire.EventInputRequested, Data: map[string]any{"requests": cmd.Requests}},
		}
	case CmdRespond:
		if cmd.Answerer.By == "" || cmd.Answerer.Via == "" {
			return Change{}, errors.New("respond: the command names nobody who answers")
		}
		answers, err := judgeResponses(task, cmd.Responses, cmd.OpenOnly)
		if err != nil {
			return Change{}, err
		}
		if len(answers) == 0 {
			return Change{Task: task}, nil // only answers already recorded: a safe retry
		}
		recorded := make([]InputResponse, len(answers))
		for i, a := range answers {
			recorded[i] = record(a, cmd.Answerer, now)
		}
		next.InputResponses = append(next.InputResponses, recorded...)
		next.InputRequests = withoutAnswered(next.InputRequests, answers)
		emitted = []Emitted{{Type: wire.EventInputResolved, Data: map[string]any{"responses": recorded}}}
		if len(next.InputRequests) == 0 {
			next.Status = Working
			next.InputRequests = nil
			emitted = append(emitted, Emitted{Type: wire.EventTaskStatus, Data: map[string]any{}})
		}
	case CmdComplete:
		next.Status = Completed
		next.Result = cmd.Result
		emitted = terminal(&next)
	case CmdFail:
		if cmd.Error == nil || cmd.Error.Message == "" {
			return Change{}, problem.Invalid("error.message", "is required")
		}
		next.Status = Failed
		next.Error = cmd.Error
		next.StatusMessage = cmd.Error.Message
		emitted = terminal(&next)
	case CmdRequireAuthorization:
		asked := now
		if !cmd.AskedAt.IsZero() {
			asked = cmd.AskedAt
		}
		if open := task.openAuthorization(cmd.Authorization.Connection, asked); open != nil {
			return Change{Task: task}, nil // a sign-in is pending: the same request answers
		}
		emitted = requireAuthorization(&next, *cmd.Authorization, asked, now)
	case CmdResolveAuthorization:
		var err error
		if emitted, err = resolveAuthorization(task, &next, cmd.RequestID, cmd.Outcome, now); err != nil {
			return Change{}, err
		}
	case CmdCancel:
		next.Status = Cancelled
		next.CancelReason = cmd.Reason
		if cmd.Reason != "" {
			next.StatusMessage = cmd.Reason
		}
		emitted = terminal(&next)
	default:
		return Change{}, problem.Invalid("command", "unknown command %q", cmd.Kind)
	}
	next.Revision = task.Revision + 1
	next.LastUpdatedAt = events.At(now)
	for i := range emitted {
		if isTaskEvent(emitted[i].Type) {
			emitted[i].Data["task"] = &next
		}
	}
	return Change{Task: next, Events: emitted, Changed: true}, nil
}

// release records that the executor stopped its outside work: only once
// the task has ended, and once (a repeat is a read). Status and outcome stay
// as they are.
func release(task Task, now time.Time) (Change, error) {
	if !task.Status.Terminal() {
		return Change{}, fmt.Errorf("%w: task %s is %s", ErrNotTerminal, task.TaskID, task.Status)
	}
	if task.ReleasedAt != nil {
		return Change{Task: task}, nil
	}
	next := task.clone()
	at := events.At(now)
	next.ReleasedAt = &at
	next.Revision = task.Revision + 1
	next.LastUpdatedAt = at
	return Change{Task: next, Events: []Emitted{{Type: wire.EventTaskReleased, Data: map[string]any{"task": &next}}}, Changed: true}, nil
}

// openAuthorization is the task's open sign-in request for connection whose
// attempt has not run out at now, or nil.
func (t Task) openAuthorization(connection string, now time.Time) *InputRequest {
	if t.Status != InputRequired {
		return nil
	}
	for i, r := range t.InputRequests {
		if r.Kind == wire.KindAuthorization && r.Connection == connection && !expired(r, now) {
			return &t.InputRequests[i]
		}
	}
	return nil
}

func expired(r InputRequest, now time.Time) bool {
	at, err := time.Parse(time.RFC3339Nano, r.ExpiresAt)
	return err == nil && !now.Before(at)
}

// record is an answer as the task keeps it: with who gave it, through what,
// and when.
func record(a Answer, by Answerer, now time.Time) InputResponse {
	return InputResponse{Answer: a, AnsweredBy: by.By, SlackUserID: by.SlackUserID, AnsweredAt: events.At(now), Via: by.Via}
}

// signIn is who closes a sign-in request: the requester, for whom the
// provider's token is kept, through the connection's callback.
func signIn(t *Task) Answerer { return Answerer{By: t.Requester, Via: wire.ViaSignIn} }

// requireAuthorization adds a sign-in request to next. A request for the
// same connection whose attempt ran out (at asked) is closed with outcome
// expired in the same change: its URL no longer works, and the new one takes
// its place.
func requireAuthorization(next *Task, req InputRequest, asked, now time.Time) []Emitted {
	var left []InputRequest
	for _, r := range next.InputRequests {
		if r.Kind == wire.KindAuthorization && r.Connection == req.Connection && expired(r, asked) {
			next.InputResponses = append(next.InputResponses,
				record(Answer{RequestID: r.RequestID, OptionID: OutcomeExpired}, signIn(next), now))
			continue
		}
		left = append(left, r)
	}
	next.InputRequests = append(left, req)
	next.Status = InputRequired
	data := map[string]any{"requestId": req.RequestID, "connection": req.Connection,
		"authorizationUrl": req.AuthorizationURL, "expiresAt": req.ExpiresAt}
	return []Emitted{
		{Type: wire.EventTaskStatus, Data: map[string]any{}},
		{Type: wire.EventAuthorizationRequired, Data: data},
	}
}

// resolveAuthorization closes an open sign-in request with its outcome; the
// task goes back to working once nothing else is open.
func resolveAuthorization(task Task, next *Task, requestID, outcome string, now time.Time) ([]Emitted, error) {
	var req *InputRequest
	for i, r := range task.InputRequests {
		if r.RequestID == requestID && r.Kind == wire.KindAuthorization {
			req = &task.InputRequests[i]
		}
	}
	if req == nil {
		return nil, fmt.Errorf("%w: request %s", ErrInputClosed, requestID)
	}
	resp := Answer{RequestID: requestID, OptionID: outcome}
	next.InputResponses = append(next.InputResponses, record(resp, signIn(next), now))
	next.InputRequests = withoutAnswered(next.InputRequests, []Answer{resp})
	emitted := []Emitted{{Type: wire.EventAuthorizationCompleted,
		Data: map[string]any{"requestId": requestID, "connection": req.Connection, "outcome": outcome}}}
	if len(next.InputRequests) == 0 {
		next.Status = Working
		next.InputRequests = nil
		emitted = append(emitted, Emitted{Type: wire.EventTaskStatus, Data: map[string]any{}})
	}
	return emitted, nil
}

// types are the types of the events of the change, in order.
func (c Change) types() []string {
	out := make([]string, len(c.Events))
	for i, e := range c.Events {
		out[i] = e.Type
	}
	return out
}

func terminal(t *Task) []Emitted {
	t.InputRequests = nil
	return []Emitted{{Type: wire.EventTaskTerminal, Data: map[string]any{}}}
}

func isTaskEvent(typ string) bool { return len(typ) > 5 && typ[:5] == "task." }

// clone is t sharing no memory with it: its slices, pointers and raw JSON
// copied. Apply changes a clone, never the caller's task, and the snapshot
// cache hands out clones of the tasks it keeps. Its answers are always a
// list, empty or not, as Apply writes them.
func (t Task) clone() Task {
	c := t
	c.Input = bytes.Clone(t.Input)
	c.Metadata = bytes.Clone(t.Metadata)
	c.Progress = bytes.Clone(t.Progress)
	c.Result = bytes.Clone(t.Result)
	if t.InputRequests != nil {
		c.InputRequests = make([]InputRequest, len(t.InputRequests))
		for i, r := range t.InputRequests {
			r.Options = slices.Clone(r.Options)
			c.InputRequests[i] = r
		}
	}
	c.InputResponses = append(make([]InputResponse, 0, len(t.InputResponses)), t.InputResponses...)
	if t.Error != nil {
		e := *t.Error
		e.Data = bytes.Clone(e.Data)
		c.Error = &e
	}
	c.ReleasedAt = clonePtr(t.ReleasedAt)
	c.TTLMs = clonePtr(t.TTLMs)
	c.ExpiresAt = clonePtr(t.ExpiresAt)
	if t.Notify != nil {
		c.Notify = make([]wire.Endpoint, len(t.Notify))
		for i, ep := range t.Notify {
			ep.Slack = clonePtr(ep.Slack)
			ep.Kinds = slices.Clone(ep.Kinds)
			c.Notify[i] = ep
		}
	}
	return c
}

// clonePtr is a pointer to a copy of what p points to; nil for nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// checkNewRequests validates a require_input batch against the task's history:
// request ids are unique over the task's life.
func checkNewRequests(task Task, reqs []InputRequest) error {
	if len(reqs) == 0 || len(reqs) > MaxRequestsPerCall {
		return problem.Invalid("requests", "must hold 1 to %d requests", MaxRequestsPerCall)
	}
	used := make(map[string]bool, len(task.InputRequests)+len(task.InputResponses)+len(reqs))
	for _, r := range task.InputRequests {
		used[r.RequestID] = true
	}
	for _, r := range task.InputResponses {
		used[r.RequestID] = true
	}
	for i, r := range reqs {
		field := fmt.Sprintf("requests[%d]", i)
		if r.RequestID == "" {
			return problem.Invalid(field+".requestId", "is required")
		}
		if used[r.RequestID] {
			return problem.Invalid(field+".requestId", "%q is already used by this task", r.RequestID)
		}
		used[r.RequestID] = true
		if err := validateRequest(r, field); err != nil {
			return err
		}
	}
	return nil
}

// judgeResponses checks a batch of answers, all or nothing, and returns the
// ones to record (answers already recorded are dropped as no-ops, unless
// openOnly: an answer URL answers an open request once, then is closed).
func judgeResponses(task Task, resps []Answer, openOnly bool) ([]Answer, error) {
	if len(resps) == 0 {
		return nil, problem.Invalid("responses", "must hold at least one response")
	}
	answered := make(map[string]InputResponse, len(task.InputResponses))
	for _, r := range task.InputResponses {
		answered[r.RequestID] = r
	}
	open := make(map[string]InputRequest, len(task.InputRequests))
	for _, r := range task.InputRequests {
		open[r.RequestID] = r
	}
	seen := make(map[string]bool, len(resps))
	var fresh []Answer
	for i, r := range resps {
		field := fmt.Sprintf("responses[%d]", i)
		if seen[r.RequestID] {
			return nil, problem.Invalid(field+".requestId", "%q is answered twice in one batch", r.RequestID)
		}
		seen[r.RequestID] = true
		if err := checkAction(r, field); err != nil {
			return nil, err
		}
		if prev, ok := answered[r.RequestID]; ok {
			if openOnly {
				return nil, fmt.Errorf("%w: request %s", ErrInputClosed, r.RequestID)
			}
			if !sameAnswer(prev.Answer, r) {
				return nil, fmt.Errorf("%w: request %s", ErrInputConflict, r.RequestID)
			}
			continue
		}
		req, ok := open[r.RequestID]
		if !ok {
			if task.Status == InputRequired {
				return nil, fmt.Errorf("%w: %q", ErrUnknownRequest, r.RequestID)
			}
			return nil, fmt.Errorf("%w: task %s is %s", ErrNotInputRequired, task.TaskID, task.Status)
		}
		if req.Kind == wire.KindAuthorization {
			return nil, problem.Invalid(field+".requestId", "request %s is a sign-in: it is answered by the connection callback, not by an answer", r.RequestID)
		}
		if err := accepts(req, r, field); err != nil {
			return nil, err
		}
		fresh = append(fresh, r)
	}
	return fresh, nil
}

func withoutAnswered(open []InputRequest, answered []Answer) []InputRequest {
	done := make(map[string]bool, len(answered))
	for _, r := range answered {
		done[r.RequestID] = true
	}
	var left []InputRequest
	for _, r := range open {
		if !done[r.RequestID] {
			left = append(left, r)
		}
	}
	return left
}
