package client

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

// Error is a non-2xx answer of the server.
type Error struct {
	Status     int           // HTTP status
	Code       string        // the contract's code; empty when the body was not a taskhook error
	Message    string        // human-readable
	Details    []Detail      // field problems of an invalid_request
	Task       *Task         // the task as it is, on the 409s of task commands
	ErrorID    string        // of an internal error, as the server logged it
	RetryAfter time.Duration // from Retry-After (429, 503); 0 when absent
	RequestID  string        // X-Request-Id of the answer

	retryAfterSent bool // the answer had a Retry-After, even one of 0
}

// Detail is one field problem of an invalid_request. Its fields:
//
//	Field   string // as the body names it: "responses[0].optionId"
//	Message string
type Detail = wire.Detail

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("taskhook: ")
	if e.Code != "" {
		b.WriteString(e.Code)
	} else {
		b.WriteString("HTTP")
	}
	b.WriteString(" (")
	b.WriteString(strconv.Itoa(e.Status))
	b.WriteString(")")
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.ErrorID != "" {
		b.WriteString(" [error id ")
		b.WriteString(e.ErrorID)
		b.WriteString("]")
	}
	if e.RequestID != "" {
		b.WriteString(" [request ")
		b.WriteString(e.RequestID)
		b.WriteString("]")
	}
	return b.String()
}

// IsCode reports whether err is (or wraps) an *Error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// errorBody is {"error": {...}}.
type errorBody struct {
	Error *struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Details []Detail `json:"details"`
		Task    *Task    `json:"task"`
		ErrorID string   `json:"errorId"`
	} `json:"error"`
}

// decodeError reads a non-2xx answer into an *Error. A body that is not a
// taskhook error (a proxy's page, say) keeps the status and a short excerpt
// as the message.
func (c *Client) decodeError(resp *http.Response) *Error {
	e := &Error{
		Status:     resp.StatusCode,
		RequestID:  resp.Header.Get("X-Request-Id"),
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),

		retryAfterSent: resp.Header.Get("Retry-After") != "",
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body errorBody
	if json.Unmarshal(raw, &body) == nil && body.Error != nil && body.Error.Code != "" {
		e.Code, e.Message, e.Details = body.Error.Code, body.Error.Message, body.Error.Details
		e.Task, e.ErrorID = body.Error.Task, body.Error.ErrorID
	} else {
		e.Message = excerpt(raw)
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	if c.token != "" { // whatever the server or a proxy echoed, the token stays out of errors
		e.Message = strings.ReplaceAll(e.Message, c.token, "[redacted]")
		for i := range e.Details {
			e.Details[i].Message = strings.ReplaceAll(e.Details[i].Message, c.token, "[redacted]")
		}
	}
	return e
}

// excerpt is the start of a body that is not a taskhook error, on one line.
func excerpt(raw []byte) string {
	const max = 200
	s := strings.Join(strings.Fields(string(raw)), " ")
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "..."
	}
	return s
}

// parseRetryAfter reads Retry-After as seconds or as an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
