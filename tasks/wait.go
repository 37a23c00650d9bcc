package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/waits"
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
	return s.PollFor(ctx, p, id, wait, done).Wait(ctx)
}

// WaitKinds is the long-poll of GET /v1/tasks/{id}?afterRevision=N&kinds=:
// it answers the task once its log holds, after revision after, an event of
// one of kinds, or when the wait runs out. A wake-up of other kinds is left
// aside without a read; the log is read at the start when the task is past
// after already, when a wake-up may have been missed (a gap in the
// revisions, or types it does not name), and on the slow re-check.
func (s *Service) WaitKinds(ctx context.Context, p authz.Principal, id string, after int64, kinds waits.Kinds,
	wait time.Duration) (Task, []byte, error) {
	return s.PollKinds(ctx, p, id, after, kinds, wait).Wait(ctx)
}

// A Poll is a long-poll on a task, begun: its waiter registered and its
// first read made. Either it has its answer already (Waits is false), or it
// waits for it, blocking the caller (Wait) or parked, holding no goroutine
// (Park).
type Poll struct {
	s        *Service
	w        *waits.Waiter
	cond     condition
	waits    bool
	deadline time.Time
	err      error
}

// condition is what a poll waits for, with the task as the poll knows it.
type condition interface {
	// step takes one result of the waiter's Next: whether the poll answers
	// now (always, with an error).
	step(ctx context.Context, wk waits.Wake, why waits.Reason) (bool, error)
	// task is the task to answer with, and its stored form.
	task() (Task, []byte)
}

// knownTask is the task as a poll knows it: its stored form and revision,
// all that a poll keeps while it waits (the decoded task is 400 bytes and
// its strings more, for every parked poll). The stored form is decoded
// again when the poll answers, unless the task was kept decoded to answer
// with at once.
type knownTask struct {
	raw      []byte
	revision int64
	decoded  *Task
}

// know takes t, decoded from raw, as the task known; keep keeps t decoded,
// for a poll about to answer with it.
func (k *knownTask) know(t Task, raw []byte, keep bool) {
	k.raw, k.revision, k.decoded = raw, t.Revision, nil
	if keep {
		k.decoded = &t
	}
}

func (k *knownTask) task() (Task, []byte) {
	if k.decoded != nil {
		return *k.decoded, k.raw
	}
	var t Task
	_ = json.Unmarshal(k.raw, &t) // it was decoded once already
	return t, k.raw
}

// PollFor begins WaitFor: the task read, and the wait ahead when done(task)
// is false.
func (s *Service) PollFor(ctx context.Context, p authz.Principal, id string, wait time.Duration,
	done func(Task) bool) *Poll {
	return s.pollFor(ctx, p, id, wait, done, false)
}

// pollFor is PollFor; ownerOnly keeps the task from anybody but its owner
// (and an admin), as if it were missing.
func (s *Service) pollFor(ctx context.Context, p authz.Principal, id string, wait time.Duration,
	done func(Task) bool, ownerOnly bool) *Poll {
	w := s.waiters.Wait(waits.WaitKey(waits.WakeTask, id))
	t, raw, err := s.read(ctx, p, id)
	if err == nil && ownerOnly && !p.CanAccess(t.Owner) {
		t, raw, err = Task{}, nil, problem.ErrNotFound
	}
	waits := err == nil && wait > 0 && !done(t)
	c := &revisionCondition{s: s, p: p, id: id, done: done}
	c.know(t, raw, !waits)
	return s.poll(w, c, waits, s.now().Add(min(wait, MaxWait)), err)
}

// PollResult begins the wait of GET /v1/tasks/{id}/result: PollFor until the
// task has ended, for its owner (or an admin) only. The outcome is the
// owner's to collect; to its executor and requester, who may read the task
// otherwise, the route answers as for a missing task.
func (s *Service) PollResult(ctx context.Context, p authz.Principal, id string, wait time.Duration) *Poll {
	return s.pollFor(ctx, p, id, wait, IsTerminal, true)
}

// PollKinds begins WaitKinds: the task read, the log too when the task is
// past after already, and the wait ahead when no event of kinds is there.
func (s *Service) PollKinds(ctx context.Context, p authz.Principal, id string, after int64, kinds waits.Kinds,
	wait time.Duration) *Poll {
	w := s.waiters.Wait(waits.WaitKey(waits.WakeTask, id))
	t, raw, err := s.read(ctx, p, id)
	part, _ := ids.PartitionOf(id, ids.TaskPrefix, s.store.Partitions)
	c := &kindsCondition{s: s, w: w, part: part, id: id, session: t.SessionID, after: after, kinds: kinds, known: t.Revision}
	c.know(t, raw, wait <= 0)
	found := false
	if err == nil && wait > 0 && t.Revision > after {
		found, err = c.look(ctx, after)
	}
	return s.poll(w, c, err == nil && wait > 0 && !found, s.now().Add(min(wait, MaxWait)), err)
}

