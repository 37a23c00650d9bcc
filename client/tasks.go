package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

// The request and response types below are api/wire's shapes, under the
// client's names. go doc shows an alias's declaration, not the fields, so
// each doc comment lists them (a test keeps the lists whole).

type (
	// Task is the durable record of one piece of background work; Terminal
	// reports whether it has ended. Its fields:
	//
	//	TaskID, SessionID        string
	//	Owner                    string          // the principal that created it
	//	Executor                 string          // who does the work: the owner, or a tool's publisher
	//	Requester                string          // who may answer its questions
	//	Status                   string          // StatusWorking, StatusInputRequired, StatusCompleted, ...
	//	Revision                 int64           // +1 on every change
	//	Kind, Label              string          // free text chosen by its creator
	//	Input, Metadata          json.RawMessage
	//	StatusMessage            string          // the latest progress text, or a reason
	//	Progress                 json.RawMessage
	//	InputRequests            []InputRequest  // only while input_required: the open ones
	//	InputResponses           []InputResponse // every answer so far, oldest first
	//	Result                   json.RawMessage // only when completed
	//	Error                    *TaskError      // only when failed
	//	CancelReason             string          // only when cancelled
	//	ReleasedAt               *time.Time      // the executor stopped its outside work
	//	CreatedAt, LastUpdatedAt time.Time
	//	TTLMs                    *int64          // nil: no limit
	//	ExpiresAt                *time.Time
	//	PollIntervalMs           int64
	//	Notify                   []Endpoint      // only in CreateTask's answer, with the secrets
	Task = wire.Task[time.Time, string]
	// InputRequest is a question for a human (kind ask) or a sign-in the
	// task needs (kind authorization). AnswerURL and AuthorizationURL are
	// filled by the server and never sent. Its fields:
	//
	//	RequestID        string   // empty: the server fills req_...
	//	Kind             string   // KindAsk (the default) or KindAuthorization
	//	Prompt           string
	//	Display          string   // DisplayConfirmation, DisplaySelect or DisplayText
	//	Options          []Choice // a confirmation gets yes and no when it names none
	//	AllowFreeform    bool     // text is taken besides the options
	//	AnswerURL        string   // a question's capability URL (server)
	//	Connection       string   // a sign-in's connection
	//	AuthorizationURL string   // where the requester signs in (server)
	//	ExpiresAt        string   // RFC 3339
	InputRequest = wire.InputRequest
	// Choice is one option (button) of an input request. Its fields:
	//
	//	ID, Label   string
	//	Description string
	//	Style       string // primary, danger or default
	Choice = wire.Option
	// Answer is one answer to one input request, as Respond sends it. Its
	// fields:
	//
	//	RequestID string
	//	OptionID  string // one of the request's options
	//	Text      string // free text, when the request takes it
	//	Action    string // ActionAccept (the default: OptionID or Text required), ActionDecline or ActionCancel (neither)
	Answer = wire.Answer
	// InputResponse is an answer as the task records it, with who gave it,
	// when and through what (set by the server). Its fields:
	//
	//	Answer                // RequestID, OptionID, Text, Action
	//	AnsweredBy  string    // the principal, or AnsweredByAnswerLink
	//	SlackUserID string    // with ViaSlack: the Slack user who acted
	//	AnsweredAt  time.Time
	//	Via         string    // ViaAPI, ViaConsole, ViaAnswerLink, ViaSlack, ...
	InputResponse = wire.InputResponse[time.Time]
	// TaskError is why a task failed. Its fields:
	//
	//	Message string
	//	Data    json.RawMessage
	TaskError = wire.TaskError
)

// CreateTaskInput is the body of POST /v1/tasks. Input is any value that
// encodes as JSON (a json.RawMessage is sent as is). Its fields:
//
//	SessionID      string            // required: one of the caller's active sessions
//	Kind, Label    string            // free text, at most 200 bytes each
//	Input          any               // what the executor needs
//	Metadata       any               // an object
//	TTLMs          *int64            // its lifetime, at least 1000; nil: the server's default
//	PollIntervalMs *int64            // 100 to 3600000; nil: the server's default
//	Requester      string            // who may answer its questions; empty: the caller
//	Notify         []EndpointRequest // the answer shows each one's secret, once
type CreateTaskInput = wire.CreateTask[any]

