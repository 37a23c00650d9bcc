package store

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/idem"
)

// sessionFieldKept is the session hash's field that says until when the
// keys of the session that no script empties (its hash, log and index of
// tasks, and its owner's indexes of tasks and sessions) are kept at least:
// task_create extends them only past it.
const sessionFieldKept = "kept"

// TaskCancel is one live task's cancellation, computed from ExpectRevision.
type TaskCancel struct {
	ID             string
	Owner          string
	Executor       string // "" when the owner executes the task
	OldStatus      string
	ExpectRevision int64
	JSON           []byte
	Event          TaskEvent
	Undo           []byte // what takes JSON back to the task at ExpectRevision (snapdelta.Undo)
}

// The answers of the cancel scripts, by outcome word.
var (
	parseSessionCancel = replies[Result]{
		"ok": is(OK), "not_found": is(Missing), "already": is(AlreadyCancelled),
	}.parser("session_cancel")
	// EventIDs are the tasks the batch cancelled.
	parseSessionCancelTasks = replies[Result]{
		"ok": okEvents, "not_cancelling": is(AlreadyCancelled),
	}.parser("session_cancel_tasks")
	parseSessionCancelDone = replies[Result]{
		"ok": is(OK), "replay": replayed, "idem_conflict": is(IdemConflict),
		"not_cancelling": is(AlreadyCancelled), "tasks_left": is(Conflict),
	}.parser("session_cancel_done")
)

// CancelLease is how long a replica working on a session cancel holds it
// before another one may take it over.
const CancelLease = 30 * time.Second

// BeginCancel marks a session cancelled and cancelling in one script: it
// takes no more tasks and its hooks close. Outcome OK, Missing, or
// AlreadyCancelled (cancelled, or being cancelled by another request).
func (s *Store) BeginCancel(ctx context.Context, p int, id string, sessionJSON []byte, reason string, now time.Time) (Result, error) {
	key, hash, ttl := s.idemKey(p, idem.Key{})
	keys := []string{s.Keys.Session(p, id), key, s.Keys.Cancels(p), s.Keys.Wake(p)}
	args := []any{hash, ttl, sessionJSON, reason, ms(now.Add(CancelLease)), id}
	return s.scripts.sessionCancel.run(ctx, s, keys, args...)
}

// CancelState is a cancelling session as a batch sees it.
type CancelState struct {
	Cancelling bool
	Reason     string
	Live       []string // up to the batch's count of live task ids
}

// CancelBatch reads whether the session is still cancelling, its reason and
// up to count of its live tasks, in one round trip.
func (s *Store) CancelBatch(ctx context.Context, p int, id string, count int, now time.Time) (CancelState, error) {
	pipe := s.RDB.Pipeline()
	h := pipe.HMGet(ctx, s.Keys.Session(p, id), "cancelling", "reason")
	live := pipe.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: s.Keys.SessionLive(p, id), Start: "(" + ms(now), Stop: "+inf", ByScore: true, Count: int64(count),
	})
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return CancelState{}, unavailable(err)
	}
	v := h.Val()
	st := CancelState{Live: live.Val()}
	if len(v) == 2 {
		st.Cancelling = v[0] == "1"
		st.Reason, _ = v[1].(string)
	}
	return st, nil
}

// TaskJSONs reads the records of some tasks of one partition (nil for one
// that expired), in one round trip.
func (s *Store) TaskJSONs(ctx context.Context, p int, ids []string) ([][]byte, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.Keys.Task(p, id)
	}
	items, _, err := s.readJSONs(ctx, keys) // an expired one is nil
	return items, err
}

