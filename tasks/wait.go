package tasks

import (
	"context"
	"encoding/json"
	"errors"
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
	t, raw, err := s.read(ctx, p, id)
	if err == nil && !done(t) && wait > 0 {
		t, raw, err = s.waitFrom(ctx, w, p, id, t, raw, s.now().Add(min(wait, MaxWait)), done)
	}
	if err != nil {
		return Task{}, nil, err
	}
	s.links.ShowTask(&t)
	return t, s.links.Task(raw), nil
}

// waitFrom waits, from the task as the caller knows it, until done holds or
// the deadline: WaitFor in the stored form, after its first read.
func (s *Service) waitFrom(ctx context.Context, w *store.Waiter, p authz.Principal, id string, t Task, raw []byte,
	deadline time.Time, done func(Task) bool) (Task, []byte, error) {
	var err error
	for {
		wk, why := w.Next(ctx, deadline)
		switch why {
		case store.Woken:
			if wk.Revision <= t.Revision {
				continue
			}
			if next, ok := decodeSnapshot(wk); ok {
				t, raw = next, wk.Snapshot
				break
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

// decodeSnapshot is the task a wake-up carries, if it carries one.
func decodeSnapshot(wk store.Wake) (Task, bool) {
	if wk.Snapshot == nil {
		return Task{}, false
	}
	var t Task
	if err := json.Unmarshal(wk.Snapshot, &t); err != nil {
		return Task{}, false
	}
	return t, true
}

// AfterRevision is the condition of GET /v1/tasks/{id}?afterRevision=N.
func AfterRevision(n int64) func(Task) bool { return func(t Task) bool { return t.Revision > n } }

// IsTerminal is the condition of GET /v1/tasks/{id}/result.
func IsTerminal(t Task) bool { return t.Status.Terminal() }

// IsReleased is the condition of POST /v1/tasks/{id}/cancel?wait=: the
// executor has stopped its outside work.
func IsReleased(t Task) bool { return t.ReleasedAt != nil }

// WaitKinds is the long-poll of GET /v1/tasks/{id}?afterRevision=N&kinds=:
// it answers the task once its log holds, after revision after, an event of
// one of kinds, or when the wait runs out. A wake-up of other kinds is left
// aside without a read; the log is read at the start when the task is past
// after already, when a wake-up may have been missed (a gap in the
// revisions, or types it does not name), and on the slow re-check.
func (s *Service) WaitKinds(ctx context.Context, p authz.Principal, id string, after int64, kinds store.Kinds,
	wait time.Duration) (Task, []byte, error) {
	w := s.fanin.Wait(store.WaitKey(store.WakeTask, id))
	defer w.Stop()
	t, raw, err := s.read(ctx, p, id)
	if err == nil {
		t, raw, err = s.waitKinds(ctx, w, id, t, raw, after, kinds, wait)
	}
	if err != nil {
		return Task{}, nil, err
	}
	s.links.ShowTask(&t)
	return t, s.links.Task(raw), nil
}

// waitKinds is WaitKinds in the stored form, after its first read.
func (s *Service) waitKinds(ctx context.Context, w *store.Waiter, id string, t Task, raw []byte, after int64,
	kinds store.Kinds, wait time.Duration) (Task, []byte, error) {
	part, _ := ids.PartitionOf(id, ids.TaskPrefix, s.store.Partitions)
	known := t.Revision // every event up to it has been judged
	stale := false      // t is older than known: a wake-up without a snapshot
	// look reads the log after from (and the task): whether an event of
	// kinds is there.
	look := func(from int64) (bool, error) {
		found, cur, err := s.store.TaskKindsAfter(ctx, part, id, t.SessionID, from, kinds)
		if err != nil {
			return false, err
		}
		var next Task
		if err := json.Unmarshal(cur, &next); err != nil {
			return false, err
		}
		s.cache.put(id, next.Revision, cur)
		t, raw, stale = next, cur, false
		known = max(known, next.Revision)
		return found, nil
	}
	answer := func() (Task, []byte, error) {
		if stale {
			var err error
			if t, raw, err = s.load(ctx, part, id); err != nil {
				return Task{}, nil, err
			}
		}
		return t, raw, nil
	}
	if wait <= 0 {
		return t, raw, nil // no wait: the task as it is, as without kinds
	}
	if t.Revision > after {
		if found, err := look(after); err != nil || found {
			return t, raw, err
		}
	}
	deadline := s.now().Add(min(wait, MaxWait))
	for {
		wk, why := w.Next(ctx, deadline)
		switch why {
		case store.Woken:
			switch judge(wk, known, after, kinds) {
			case wakeKnown:
				continue
			case wakeUnclear:
				if found, err := look(max(known, after)); err != nil || found {
					return t, raw, err
				}
				continue
			}
			known = wk.Revision
			if next, ok := decodeSnapshot(wk); ok {
				t, raw, stale = next, wk.Snapshot, false
			} else {
				stale = true
			}
			if wk.Revision <= after || !kinds.MayConcern(wk) {
				w.Ignore()
				continue
			}
			return answer()
		case store.Recheck:
			if found, err := look(max(known, after)); err != nil || found {
				return t, raw, err
			}
		case store.Timeout:
			return answer()
		default: // the caller left, or the server drains: answer what is known
			return t, raw, nil
		}
	}
}

// wakeVerdict is what a waiter with kinds makes of a wake-up.
type wakeVerdict int

const (
	wakeNews    wakeVerdict = iota // it says what changed: take its snapshot, then answer or leave it aside by its types
	wakeKnown                      // nothing after what the waiter knows
	wakeUnclear                    // the log must tell
)

// judge decides what a wake-up tells a waiter that has judged every event up
// to revision known and answers for events of kinds after revision after.
// A wake-up that may have followed a missed one, or that stands for
// revisions up to after as well (a late wake-up merged with a new one) and
// names a type of kinds that may be theirs, sends the waiter to the log;
// one that names none of kinds is left aside whatever it stands for.
func judge(wk store.Wake, known, after int64, kinds store.Kinds) wakeVerdict {
	switch {
	case wk.Revision <= known:
		return wakeKnown
	case !wk.FollowsOn(known), wk.First > 0 && wk.First <= after && kinds.MayConcern(wk):
		return wakeUnclear
	}
	return wakeNews
}

// Events reads the task's log after a cursor, only the events of kinds when
// the query names some; with wait, an empty read blocks until an event
// arrives.
func (s *Service) Events(ctx context.Context, p authz.Principal, id string, q store.LogQuery) (store.LogPage, error) {
	w := s.fanin.Wait(store.WaitKey(store.WakeTask, id))
	defer w.Stop()
	t, _, err := s.read(ctx, p, id)
	if err != nil {
		return store.LogPage{}, err
	}
	part, _ := ids.PartitionOf(id, ids.TaskPrefix, s.store.Partitions)
	page, err := s.fanin.ReadLog(ctx, w, s.store.Keys.TaskEvents(part, t.TaskID, t.SessionID), q)
	page.Entries = s.links.Events(page.Entries)
	return page, err
}

// Cancel cancels the task and, with a wait, waits up to it for the executor
// to release it (IsReleased). It answers the task as the cancel left it, or,
// with a wait, as it is when the wait ends; replayed says the cancel was an
// idempotent repeat. A wait costs no Redis round trip but the cancel's own
// (and one read after a repeat, whose stored answer may be old).
func (s *Service) Cancel(ctx context.Context, p authz.Principal, id, reason string, idem store.Idempotency,
	wait time.Duration) (store.Reply, error) {
	if wait <= 0 {
		return s.Run(ctx, p, id, Command{Kind: CmdCancel, Reason: reason}, idem)
	}
	deadline := s.now().Add(min(wait, MaxWait))
	w := s.fanin.Wait(store.WaitKey(store.WakeTask, id))
	defer w.Stop()
	reply, err := s.run(ctx, p, id, Command{Kind: CmdCancel, Reason: reason}, idem)
	if err != nil {
		var state *StateError
		if errors.As(err, &state) {
			s.links.ShowTask(&state.Task)
		}
		return store.Reply{}, err
	}
	var t Task
	raw := reply.JSON
	if reply.Replayed {
		t, raw, err = s.read(ctx, p, id)
	} else {
		err = json.Unmarshal(raw, &t)
	}
	if err == nil && !IsReleased(t) {
		t, raw, err = s.waitFrom(ctx, w, p, id, t, raw, deadline, IsReleased)
	}
	if err != nil {
		return store.Reply{}, err
	}
	return store.Reply{JSON: s.links.Task(raw), Replayed: reply.Replayed}, nil
}

// Draining is closed when the server begins to shut down.
func (s *Service) Draining() <-chan struct{} { return s.fanin.Draining() }
