package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/hooks"
	"github.com/taskhook/taskhook/jsonhtml"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/requestid"
	"github.com/taskhook/taskhook/requestlog"
	"github.com/taskhook/taskhook/tasks"
)

const (
	retryAfterUnavailable = "1"
	statusClientClosed    = 499
	notFoundMessage       = "no such resource"
)

// APIError is an error answer: status, code, message and any extra members.
type APIError struct {
	Status     int
	Code       string
	Message    string
	Extra      map[string]any
	RetryAfter string // Retry-After of a 429 (a 503 always has one)
	// BearerError is the RFC 6750 error code of an unauthorized answer:
	// invalid_token when a token was sent and refused; empty when none was.
	BearerError string
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

func apiError(status int, code, msg string) *APIError {
	return &APIError{Status: status, Code: code, Message: msg}
}

// Detail is one field problem of an invalid_request.
type Detail = wire.Detail

func invalidRequest(field, msg string) *APIError {
	return &APIError{Status: http.StatusBadRequest, Code: wire.CodeInvalidRequest, Message: field + ": " + msg,
		Extra: map[string]any{"details": []Detail{{Field: field, Message: msg}}}}
}

// invalidFields is the invalid_request of a validation that names several
// fields: a detail each, the message naming the first.
func invalidFields(verr *problem.ValidationError) *APIError {
	e := invalidRequest(verr.Field, verr.Message)
	if len(verr.More) == 0 {
		return e
	}
	details := []Detail{{Field: verr.Field, Message: verr.Message}}
	for _, m := range verr.More {
		details = append(details, Detail{Field: m.Field, Message: m.Message})
	}
	e.Message += fmt.Sprintf(" (and %d more)", len(verr.More))
	e.Extra["details"] = details
	return e
}

// errNotFound is the one answer for a missing id and for somebody else's:
// same status, same body.
var errNotFound = apiError(http.StatusNotFound, wire.CodeNotFound, notFoundMessage)

// toAPIError is the one place that maps domain errors to HTTP.
func toAPIError(err error) *APIError {
	var api *APIError
	if errors.As(err, &api) {
		return api
	}
	var verr *problem.ValidationError
	if errors.As(err, &verr) {
		return invalidFields(verr)
	}
	if e := connectionError(err); e != nil {
		return e
	}
	if e := bodyError(err); e != nil {
		return e
	}
	var closed *hooks.ClosedError
	if errors.As(err, &closed) {
		return &APIError{Status: http.StatusGone, Code: wire.CodeHookClosed, Message: "the hook takes no more requests",
			Extra: map[string]any{"reason": closed.Reason}}
	}
	var limited *hooks.RateLimitedError
	if errors.As(err, &limited) {
		return &APIError{Status: http.StatusTooManyRequests, Code: wire.CodeRateLimited,
			Message: "too many requests to this hook; retry later", RetryAfter: limited.RetryAfterHeader()}
	}
	if errors.Is(err, hooks.ErrSignatureInvalid) {
		// The text names what was wrong (a missing header, a stale
		// timestamp), never a secret or a signature.
		return apiError(http.StatusUnauthorized, wire.CodeSignatureInvalid, err.Error())
	}
	var tooMany *tasks.TooManyTasksError
	if errors.As(err, &tooMany) {
		return &APIError{Status: http.StatusTooManyRequests, Code: wire.CodeTooManyTasks, Message: tooMany.Error(),
			Extra: map[string]any{"limit": tooMany.Max}, RetryAfter: "5"}
	}
	var tooLarge *tasks.TooLargeError
	if errors.As(err, &tooLarge) {
		return &APIError{Status: http.StatusRequestEntityTooLarge, Code: wire.CodeTaskTooLarge, Message: tooLarge.Error(),
			Extra: map[string]any{"limit": tooLarge.Max}}
	}
	var state *tasks.StateError
	if errors.As(err, &state) {
		e := &APIError{Status: http.StatusConflict, Message: state.Error(), Extra: map[string]any{"task": state.Task}}
		switch {
		case errors.Is(err, tasks.ErrTerminal):
			e.Code = wire.CodeTaskTerminal
		case errors.Is(err, tasks.ErrNotInputRequired):
			e.Code = wire.CodeNotInputRequired
		case errors.Is(err, tasks.ErrUnknownRequest):
			e.Code = wire.CodeUnknownRequest
		case errors.Is(err, tasks.ErrInputConflict):
			e.Code = wire.CodeInputConflict
		case errors.Is(err, tasks.ErrNotTerminal):
			e.Code = wire.CodeTaskNotTerminal
		default:
			e.Code = wire.CodeInternal
			e.Status = http.StatusInternalServerError
		}
		return e
	}
	switch {
	case errors.Is(err, problem.ErrNotFound), errors.Is(err, hooks.ErrUnknownToken):
		return errNotFound
	case errors.Is(err, tasks.ErrInputClosed):
		return apiError(http.StatusGone, wire.CodeInputClosed, "the input request is no longer open")
	case errors.Is(err, hooks.ErrTaskTerminal):
		return apiError(http.StatusConflict, wire.CodeTaskTerminal, "the task has ended")
	case errors.Is(err, problem.ErrRequesterNotAllowed):
		return apiError(http.StatusForbidden, wire.CodeRequesterNotAllowed,
			"this token may not act for that requester: naming another principal needs the delegate scope or that principal in the act_for claim")
	case errors.Is(err, problem.ErrSessionNotActive):
		return apiError(http.StatusConflict, wire.CodeSessionNotActive, "the session is not active")
	case errors.Is(err, problem.ErrTooManyEndpoints):
		return apiError(http.StatusConflict, wire.CodeTooManyEndpoints, "the session or task holds as many notification endpoints as it may (10)")
	case errors.Is(err, problem.ErrToolNameTaken):
		return apiError(http.StatusConflict, wire.CodeToolNameTaken, "another principal publishes a tool by this name")
	case errors.Is(err, problem.ErrIdempotency):
		return apiError(http.StatusConflict, wire.CodeIdempotencyConflict, "this Idempotency-Key was used with a different request body")
	case errors.Is(err, problem.ErrBadCursor):
		return invalidRequest("cursor", "is not a cursor this service gave out")
	case errors.Is(err, problem.ErrUnavailable):
		return apiError(http.StatusServiceUnavailable, wire.CodeStoreUnavailable, "the store is unavailable; retry shortly")
	}
	return nil
}

// writeError answers with the error body. An unknown error is a 500 with an
// errorId that is also logged; its text never reaches the client.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if e, ok := a.answerOf(w, r, err); ok {
		writeAPIError(w, e)
	}
}

