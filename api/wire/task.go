package wire

import "encoding/json"

// Task statuses.
const (
	StatusWorking       = "working"
	StatusInputRequired = "input_required"
	StatusCompleted     = "completed"
	StatusFailed        = "failed"
	StatusCancelled     = "cancelled"
)

// TaskStatuses are every task status.
var TaskStatuses = []string{StatusWorking, StatusInputRequired, StatusCompleted, StatusFailed, StatusCancelled}

// Terminal reports whether a task with this status is completed, failed or
// cancelled: no command changes it any more.
func Terminal[S ~string](status S) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCancelled
}

// Input request kinds and displays.
const (
	KindAsk           = "ask"
	KindAuthorization = "authorization"

	DisplayConfirmation = "confirmation"
	DisplaySelect       = "select"
	DisplayText         = "text"
)

// CreateTask is the body of POST /v1/tasks. J is the Go type of Input and
// Metadata (see the package doc). Requester defaults to the caller; naming
// anybody else needs the delegate scope or that principal in the act_for
// claim of the caller's token (else 403 requester_not_allowed).
type CreateTask[J any] struct {
	SessionID      string            `json:"sessionId"`
	Kind           string            `json:"kind,omitempty"`
	Label          string            `json:"label,omitempty"`
	Input          J                 `json:"input,omitempty"`
	Metadata       J                 `json:"metadata,omitempty"`
	TTLMs          *int64            `json:"ttlMs,omitempty"`
	PollIntervalMs *int64            `json:"pollIntervalMs,omitempty"`
	Requester      string            `json:"requester,omitempty"`
	Notify         []EndpointRequest `json:"notify,omitempty"` // the answer shows each one's secret, once
}

// Task is the durable record of one piece of background work, as the API
// shows it. T is the Go type of its timestamps and S of its status (see the
// package doc).
type Task[T any, S ~string] struct {
	TaskID         string             `json:"taskId"`
	SessionID      string             `json:"sessionId"`
	Owner          string             `json:"owner"`
	Executor       string             `json:"executor"` // who does the work and reports on it; the owner unless the task was started another way (a tool call)
	Requester      string             `json:"requester"`
	Status         S                  `json:"status"`
	Revision       int64              `json:"revision"`
	Kind           string             `json:"kind,omitempty"`
	Label          string             `json:"label,omitempty"`
	Input          json.RawMessage    `json:"input,omitempty"`
	Metadata       json.RawMessage    `json:"metadata,omitempty"`
	StatusMessage  string             `json:"statusMessage,omitempty"`
	Progress       json.RawMessage    `json:"progress,omitempty"`
	InputRequests  []InputRequest     `json:"inputRequests,omitempty"`
	InputResponses []InputResponse[T] `json:"inputResponses"`
	Result         json.RawMessage    `json:"result,omitempty"`
	Error          *TaskError         `json:"error,omitempty"`
	CancelReason   string             `json:"cancelReason,omitempty"`
	ReleasedAt     *T                 `json:"releasedAt,omitempty"` // the executor stopped its outside work (terminal tasks only)
	CreatedAt      T                  `json:"createdAt"`
	LastUpdatedAt  T                  `json:"lastUpdatedAt"`
	TTLMs          *int64             `json:"ttlMs"`
	ExpiresAt      *T                 `json:"expiresAt"`
	PollIntervalMs int64              `json:"pollIntervalMs"`
	// Notify is the task's notification endpoints, secrets included: only
	// in the answer that created them. GET .../notify lists them later.
	Notify []Endpoint `json:"notify,omitempty"`
}

// Terminal reports whether the task is completed, failed or cancelled: no
// command changes it any more.
func (t *Task[T, S]) Terminal() bool { return Terminal(t.Status) }

// TaskError is why a task failed.
type TaskError struct {
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// InputRequest is a question for a human (kind ask) or a sign-in the task
// needs (kind authorization). The server fills RequestID when it is empty,
// Kind and Display by default, and AnswerURL and AuthorizationURL always: a
// client never sends the last two.
type InputRequest struct {
	RequestID        string   `json:"requestId"`
	Kind             string   `json:"kind"`
	Prompt           string   `json:"prompt"`
	Display          string   `json:"display,omitempty"`
	Options          []Option `json:"options,omitempty"`
	AllowFreeform    bool     `json:"allowFreeform,omitempty"`
	AnswerURL        string   `json:"answerUrl,omitempty"`
	Connection       string   `json:"connection,omitempty"`
	AuthorizationURL string   `json:"authorizationUrl,omitempty"`
	ExpiresAt        string   `json:"expiresAt,omitempty"`
}

// Option is one option (a button) of an input request.
type Option struct {
	ID          string `json:"id"`
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
	Style       string `json:"style,omitempty"` // primary, danger or default
}

// Answer actions. An answer without one accepts.
const (
	ActionAccept  = "accept"  // chose an option or wrote text
	ActionDecline = "decline" // said no to the question without choosing
	ActionCancel  = "cancel"  // dismissed the question
)

// Where an answer came from: InputResponse.Via.
const (
	ViaAPI        = "api"         // POST /v1/tasks/{taskId}/input with a bearer token
	ViaConsole    = "console"     // the same route, from the web console (header X-Taskhook-Via: console)
	ViaAnswerLink = "answer_link" // the answer URL, as JSON or through its answer page
	ViaSlack      = "slack"       // a signed Slack interaction
	ViaMCP        = "mcp"
	ViaA2A        = "a2a"
	ViaSignIn     = "sign_in" // a sign-in request, closed by its connection's callback
)

// AnsweredByAnswerLink is the answeredBy of an answer given through an
// answer URL: the URL is the credential, so no principal is known.
const AnsweredByAnswerLink = "answer-link"

// HeaderVia is the request header by which a client of POST
// /v1/tasks/{taskId}/input says which face it is (ViaAPI, the default, or
// ViaConsole).
const HeaderVia = "X-Taskhook-Via"

// Answer is one answer to one input request, as a client sends it. With
// Action accept (or none) OptionID or Text (or both) is required; decline
// and cancel carry neither.
type Answer struct {
	RequestID string `json:"requestId"`
	OptionID  string `json:"optionId,omitempty"`
	Text      string `json:"text,omitempty"`
	Action    string `json:"action,omitempty"`
}

// InputResponse is an answer as the task records it: what was answered, and
// who, when and through what, which the server sets and no client sends.
// T is the Go type of AnsweredAt.
type InputResponse[T any] struct {
	Answer
	AnsweredBy  string `json:"answeredBy"`            // the principal, or AnsweredByAnswerLink
	SlackUserID string `json:"slackUserId,omitempty"` // the Slack user who clicked (Via slack)
	AnsweredAt  T      `json:"answeredAt"`
	Via         string `json:"via"`
}
