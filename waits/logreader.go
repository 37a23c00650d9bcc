package waits

import (
	"context"
	"time"
)

// A log read that waits reads an event log (a task's or a session's) after
// a cursor and, when nothing is there, waits on a waiter of the registry and
// reads again.

// LogSource is one event log to read: the store's (store.LogSource) reads
// Redis.
type LogSource interface {
	// ReadLog reads up to limit events of kinds (every type when empty)
	// after the stream id after ("" or "0" for the beginning), oldest
	// first, looking at a bounded part of the log.
	ReadLog(ctx context.Context, after string, limit int, kinds Kinds) (LogRead, error)
}

// LogRead is what one look at a log found.
type LogRead struct {
	Entries []LogEntry
	// Last is the id of the last entry looked at, "" when none: with kinds,
	// past the events of other kinds it left aside.
	Last string
	// More says it stopped before the log's end with events of other kinds
	// left aside, so a read goes on looking from Last.
	More bool
}

// LogEntry is one event of a log, its JSON with the stream id as "id".
type LogEntry struct {
	ID   string
	JSON []byte
}

// LogQuery is one read of a log.
type LogQuery struct {
	After string        // the cursor: read the events after this stream id ("" for the start)
	Limit int           // most events to answer
	Wait  time.Duration // when positive, how long an empty read waits for an event
	Kinds Kinds         // the event types to answer; empty: every type
}

// LogPage is what a read found. Cursor is where the next read goes on: the
// id of the last event answered, or, when the read left events of other
// kinds aside after it, the last of those; After when it looked at nothing.
type LogPage struct {
	Entries []LogEntry
	Cursor  string
}

// maxKindsLooks bounds the scripts one read with kinds runs to find its
// first event: past them it answers an empty page whose cursor has moved on,
// and the caller reads on from there.
const maxKindsLooks = 16

// ReadLog reads log after the query's cursor and, when nothing is there and
// the query waits, waits on w (registered before the first read) until the
// wait, on the registry's clock, runs out. With kinds, a wake-up whose event
// types are none of them is left aside without a read.
func (r *Waiters) ReadLog(ctx context.Context, w *Waiter, log LogSource, q LogQuery) (LogPage, error) {
	return r.pollLog(ctx, w, log, q, false).Wait(ctx)
}

// PollLog begins ReadLog: the first read made, and the wait ahead when it
// found nothing and the query waits. The poll owns w: it stops it once it
// has its answer.
func (r *Waiters) PollLog(ctx context.Context, w *Waiter, log LogSource, q LogQuery) *LogPoll {
	return r.pollLog(ctx, w, log, q, true)
}

// pollLog begins a read on w, which the poll stops once answered when it
// owns it; else w stays the caller's, who may read again with it.
func (r *Waiters) pollLog(ctx context.Context, w *Waiter, log LogSource, q LogQuery, owns bool) *LogPoll {
	p := &LogPoll{w: w, owns: owns, log: log, q: q, deadline: r.now().Add(q.Wait), page: LogPage{Cursor: q.After}}
	found, err := p.read(ctx)
	p.err = err
	p.waits = err == nil && !found && q.Wait > 0
	if !p.waits {
		p.stop()
	}
	return p
}

// A LogPoll is a read of a log, begun: its first read made. Either it has
// its answer already (Waits is false), or it waits for an event, blocking
// the caller (Wait) or parked, holding no goroutine (Park). Both take the
// waiter's events through one step, so they answer alike.
type LogPoll struct {
	w        *Waiter
	owns     bool // it stops w once answered
	log      LogSource
	q        LogQuery
	deadline time.Time
	page     LogPage
	waits    bool
	err      error
	show     func([]LogEntry) []LogEntry
}

// FailedLogPoll is a poll that answers err at once: its log could not be
// read (not found, not the caller's).
func FailedLogPoll(err error) *LogPoll { return &LogPoll{err: err} }

// Shown has the poll's answer go through show (the answer links) before it
// is given.
func (p *LogPoll) Shown(show func([]LogEntry) []LogEntry) *LogPoll {
	p.show = show
	return p
}

// Waits reports whether the poll has its answer still to wait for.
func (p *LogPoll) Waits() bool { return p.waits }

// Wait waits for the poll's answer, blocking the caller; ctx ending is the
// caller leaving.
func (p *LogPoll) Wait(ctx context.Context) (LogPage, error) {
	if p.waits {
		defer p.stop()
		p.w.Until(ctx, p.deadline, func(wk Wake, why Reason) bool { return p.step(ctx, wk, why) })
	}
	return p.answer()
}

// Park waits for the poll's answer holding no goroutine, and calls answer
// with it once: at once when the poll does not wait, else on a goroutine of
// its own. ctx is the context of the reads the wait makes; Leave, not ctx
// ending, says the caller has left.
func (p *LogPoll) Park(ctx context.Context, answer func(LogPage, error)) {
	if !p.waits {
		answer(p.answer())
		return
	}
	p.w.Park(p.deadline, func(wk Wake, why Reason) {
		if p.step(ctx, wk, why) {
			p.stop()
			answer(p.answer())
		}
	})
}

// Leave tells a parked poll that its caller has left: it answers at once,
// with what it found.
func (p *LogPoll) Leave() {
	if p.w != nil {
		p.w.Leave()
	}
}

// step takes one result of the waiter's Next: whether the poll answers now.
// A wake-up that may concern the query's kinds, or the safety-net re-check,
// reads the log again; one of other kinds is left aside without a read.
func (p *LogPoll) step(ctx context.Context, wk Wake, why Reason) bool {
	switch why {
	case Woken:
		if !p.q.Kinds.MayConcern(wk) {
			p.w.Ignore()
			return false
		}
	case Recheck:
	default: // the wait ran out, the caller left or the server drains: the page as read
		return true
	}
	found, err := p.read(ctx)
	p.err = err
	return found || err != nil
}

// read reads the log after the page's cursor: whether it found events. With
// kinds it looks on past events of other kinds, up to maxKindsLooks scripts.
func (p *LogPoll) read(ctx context.Context) (bool, error) {
	for looks := 1; ; looks++ {
		r, err := p.log.ReadLog(ctx, p.page.Cursor, p.q.Limit, p.q.Kinds)
		if err != nil {
			return false, err
		}
		p.page.Entries = r.Entries
		if r.Last != "" {
			p.page.Cursor = r.Last
		}
		more := r.More && looks < maxKindsLooks
		if len(p.page.Entries) > 0 || !more {
			return len(p.page.Entries) > 0, nil
		}
	}
}

// answer is the poll's answer: the page found, shown, or the error that
// ended the poll with the page as far as it was read.
func (p *LogPoll) answer() (LogPage, error) {
	page := p.page
	if p.show != nil {
		page.Entries = p.show(page.Entries)
	}
	return page, p.err
}

// stop stops the poll's waiter, when it owns one.
func (p *LogPoll) stop() {
	if p.owns && p.w != nil {
		p.w.Stop()
	}
}
