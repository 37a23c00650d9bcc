package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tasks"
)

// Call starts a task by calling the tool name as p: the task's owner is p,
// its executor the tool's, its kind the tool's name and its input the
// arguments, and the tool's endpoint is one of its notification endpoints.
// Without a session id the task goes to p's default session. A tool p may
// not call is problem.ErrNotFound; arguments outside the tool's input
// schema are a *problem.ValidationError naming each field ("arguments.city").
// The reply is the task, as a create answers it; a repeat under the same
// key replays it.
func (s *Service) Call(ctx context.Context, p authz.Principal, name string, in CallInput, key idem.Key) (idem.Reply, error) {
	reply, err := s.call(ctx, p, name, in, key)
	s.metrics.ToolCalls.WithLabelValues(callOutcome(reply, err)).Inc()
	return reply, err
}

func (s *Service) call(ctx context.Context, p authz.Principal, name string, in CallInput, key idem.Key) (idem.Reply, error) {
	if err := checkName(name); err != nil {
		return idem.Reply{}, err
	}
	if len(in.Arguments) == 0 || string(in.Arguments) == "null" {
		return idem.Reply{}, problem.Invalid("arguments", "is required: an object ({} for none)")
	}
	rec, err := s.toolToCall(ctx, p, name)
	if err != nil {
		return idem.Reply{}, err
	}
	sch, err := s.inputSchema(name, rec)
	if err != nil {
		return idem.Reply{}, err
	}
	if err := validateArguments(sch, in.Arguments); err != nil {
		return idem.Reply{}, err
	}
	return s.tasks.CreateWith(ctx, p, tasks.CreateInput{
		SessionID: in.SessionID, Kind: name, Label: in.Label, Input: in.Arguments,
		TTLMs: in.TTLMs, Requester: in.Requester, Notify: in.Notify,
	}, tasks.Start{
		Executor:       rec.Executor,
		Endpoints:      store.NewEndpoints{List: rec.Endpoints, Secrets: rec.Secrets},
		DefaultSession: in.SessionID == "",
	}, key)
}

// inputSchema is the tool's input schema compiled, from this replica's
// cache when the same revision of the tool was compiled before (a
// replaced or re-created tool has another key).
func (s *Service) inputSchema(name string, rec store.ToolRecord) (*jsonschema.Schema, error) {
	key := name + "\x00" + strconv.FormatInt(rec.Created, 10) + "\x00" + strconv.FormatInt(rec.Revision, 10)
	if sch, ok := s.schemas.Get(key); ok {
		return sch, nil
	}
	var t struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(rec.JSON, &t); err != nil {
		return nil, fmt.Errorf("decode tool %s: %w", name, err)
	}
	sch, err := compileSchema(t.InputSchema, "inputSchema")
	if err != nil {
		// It compiled when it was published: not the caller's fault.
		return nil, fmt.Errorf("compile the input schema of tool %s: %v", name, err)
	}
	s.schemas.Put(key, sch, nil)
	return sch, nil
}

// callOutcome is a call's outcome as the metric counts it.
func callOutcome(reply idem.Reply, err error) string {
	var verr *problem.ValidationError
	switch {
	case err == nil && reply.Replayed:
		return "replayed"
	case err == nil:
		return "started"
	case errors.As(err, &verr) && (verr.Field == "arguments" || strings.HasPrefix(verr.Field, "arguments.") || strings.HasPrefix(verr.Field, "arguments[")):
		return "invalid_arguments"
	case errors.Is(err, problem.ErrNotFound):
		return "not_found"
	case errors.Is(err, problem.ErrUnavailable):
		return "unavailable"
	case verr != nil, errors.Is(err, problem.ErrRequesterNotAllowed), errors.Is(err, problem.ErrSessionNotActive),
		errors.Is(err, problem.ErrIdempotency), errors.Is(err, tasks.ErrTooManyTasks), errors.Is(err, tasks.ErrTooLarge):
		return "refused"
	}
	return "error"
}
