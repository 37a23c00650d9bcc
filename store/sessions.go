package store

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// SessionTasks reads every task of a session: its index size and, for each
// task still stored, its json (expired tasks are left out).
func (s *Store) SessionTasks(ctx context.Context, p int, sessionID string) (int, map[string][]byte, error) {
	ids, err := s.RDB.ZRange(ctx, s.Keys.SessionTasks(p, sessionID), 0, -1).Result()
	if err != nil {
		return 0, nil, unavailable(err)
	}
	out := make(map[string][]byte, len(ids))
	if len(ids) == 0 {
		return 0, out, nil
	}
	pipe := s.RDB.Pipeline()
	cmds := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGet(ctx, s.Keys.Task(p, id), "json")
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return 0, nil, unavailable(err)
	}
	for i, c := range cmds {
		if b, err := c.Bytes(); err == nil {
			out[ids[i]] = b
		}
	}
	return len(ids), out, nil
}

// TaskCancel is one live task's cancellation, computed from ExpectRevision.
type TaskCancel struct {
	ID             string
	ExpectRevision int64
	JSON           []byte
	Event          []byte
}

// SessionCancel is a session's cancellation with its live tasks'.
type SessionCancel struct {
	Partition int
	ID        string
	JSON      []byte // the cancelled session
	Event     []byte // session.cancelled
	IndexSize int    // the size of the session's task index when the tasks were read
	Tasks     []TaskCancel
	Response  []byte // stored for idempotent replay
	Now       time.Time
	Retention time.Duration
	Idem      Idempotency
}

// CancelSession writes the cancellation in one script, all or nothing.
func (s *Store) CancelSession(ctx context.Context, w SessionCancel) (Result, error) {
	p := w.Partition
	idemKey, idemHash, idemTTL := s.idemKey(p, w.Idem)
	keys := []string{
		s.Keys.Session(p, w.ID), s.Keys.SessionLog(p, w.ID), s.Keys.SessionTasks(p, w.ID), idemKey, s.Keys.Wake(p),
	}
	args := []any{idemHash, idemTTL, w.JSON, ms(w.Now), logMinID(w.Now, w.Retention),
		w.Event, w.ID, w.Response, w.IndexSize}
	for _, t := range w.Tasks {
		keys = append(keys, s.Keys.Task(p, t.ID), s.Keys.TaskLog(p, t.ID))
		args = append(args, t.ID, t.ExpectRevision, t.JSON, wakeSnapshot(t.JSON), t.Event)
	}
	return s.run(ctx, s.Scripts.SessionCancel, keys, args)
}
