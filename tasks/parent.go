package tasks

import (
	"context"
	"time"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/store"
)

// Parent answers what a record bound to a task (a hook) needs of it, for a
// principal who may run the task's work (its executor or an admin, not its
// owner or requester when they are not the executor): the task's session, when it expires (zero: never) and whether
// it has ended. Anybody else's task is problem.ErrNotFound, as a missing one is. It
// costs one round trip.
func (s *Service) Parent(ctx context.Context, p authz.Principal, taskID string) (sessionID string, expiresAt time.Time, terminal bool, err error) {
	part, err := ids.PartitionOf(taskID, ids.TaskPrefix, s.store.Partitions)
	if err != nil {
		return "", time.Time{}, false, problem.ErrNotFound
	}
	raw, err := s.store.GetOwned(ctx, s.store.Keys.Task(part, taskID), p.ID, p.Admin(), true)
	t, err := store.Decode[Task]("task", raw, err)
	if err != nil {
		return "", time.Time{}, false, err
	}
	if !mayExecute(p, t) {
		return "", time.Time{}, false, problem.ErrNotFound
	}
	if t.ExpiresAt != nil {
		expiresAt = t.ExpiresAt.Time
	}
	return t.SessionID, expiresAt, t.Status.Terminal(), nil
}