// poll is a Poll on waiter w, which it stops at once when there is nothing
// to wait for.
func (s *Service) poll(w *waits.Waiter, c condition, waits bool, deadline time.Time, err error) *Poll {
	if !waits {
		w.Stop()
	}
	return &Poll{s: s, w: w, cond: c, waits: waits, deadline: deadline, err: err}
}

// Waits reports whether the poll has its answer still to wait for.
func (p *Poll) Waits() bool { return p.waits }

// Wait waits for the poll's answer, blocking the caller; ctx ending is the
// caller leaving.
func (p *Poll) Wait(ctx context.Context) (Task, []byte, error) {
	if p.waits {
		defer p.w.Stop()
		p.w.Until(ctx, p.deadline, func(wk waits.Wake, why waits.Reason) bool { return p.answers(ctx, wk, why) })
	}
	return p.answer()
}

// Park waits for the poll's answer holding no goroutine, and calls answer
// with it once: at once when the poll does not wait, else on a goroutine of
// its own. ctx is the context of the reads the wait makes; Leave, not ctx
// ending, says the caller has left.
func (p *Poll) Park(ctx context.Context, answer func(Task, []byte, error)) {
	if !p.waits {
		answer(p.answer())
		return
	}
	p.w.Park(p.deadline, func(wk waits.Wake, why waits.Reason) {
		if p.answers(ctx, wk, why) {
			p.w.Stop()
			answer(p.answer())
		}
	})
}

// Leave tells a parked poll that its caller has left: it answers at once,
// with what it knows.
func (p *Poll) Leave() { p.w.Leave() }

// answers hands one result of the waiter's Next to the condition: whether
// the poll answers now.
func (p *Poll) answers(ctx context.Context, wk waits.Wake, why waits.Reason) bool {
	done, err := p.cond.step(ctx, wk, why)
	p.err = err
	return done || err != nil
}

// answer is the poll's answer: the task as the condition knows it, with its
// answer links, or the error that ended the poll.
func (p *Poll) answer() (Task, []byte, error) {
	if p.err != nil {
		return Task{}, nil, p.err
	}
	t, raw := p.cond.task()
	p.s.links.ShowTask(&t)
	return t, p.s.links.Task(raw), nil
}

// revisionCondition is the condition of WaitFor: done(task), the task kept
// up to date from the wake-ups' snapshots and, without one or on the slow
// re-check, by a read.
type revisionCondition struct {
	knownTask
	s    *Service
	p    authz.Principal
	id   string
	done func(Task) bool
}

func (c *revisionCondition) step(ctx context.Context, wk waits.Wake, why waits.Reason) (bool, error) {
	switch why {
	case waits.Woken:
		if wk.Revision <= c.revision {
			return false, nil
		}
		if next, ok := decodeSnapshot(wk); ok {
			return c.take(next, wk.Snapshot), nil
		}
	case waits.Recheck:
	default: // the wait ran out, the caller left or the server drains: the task as known
		return true, nil
	}
	t, raw, err := c.s.read(ctx, c.p, c.id)
	if err != nil {
		return true, err
	}
	return c.take(t, raw), nil
}

// take knows t: whether it is done.
func (c *revisionCondition) take(t Task, raw []byte) bool {
	done := c.done(t)
	c.know(t, raw, done)
	return done
}

