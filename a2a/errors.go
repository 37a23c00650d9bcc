package a2a

import (
	"context"
	"errors"
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/tasks"
)

// protocolError tells a service's refusal in A2A's words, which each
// binding writes in its own form. A task the caller may not see answers
// exactly as a missing one (TaskNotFound). Anything unexpected is logged
// and answered as an internal error with no detail.
func (h *handler) protocolError(ctx context.Context, err error) error {
	var ae *a2a.Error
	var invalid *problem.ValidationError
	var state *tasks.StateError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return err
	case a2a.ErrorReason(err) != "INTERNAL_ERROR":
		return err // one of a2a's own
	case errors.Is(err, problem.ErrNotFound):
		return a2a.ErrTaskNotFound
	case errors.As(err, &invalid):
		return a2a.NewError(a2a.ErrInvalidParams, invalid.Error())
	case errors.Is(err, problem.ErrBadCursor):
		return a2a.NewError(a2a.ErrInvalidParams, "pageToken: not a token this server handed out")
	case errors.As(err, &state):
		return a2a.NewError(a2a.ErrUnsupportedOperation, state.Error())
	case errors.Is(err, problem.ErrUnavailable):
		return a2a.NewError(a2a.ErrInternalError, "the store is unavailable; try again shortly")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	h.log.ErrorContext(ctx, "a2a request failed", slog.Any("err", err))
	return a2a.NewError(a2a.ErrInternalError, "internal error")
}

// outcome is the metric label of a request's end: "ok" or the A2A reason.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return a2a.ErrorReason(err)
}