// CreateTask starts a task in a session. The answer is the receipt: the task
// is durable by the time it returns. The fields in takes are listed under
// CreateTaskInput, those of the answer under Task.
func (c *Client) CreateTask(ctx context.Context, in CreateTaskInput, opts ...CallOption) (*Task, error) {
	return fetch[Task](ctx, c, http.MethodPost, "/v1/tasks", nil, in, opts)
}

// GetTask reads a task.
func (c *Client) GetTask(ctx context.Context, id string, opts ...CallOption) (*Task, error) {
	return fetch[Task](ctx, c, http.MethodGet, taskPath(id, ""), nil, nil, opts)
}

// WaitTask long-polls a task: it answers once the task's revision is above
// afterRevision, or with the task as it is when wait (at most 60 s on the
// server) runs out. With WithKinds it answers only once the task has, after
// afterRevision, an event of those types: progress is silent to a wait for
// EventTaskMessage, EventInputRequested and EventTaskTerminal.
func (c *Client) WaitTask(ctx context.Context, id string, afterRevision int64, wait time.Duration, opts ...CallOption) (*Task, error) {
	q := url.Values{}
	q.Set("afterRevision", strconv.FormatInt(afterRevision, 10))
	setWait(q, wait)
	setKinds(q, callOf(opts).kinds)
	return fetch[Task](ctx, c, http.MethodGet, taskPath(id, ""), q, nil, opts)
}

// Result waits up to wait for the task to end. terminal is true (HTTP 200)
// when it has ended, false (HTTP 202) when the wait ran out first; the task
// is returned either way.
func (c *Client) Result(ctx context.Context, id string, wait time.Duration, opts ...CallOption) (task *Task, terminal bool, err error) {
	q := url.Values{}
	setWait(q, wait)
	var t Task
	status, err := c.do(ctx, http.MethodGet, taskPath(id, "/result"), q, nil, &t, opts)
	if err != nil {
		return nil, false, err
	}
	return &t, status == http.StatusOK, nil
}

// ListTasksParams narrows and pages GET /v1/tasks.
type ListTasksParams struct {
	SessionID string
	Status    string
	Kind      string
	Role      string // RoleOwner (the default when empty) or RoleExecutor
	Limit     int    // 0: the server's default
	Cursor    string // NextCursor of the previous page
}

// Roles of ListTasksParams: the tasks the caller owns, or those it
// executes (how an executor finds its work again after a restart).
const (
	RoleOwner    = "owner"
	RoleExecutor = "executor"
)

// ListTasks lists the caller's tasks, or with RoleExecutor the tasks it
// executes, newest first.
func (c *Client) ListTasks(ctx context.Context, p ListTasksParams, opts ...CallOption) (*Page[Task], error) {
	q := url.Values{}
	setNonEmpty(q, "sessionId", p.SessionID)
	setNonEmpty(q, "status", p.Status)
	setNonEmpty(q, "kind", p.Kind)
	setNonEmpty(q, "role", p.Role)
	setPaging(q, p.Limit, p.Cursor)
	return fetch[Page[Task]](ctx, c, http.MethodGet, "/v1/tasks", q, nil, opts)
}

// TaskEvents reads the task's event log (only the events of some types with
// WithKinds).
func (c *Client) TaskEvents(ctx context.Context, id string, p EventsParams, opts ...CallOption) (*EventPage, error) {
	return c.events(ctx, taskPath(id, "/events"), p, opts)
}

// ProgressInput is a progress report; nil fields are left as they are.
type ProgressInput struct {
	StatusMessage *string `json:"statusMessage,omitempty"`
	Progress      any     `json:"progress,omitempty"`
}

// Progress reports progress. It does not wake the parent; Message does.
func (c *Client) Progress(ctx context.Context, id string, in ProgressInput, opts ...CallOption) (*Task, error) {
	return c.command(ctx, id, "/progress", in, opts)
}

// Message posts a message (with optional data) that wakes the parent.
func (c *Client) Message(ctx context.Context, id, text string, data any, opts ...CallOption) (*Task, error) {
	body := struct {
		Text string `json:"text"`
		Data any    `json:"data,omitempty"`
	}{text, data}
	return c.command(ctx, id, "/messages", body, opts)
}

