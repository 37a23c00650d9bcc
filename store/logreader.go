package store

import (
	"context"
	"time"
)

// LogReader reads an event log (a task's or a session's) after a cursor and,
// when nothing is there, waits on a waiter of the registry and reads again.
type LogReader struct {
	store *Store
	now   func() time.Time
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

// Read reads the log at key after the query's cursor and, when nothing is
// there and the query waits, waits on w (registered before the first read)
// until the wait, on the reader's clock, runs out. With kinds, a wake-up
// whose event types are none of them is left aside without a read.
func (l LogReader) Read(ctx context.Context, w *Waiter, log Log, q LogQuery) (LogPage, error) {
	deadline := l.now().Add(q.Wait)
	page := LogPage{Cursor: q.After}
	looks := 0
	for {
		more := false
		if q.Kinds.All() {
			entries, err := l.store.ReadLog(ctx, log, page.Cursor, q.Limit)
			if err != nil {
				return page, err
			}
			page.Entries = entries
			if n := len(entries); n > 0 {
				page.Cursor = entries[n-1].ID
			}
		} else {
			r, err := l.store.readLogKinds(ctx, log, page.Cursor, q.Limit, q.Kinds)
			if err != nil {
				return page, err
			}
			page.Entries = r.entries
			if r.last != "" {
				page.Cursor = r.last
			}
			looks++
			more = r.more && looks < maxKindsLooks
		}
		if len(page.Entries) > 0 {
			return page, nil
		}
		if more {
			continue
		}
		if q.Wait <= 0 || !l.await(ctx, w, deadline, q.Kinds) {
			return page, nil
		}
		looks = 0
	}
}

// await waits for a wake-up that may concern kinds, or the safety-net
// re-check. It reports false when the wait ran out or the caller left.
func (l LogReader) await(ctx context.Context, w *Waiter, deadline time.Time, kinds Kinds) bool {
	for {
		wk, why := w.Next(ctx, deadline)
		switch why {
		case Woken:
			if kinds.MayConcern(wk) {
				return true
			}
			w.Ignore()
		case Recheck:
			return true
		default:
			return false
		}
	}
}
