// Package problem holds the refusals every service shares: a request that
// can never succeed as sent (a field at fault), a record that does not exist
// for the caller, a cursor the service did not hand out, an idempotency key
// used again with another body, a session that takes no more work, a
// requester the caller may not act for, a tool name another principal
// holds, and a store that cannot answer just now. Services return them, wrapped or not; package handlers maps them to
// HTTP in one place. It imports nothing of the project, so every package may
// import it.
package problem

import (
	"errors"
	"fmt"
)

// Refusals shared by the services.
var (
	// ErrNotFound is a record that does not exist, or that the caller may
	// not see: the two answer alike.
	ErrNotFound = errors.New("not found")
	// ErrBadCursor is a cursor the service did not hand out: a list's, or
	// an event id to read a log after.
	ErrBadCursor = errors.New("malformed cursor")
	// ErrIdempotency is an Idempotency-Key used again with another body.
	ErrIdempotency = errors.New("idempotency key reused with a different body")
	// ErrSessionNotActive is a session that is cancelled: it takes no new
	// tasks or hooks.
	ErrSessionNotActive = errors.New("session is not active")
	// ErrTooManyEndpoints is a session or task that holds as many
	// notification endpoints as it may.
	ErrTooManyEndpoints = errors.New("too many notification endpoints")
	// ErrRequesterNotAllowed is a task naming a requester its creator's
	// token may not act for (authz.Principal.CanActFor), or a provider
	// token asked for by a caller who may not act for the task's requester.
	ErrRequesterNotAllowed = errors.New("requester not allowed")
	// ErrToolNameTaken is a tool published under a name another principal
	// publishes a tool by.
	ErrToolNameTaken = errors.New("tool name taken")
	// ErrUnavailable is the store down, slow or busy: nothing was decided,
	// and the caller may try again shortly.
	ErrUnavailable = errors.New("unavailable")
)

// ValidationError is a request that can never succeed as sent: Field names
// the part at fault as a path (requests[0].prompt). More are further parts
// at fault in the same request, when a check names several at once (a tool
// call's arguments against its schema); each is a detail of its own.
type ValidationError struct {
	Field   string
	Message string
	More    []ValidationError
}

func (e *ValidationError) Error() string { return e.Field + ": " + e.Message }

// Invalid is a ValidationError with a formatted message.
func Invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}
