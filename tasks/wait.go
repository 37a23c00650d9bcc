package tasks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
)

// MaxWait caps every long-poll.
const MaxWait = 60 * time.Second

// WaitFor reads the task and, while done(task) is false, waits up to wait for
// a change that makes it true. It reads Redis once at the start, on the
// slow re-check, and only when a wake-up carries no snapshot; the wait itself
// costs nothing. It answers with the latest state it knows when the wait runs
// out, the caller leaves or the server drains.
func (s *Service) WaitFor(ctx context.Context, p authz.Principal, id string, wait time.Duration,
	done func(Task) bool) (Task, []byte, error) {
	w := s.fanin.Wait(store.WaitKey(store.WakeTask, id))
	defer w.Stop()
	t, raw, err := s.wait(ctx, w, p, id, wait, done)
	if err != nil {
		return Task{}, nil, err
	}
	s.links.ShowTask(&t)
	return t, s.links.Task(raw), nil
}

// wait is WaitFor in the stored form.
func (s *Service) wait(ctx context.Context, w *store.Waiter, p authz.Principal, id string, wait time.Duration,
	done func(Task) bool) (Task, []byte, error) {
	t, raw, err := s.read(ctx, p, id)
	if err != nil || done(t) || wait <= 0 {
		return t, raw, err
	}
	deadline := s.now().Add(min(wait, MaxWait))
	for {
		wk, why := w.Next(ctx, deadline)
		switch why {
		case store.Woken:
			if wk.Revision <= t.Revision {
				continue
			}
			if wk.Snapshot != nil {
				var next Task
				if err := json.Unmarshal(wk.Snapshot, &next); err == nil {
					t, raw = next, wk.Snapshot
					break
				}
			}
			fallthrough
		case store.Recheck:
			if t, raw, err = s.read(ctx, p, id); err != nil {
				return t, raw, err
			}
		default:
			return t, raw, nil
		}
		if done(t) {
			return t, raw, nil
		}
	}
}

// AfterRevision is the condition of GET /v1/tasks/{id}?afterRevision=N.
func AfterRevision(n int64) func(Task) bool { return func(t Task) bool { return t.Revision > n } }

// IsTerminal is the condition of GET /v1/tasks/{id}/result.
func IsTerminal(t Task) bool { return t.Status.Terminal() }

// Events reads the task's log after a cursor; with wait, an empty read
// blocks until an event arrives.
func (s *Service) Events(ctx context.Context, p authz.Principal, id, after string, limit int,
	wait time.Duration) ([]store.LogEntry, error) {
	w := s.fanin.Wait(store.WaitKey(store.WakeTask, id))
	defer w.Stop()
	t, _, err := s.read(ctx, p, id)
	if err != nil {
		return nil, err
	}
	part, _ := ids.PartitionOf(id, ids.TaskPrefix, s.store.Partitions)
	entries, err := s.fanin.ReadLog(ctx, w, s.store.Keys.TaskLog(part, t.TaskID), after, limit, wait)
	return s.links.Events(entries), err
}

// Draining is closed when the server begins to shut down.
func (s *Service) Draining() <-chan struct{} { return s.fanin.Draining() }