// CancelTasks writes one batch of a session cancel; EventIDs in the result
// are the ids of the tasks it cancelled (a task that moved on is left out).
func (s *Store) CancelTasks(ctx context.Context, p int, sessionID string, tasks []TaskCancel, now time.Time, retention time.Duration) ([]string, error) {
	for _, t := range tasks {
		if err := compactSnapshot(t.JSON); err != nil {
			return nil, err
		}
	}
	key, hash, ttl := s.idemKey(p, idem.Key{})
	keys := []string{
		s.Keys.Session(p, sessionID), s.Keys.SessionLog(p, sessionID), s.Keys.SessionLive(p, sessionID),
		s.Keys.SessionCancelled(p, sessionID), s.Keys.Cancels(p), s.Keys.Wake(p), key, s.Keys.Outbox(p),
	}
	args := []any{hash, ttl, logMinID(now, retention), sessionID, ms(now.Add(CancelLease))}
	for _, t := range tasks {
		keys = append(keys, s.Keys.Task(p, t.ID), s.Keys.TaskLog(p, t.ID),
			s.Keys.OwnerTasksByStatus(p, t.Owner, t.OldStatus), s.Keys.OwnerTasksByStatus(p, t.Owner, wire.StatusCancelled),
			s.Keys.SessionTasksByStatus(p, sessionID, t.OldStatus), s.Keys.SessionTasksByStatus(p, sessionID, wire.StatusCancelled),
			s.Keys.ExecutorTasksByStatus(p, executorOr(t.Executor, t.Owner), t.OldStatus),
			s.Keys.ExecutorTasksByStatus(p, executorOr(t.Executor, t.Owner), wire.StatusCancelled))
		event, form := t.Event.args()
		args = append(args, t.ID, t.ExpectRevision, t.JSON, event, form, t.Undo)
	}
	res, err := s.scripts.sessionCancelTasks.run(ctx, s, keys, args...)
	if err != nil {
		return nil, err
	}
	if res.Outcome != OK {
		return nil, nil
	}
	return res.EventIDs, nil
}

// CancelledSoFar is every task the session's cancel has cancelled.
func (s *Store) CancelledSoFar(ctx context.Context, p int, sessionID string) ([]string, error) {
	ids, err := s.RDB.LRange(ctx, s.Keys.SessionCancelled(p, sessionID), 0, -1).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	return ids, nil
}

// SessionCancelDone ends a cancel: the session.cancelled event and the answer
// kept for a repeat.
type SessionCancelDone struct {
	LogWrite
	ID        string
	Event     []byte
	Response  []byte
	Cancelled int // the length of the cancelled list the event names
}

// EndCancel writes the end of a cancel. Outcome OK, Replayed, IdemConflict,
// AlreadyCancelled (another replica ended it) or Conflict (tasks are left).
func (s *Store) EndCancel(ctx context.Context, w SessionCancelDone) (Result, error) {
	p := w.Partition
	idemKey, idemHash, idemTTL := s.idemKey(p, w.Idem)
	keys := []string{
		s.Keys.Session(p, w.ID), s.Keys.SessionLog(p, w.ID), s.Keys.SessionLive(p, w.ID),
		s.Keys.SessionCancelled(p, w.ID), s.Keys.Cancels(p), idemKey, s.Keys.Wake(p), s.Keys.Outbox(p),
	}
	args := []any{idemHash, idemTTL, ms(w.Now), w.minID(), w.ID, w.Event, w.Response, w.Cancelled}
	return s.scripts.sessionCancelDone.run(ctx, s, keys, args...)
}

// StalledCancels are the session cancels of partition p whose lease ran out
// (their replica died, or is slow): each is leased to the caller for
// CancelLease.
func (s *Store) StalledCancels(ctx context.Context, p int, now time.Time, count int) ([]string, error) {
	ids, err := s.RDB.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: s.Keys.Cancels(p), Start: "-inf", Stop: ms(now), ByScore: true, Count: int64(count),
	}).Result()
	if err != nil || len(ids) == 0 {
		return nil, unavailable(err)
	}
	zs := make([]redis.Z, len(ids))
	for i, id := range ids {
		zs[i] = redis.Z{Score: float64(now.Add(CancelLease).UnixMilli()), Member: id}
	}
	if err := s.RDB.ZAddXX(ctx, s.Keys.Cancels(p), zs...).Err(); err != nil {
		return nil, unavailable(err)
	}
	return ids, nil
}