// answerOf is the answer to err, for the JSON body and the HTML page alike.
// ok is false when the client went away mid-request: nobody reads an answer,
// and it is not a server error (499 is written, as the request log and
// metrics show). An unknown error is a 500 with an errorId that is logged.
func (a *api) answerOf(w http.ResponseWriter, r *http.Request, err error) (*APIError, bool) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		w.WriteHeader(statusClientClosed)
		return nil, false
	}
	if e := toAPIError(err); e != nil {
		return e, true
	}
	id := newErrorID()
	a.log.ErrorContext(r.Context(), "internal error", "errorId", id, "requestId", requestid.From(r.Context()),
		"route", requestlog.Route(r), "err", err)
	return &APIError{Status: http.StatusInternalServerError, Code: wire.CodeInternal,
		Message: "internal error", Extra: map[string]any{"errorId": id}}, true
}

func writeAPIError(w http.ResponseWriter, e *APIError) {
	body := map[string]any{"code": e.Code, "message": e.Message}
	for k, v := range e.Extra {
		body[k] = v
	}
	if e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
	}
	switch e.Status {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", retryAfterUnavailable)
	case http.StatusUnauthorized:
		if e.Code == wire.CodeUnauthorized {
			challenge := `Bearer realm="taskhook"`
			if e.BearerError != "" {
				// The message is one of the verifier's fixed reasons.
				challenge += `, error="` + e.BearerError + `", error_description="` + strings.ReplaceAll(e.Message, `"`, "'") + `"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
		}
	}
	writeJSON(w, e.Status, map[string]any{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		slog.Error("encode response", "err", err)
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(jsonhtml.Unescape(b))
}

func newErrorID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "err_" + hex.EncodeToString(b)
}
