// Package tasks holds the task record, the pure state machine that decides
// every change to it, and the service that applies changes through the store.
package tasks

import (
	"encoding/json"

	"github.com/taskhook/taskhook/events"
)

// Status is where a task stands.
type Status string

const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether no command can change the task any more.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Task is the durable record, exactly as the API shows it.
type Task struct {
	TaskID         string          `json:"taskId"`
	SessionID      string          `json:"sessionId"`
	Owner          string          `json:"owner"`
	Requester      string          `json:"requester"`
	Status         Status          `json:"status"`
	Revision       int64           `json:"revision"`
	Kind           string          `json:"kind,omitempty"`
	Label          string          `json:"label,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	Progress       json.RawMessage `json:"progress,omitempty"`
	InputRequests  []InputRequest  `json:"inputRequests,omitempty"`
	InputResponses []InputResponse `json:"inputResponses"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *TaskError      `json:"error,omitempty"`
	CancelReason   string          `json:"cancelReason,omitempty"`
	CreatedAt      events.Time     `json:"createdAt"`
	LastUpdatedAt  events.Time     `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	ExpiresAt      *events.Time    `json:"expiresAt"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
}

// TaskError is why a task failed.
type TaskError struct {
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Request kinds and displays.
const (
	KindAsk           = "ask"
	KindAuthorization = "authorization"

	DisplayConfirmation = "confirmation"
	DisplaySelect       = "select"
	DisplayText         = "text"
)

// InputRequest is a question the executor asks a human (or a sign-in it needs).
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

// Option is one button of a request.
type Option struct {
	ID          string `json:"id"`
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
	Style       string `json:"style,omitempty"`
}

// InputResponse is one answer to one request.
type InputResponse struct {
	RequestID string `json:"requestId"`
	OptionID  string `json:"optionId,omitempty"`
	Text      string `json:"text,omitempty"`
}

// sameAnswer reports whether two answers to one request say the same thing.
func (r InputResponse) sameAnswer(o InputResponse) bool {
	return r.OptionID == o.OptionID && r.Text == o.Text
}