// decodeSnapshot is the task a wake-up carries, if it carries one.
func decodeSnapshot(wk waits.Wake) (Task, bool) {
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

// kindsCondition is the condition of WaitKinds: an event of kinds in the
// task's log after revision after.
type kindsCondition struct {
	knownTask
	s    *Service
	w    *waits.Waiter
	part int
	id   string
	// session is the task's session, whose log holds the events the
	// task's log names.
	session string
	after   int64
	kinds   waits.Kinds
	known   int64 // every event up to it has been judged
	stale   bool  // the task is older than known: a wake-up without a snapshot
}

func (c *kindsCondition) step(ctx context.Context, wk waits.Wake, why waits.Reason) (bool, error) {
	switch why {
	case waits.Woken:
		switch judge(wk, c.known, c.after, c.kinds) {
		case wakeKnown:
			return false, nil
		case wakeUnclear:
			return c.look(ctx, max(c.known, c.after))
		}
		c.known = wk.Revision
		answers := wk.Revision > c.after && c.kinds.MayConcern(wk)
		if next, ok := decodeSnapshot(wk); ok {
			c.know(next, wk.Snapshot, answers)
			c.stale = false
		} else {
			c.stale = true
		}
		if !answers {
			c.w.Ignore()
			return false, nil
		}
		return true, c.refresh(ctx)
	case waits.Recheck:
		return c.look(ctx, max(c.known, c.after))
	case waits.Timeout:
		return true, c.refresh(ctx)
	}
	return true, nil // the caller left, or the server drains: answer what is known
}

// look reads the log after from (and the task): whether an event of kinds
// is there.
func (c *kindsCondition) look(ctx context.Context, from int64) (bool, error) {
	found, cur, err := c.s.store.TaskKindsAfter(ctx, c.part, c.id, c.session, from, c.kinds)
	if err != nil {
		return false, err
	}
	var next Task
	if err := json.Unmarshal(cur, &next); err != nil {
		return false, err
	}
	c.s.cache.put(c.id, next.Revision, cur)
	c.know(next, cur, found)
	c.stale = false
	c.known = max(c.known, next.Revision)
	return found, nil
}

// refresh reads the task when the one known is older than a wake-up that
// carried no snapshot.
func (c *kindsCondition) refresh(ctx context.Context) error {
	if !c.stale {
		return nil
	}
	t, raw, err := c.s.load(ctx, c.part, c.id)
	if err != nil {
		return err
	}
	c.know(t, raw, true)
	c.stale = false
	return nil
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
func judge(wk waits.Wake, known, after int64, kinds waits.Kinds) wakeVerdict {
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
func (s *Service) Events(ctx context.Context, p authz.Principal, id string, q waits.LogQuery) (waits.LogPage, error) {
	return s.PollEvents(ctx, p, id, q).Wait(ctx)
}

// PollEvents begins Events: the task read (which checks access) and its
// log, and the wait ahead when the log has nothing for the query and it
// waits.
func (s *Service) PollEvents(ctx context.Context, p authz.Principal, id string, q waits.LogQuery) *waits.LogPoll {
	w := s.waiters.Wait(waits.WaitKey(waits.WakeTask, id))
	t, _, err := s.read(ctx, p, id)
	if err != nil {
		w.Stop()
		return waits.FailedLogPoll(err)
	}
	part, _ := ids.PartitionOf(id, ids.TaskPrefix, s.store.Partitions)
	return s.waiters.PollLog(ctx, w, s.store.Source(s.store.Keys.TaskEvents(part, t.TaskID, t.SessionID)), q).Shown(s.links.Events)
}

// Cancel cancels the task and, with a wait, waits up to it for the executor
// to release it (IsReleased). It answers the task as the cancel left it, or,
// with a wait, as it is when the wait ends; replayed says the cancel was an
// idempotent repeat. A wait costs no Redis round trip but the cancel's own
// (and one read after a repeat, whose stored answer may be old).
func (s *Service) Cancel(ctx context.Context, p authz.Principal, id, reason string, key idem.Key,
	wait time.Duration) (idem.Reply, error) {
	if wait <= 0 {
		return s.Run(ctx, p, id, Command{Kind: CmdCancel, Reason: reason}, key)
	}
	deadline := s.now().Add(min(wait, MaxWait))
	w := s.waiters.Wait(waits.WaitKey(waits.WakeTask, id))
	defer w.Stop()
	reply, err := s.run(ctx, p, id, Command{Kind: CmdCancel, Reason: reason}, key)
	if err != nil {
		var state *StateError
		if errors.As(err, &state) {
			s.links.ShowTask(&state.Task)
		}
		return idem.Reply{}, err
	}
	var t Task
	raw := reply.JSON
	if reply.Replayed {
		t, raw, err = s.read(ctx, p, id)
	} else {
		err = json.Unmarshal(raw, &t)
	}
	waits := err == nil && !IsReleased(t)
	c := &revisionCondition{s: s, p: p, id: id, done: IsReleased}
	c.know(t, raw, !waits)
	if _, raw, err = s.poll(w, c, waits, deadline, err).Wait(ctx); err != nil {
		return idem.Reply{}, err
	}
	return idem.Reply{JSON: raw, Replayed: reply.Replayed}, nil
}

// Draining is closed when the server begins to shut down.
func (s *Service) Draining() <-chan struct{} { return s.waiters.Draining() }
