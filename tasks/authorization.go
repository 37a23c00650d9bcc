package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/store"
)

// The task side of provider sign-in. Package connections decides what to
// ask and keeps the tokens; these run its commands on the task.

// Executed reads a task for its executor (or an admin): to anybody else,
// the owner and the requester included when they are not the executor, it
// does not exist.
func (s *Service) Executed(ctx context.Context, p authz.Principal, id string) (Task, error) {
	t, _, err := s.read(ctx, p, id)
	if err != nil {
		return Task{}, err
	}
	if !mayExecute(p, t) {
		return Task{}, problem.ErrNotFound
	}
	return t, nil
}

// Stored reads a task whoever asks: for a capability route that has already
// checked its token.
func (s *Service) Stored(ctx context.Context, id string) (Task, error) {
	part, err := ids.PartitionOf(id, ids.TaskPrefix, s.store.Partitions)
	if err != nil {
		return Task{}, problem.ErrNotFound
	}
	t, _, err := s.load(ctx, part, id)
	return t, err
}

// RequireAuthorization asks the task's requester to sign in, for its executor:
// req is the new request (id, connection, URL and expiry filled) and attempt
// the mapping its URL's attempt token gets, written in the same script as
// the change; askedAt is the clock the attempts are timed by. When a sign-in for the connection is pending already, nothing
// is written and that request is returned instead.
func (s *Service) RequireAuthorization(ctx context.Context, p authz.Principal, id string, req InputRequest,
	attempt store.AnswerToken, askedAt time.Time, idem idem.Key) (InputRequest, error) {
	req.Kind = wire.KindAuthorization
	cmd := Command{Kind: CmdRequireAuthorization, Authorization: &req, AskedAt: askedAt}
	reply, err := s.runWith(ctx, p, id, cmd, idem, []store.AnswerToken{attempt})
	if err != nil {
		return InputRequest{}, err
	}
	t, err := decodeTask(reply.JSON)
	if err != nil {
		return InputRequest{}, err
	}
	if open := t.openAuthorization(req.Connection, askedAt); open != nil {
		return *open, nil
	}
	for _, r := range t.InputRequests { // a replay: the request it made, expired since
		if r.RequestID == req.RequestID {
			return r, nil
		}
	}
	return InputRequest{}, fmt.Errorf("%w: the sign-in request is no longer open", ErrInputClosed)
}

// ResolveAuthorization records how a sign-in ended, as the task's executor
// (who asked for it):
// the request closes and, with nothing else open, the task goes back to
// working. ErrInputClosed: the request is not open (answered, or the task
// ended).
func (s *Service) ResolveAuthorization(ctx context.Context, id, requestID, outcome string) (Task, error) {
	t, err := s.Stored(ctx, id)
	if err != nil {
		return Task{}, err
	}
	cmd := Command{Kind: CmdResolveAuthorization, RequestID: requestID, Outcome: outcome}
	reply, err := s.run(ctx, authz.Principal{ID: t.Executor}, id, cmd, idem.Key{})
	if err != nil {
		if errors.Is(err, ErrTerminal) {
			err = fmt.Errorf("%w: %w", ErrInputClosed, err)
		}
		return Task{}, err
	}
	return decodeTask(reply.JSON)
}

// OpenAuthorization is the task's open sign-in request for a connection, if
// any.
func (t Task) OpenAuthorization(connection string) (InputRequest, bool) {
	for _, r := range t.InputRequests {
		if r.Kind == wire.KindAuthorization && r.Connection == connection && t.Status == InputRequired {
			return r, true
		}
	}
	return InputRequest{}, false
}
