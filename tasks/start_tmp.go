package tasks

import (
	"context"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/store"
)

// A Start is what starting a task through a tool adds to a create.
//
// This file stands in for the executor's branch, which makes CreateWith
// whole: until then a start sets only what Create sets (no executor, no
// tool endpoint, no default session).
type Start struct {
	Executor       string             // who executes the task; "" is the owner
	Endpoints      store.NewEndpoints // endpoints the task gets besides the create's notify, already sealed
	DefaultSession bool               // in.SessionID is empty: the task goes to the caller's default session
}

// CreateWith is Create with what a start adds.
func (s *Service) CreateWith(ctx context.Context, p authz.Principal, in CreateInput, st Start, key idem.Key) (idem.Reply, error) {
	return s.Create(ctx, p, in, key)
}
