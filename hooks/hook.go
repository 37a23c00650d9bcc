// Package hooks holds hooks: capability URLs that outside systems post
// webhooks to, each with a durable queue that a task reads through consumer
// groups with at-least-once delivery. It checks signatures of posts, dedupes
// by the provider's event id and rate-limits per hook; the store does each
// ingest and each read in one script, and decides there (hook_closed_reason)
// whether a hook still takes posts, for ingest and reads alike. What a hook
// bound to a task may do is asked of the task service (Tasks).
//
// It imports store, idem, paging, waits, ids, tokens, cache, events, authz,
// metrics, problem and api/wire, and tasks for the task service it asks;
// never handlers or sessions.
package hooks

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/taskhook/taskhook/problem"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/events"
)

// Statuses of a hook.
const (
	Open   = wire.HookOpen
	Closed = wire.HookClosed
)

type (
	// Hook is the record, as the API shows it. It never holds the token or
	// the verify secret.
	Hook = wire.Hook[events.Time]
	// Created is the answer to a create: the hook with its token and
	// ingest URL, shown this once.
	Created = wire.CreatedHook[events.Time]
	// Response is the static answer a hook gives an accepted post
	// instead of the default 202 {ok, eventId, duplicate}.
	Response = wire.HookResponse
)

// viewOf is a hook's Verify as the API shows it: without its secret.
func viewOf(v *Verify) *wire.HookVerify {
	if v == nil {
		return nil
	}
	r := v.Redacted()
	return &wire.HookVerify{Scheme: r.Scheme, Header: r.Header, Encoding: r.Encoding, ToleranceSeconds: r.Tolerance}
}

// CreateInput is the body of POST /v1/hooks.
type CreateInput = wire.CreateHook[Verify]

// ingestConfig is what the ingest route needs of a hook, kept in the
// hook's hash beside the record. It holds the verify secret and is never
// returned. None of it changes after the hook is made, so replicas cache it.
// In the store the secret is sealed (SealedSecret, Verify.Secret empty); a
// config written before secrets were sealed holds it in Verify.Secret.
type ingestConfig struct {
	HookID       string    `json:"h"`
	TaskID       string    `json:"t,omitempty"`
	SessionID    string    `json:"s"`
	TokenHash    string    `json:"th"`
	Verify       *Verify   `json:"v,omitempty"`
	SealedSecret string    `json:"vs,omitempty"`
	Response     *Response `json:"r,omitempty"`
	DedupeHeader string    `json:"d,omitempty"`
}

// Errors.
var (
	ErrUnknownToken = errors.New("unknown callback token")
	ErrClosed       = errors.New("hook closed")
	ErrRateLimited  = errors.New("hook rate limit exceeded")
	ErrTaskTerminal = errors.New("task has ended")
)

// ClosedError is a post to a hook that takes no more requests; Reason
// is closed, expired, task_terminal or session_cancelled.
type ClosedError struct{ Reason string }

func (e *ClosedError) Error() string { return "hook closed: " + e.Reason }
func (e *ClosedError) Unwrap() error { return ErrClosed }

// RateLimitedError is a post over the hook's rate.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string { return "hook rate limit exceeded" }
func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }

// Limits of a create.
const (
	maxLabel        = 200
	maxResponseBody = 4 << 10
	maxContentType  = 200
	minTTL          = time.Second
	defaultResponse = "text/plain; charset=utf-8"
)

// validateCreate checks a create body on its own, before any state is read.
func validateCreate(in *CreateInput) error {
	if in.TaskID == "" && in.SessionID == "" {
		return problem.Invalid("taskId", "taskId or sessionId is required")
	}
	if len(in.Label) > maxLabel {
		return problem.Invalid("label", "at most %d bytes", maxLabel)
	}
	if in.TTLMs != nil && *in.TTLMs < minTTL.Milliseconds() {
		return problem.Invalid("ttlMs", "must be at least %d", minTTL.Milliseconds())
	}
	if in.Verify != nil {
		if err := in.Verify.Validate(); err != nil {
			var verr *VerifyError
			if errors.As(err, &verr) {
				return &problem.ValidationError{Field: "verify." + verr.Field, Message: verr.Reason}
			}
			return problem.Invalid("verify", "is not valid")
		}
	}
	if in.DedupeHeader != "" && (len(in.DedupeHeader) > maxHeaderNameLen || !validHeaderName(in.DedupeHeader)) {
		return problem.Invalid("dedupeHeader", "is not a valid HTTP header name")
	}
	// Its value is stored with every event (providerEventId): never a
	// credential or a signature, which keptHeaders never stores either.
	if name := http.CanonicalHeaderKey(in.DedupeHeader); in.DedupeHeader != "" && (secretHeaders[name] ||
		(in.Verify != nil && in.Verify.Header != "" && http.CanonicalHeaderKey(in.Verify.Header) == name)) {
		return problem.Invalid("dedupeHeader", "must not name a credential or signature header")
	}
	if r := in.Response; r != nil {
		if r.Status == 0 {
			r.Status = 200
		}
		if r.Status < 200 || r.Status > 299 {
			return problem.Invalid("response.status", "must be 200 to 299")
		}
		if (r.Status == 204 || r.Status == 205) && r.Body != "" {
			return problem.Invalid("response.body", "must be empty with status %d", r.Status)
		}
		if len(r.Body) > maxResponseBody {
			return problem.Invalid("response.body", "at most %d bytes", maxResponseBody)
		}
		if r.ContentType == "" {
			r.ContentType = defaultResponse
		}
		ct, err := responseContentType(r.ContentType)
		if err != nil {
			return err
		}
		r.ContentType = ct
	}
	return nil
}

// retryAfterSeconds renders a wait for Retry-After: whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

// RetryAfterHeader is the Retry-After value of a rate-limited answer.
func (e *RateLimitedError) RetryAfterHeader() string { return retryAfterSeconds(e.RetryAfter) }