// inputRequestBody is an InputRequest as sent: without the fields the
// server fills.
type inputRequestBody struct {
	RequestID     string   `json:"requestId,omitempty"`
	Kind          string   `json:"kind,omitempty"`
	Prompt        string   `json:"prompt"`
	Display       string   `json:"display,omitempty"`
	Options       []Choice `json:"options,omitempty"`
	AllowFreeform bool     `json:"allowFreeform,omitempty"`
	Connection    string   `json:"connection,omitempty"`
	ExpiresAt     string   `json:"expiresAt,omitempty"`
}

// RequireInput asks for input: the task moves to input_required with the
// new requests.
func (c *Client) RequireInput(ctx context.Context, id string, reqs []InputRequest, opts ...CallOption) (*Task, error) {
	body := struct {
		Requests []inputRequestBody `json:"requests"`
	}{Requests: make([]inputRequestBody, len(reqs))}
	for i, r := range reqs {
		body.Requests[i] = inputRequestBody{
			RequestID: r.RequestID, Kind: r.Kind, Prompt: r.Prompt, Display: r.Display, Options: r.Options,
			AllowFreeform: r.AllowFreeform, Connection: r.Connection, ExpiresAt: r.ExpiresAt,
		}
	}
	return c.command(ctx, id, "/input-requests", body, opts)
}

// Respond answers input requests, all or nothing, as the client's
// principal: the task records each answer with it, the time and via "api".
// Repeating an answer already recorded is a safe no-op.
func (c *Client) Respond(ctx context.Context, id string, answers []Answer, opts ...CallOption) (*Task, error) {
	body := struct {
		Responses []Answer `json:"responses"`
	}{answers}
	if body.Responses == nil {
		body.Responses = []Answer{}
	}
	return c.command(ctx, id, "/input", body, opts)
}

// Complete ends the task with a result (any value that encodes as JSON).
func (c *Client) Complete(ctx context.Context, id string, result any, opts ...CallOption) (*Task, error) {
	body := struct {
		Result any `json:"result,omitempty"`
	}{result}
	return c.command(ctx, id, "/complete", body, opts)
}

// Fail ends the task as failed.
func (c *Client) Fail(ctx context.Context, id, message string, data any, opts ...CallOption) (*Task, error) {
	type taskError struct {
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	body := struct {
		Error taskError `json:"error"`
	}{taskError{message, data}}
	return c.command(ctx, id, "/fail", body, opts)
}

// Cancel cancels the task. Cancelling a task that has ended answers it as it
// is. With WithReleaseWait it answers once the executor has released the
// task (ReleasedAt is set), or with the task as it is when the wait runs
// out.
func (c *Client) Cancel(ctx context.Context, id, reason string, opts ...CallOption) (*Task, error) {
	body := struct {
		Reason string `json:"reason,omitempty"`
	}{reason}
	q := url.Values{}
	if w := callOf(opts).releaseWait; w > 0 {
		q.Set("wait", w.String())
	}
	var t Task
	if _, err := c.do(ctx, http.MethodPost, taskPath(id, "/cancel"), q, body, &t, opts); err != nil {
		return nil, err
	}
	return &t, nil
}

// Release tells the service that the executor has stopped the task's
// outside work: only once the task has ended (else 409 task_not_terminal).
// It sets ReleasedAt and appends task.released; a repeat answers the task
// unchanged.
func (c *Client) Release(ctx context.Context, id string, opts ...CallOption) (*Task, error) {
	return c.command(ctx, id, "/release", struct{}{}, opts)
}

// command posts one task command and reads the task it answers with.
func (c *Client) command(ctx context.Context, id, route string, body any, opts []CallOption) (*Task, error) {
	return fetch[Task](ctx, c, http.MethodPost, taskPath(id, route), nil, body, opts)
}

func taskPath(id, suffix string) string { return "/v1/tasks/" + segment(id) + suffix }

// RenderFormatSlack is the format Render knows: a Slack Block Kit message,
// {"blocks": [...], "text": "..."}.
const RenderFormatSlack = "slack"

// Render asks for a task as a channel shows it (the owner or the
// requester may): for RenderFormatSlack, the Block Kit message with the
// open requests as buttons and inputs, or the outcome once nothing is open.
// The JSON is as the server sent it, to post to the channel unchanged.
func (c *Client) Render(ctx context.Context, taskID, format string, opts ...CallOption) (json.RawMessage, error) {
	out, err := fetch[json.RawMessage](ctx, c, http.MethodGet, taskPath(taskID, "/render"), url.Values{"format": {format}}, nil, opts)
	if err != nil {
		return nil, err
	}
	return *out, nil
}
