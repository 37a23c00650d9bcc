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

// Read reads the log at key after a cursor and, when nothing is there and
// wait is positive, waits on w (registered before the first read) until the
// wait, on the reader's clock, runs out.
func (l LogReader) Read(ctx context.Context, w *Waiter, key, after string, limit int,
	wait time.Duration) ([]LogEntry, error) {
	deadline := l.now().Add(wait)
	for {
		entries, err := l.store.ReadLog(ctx, key, after, limit)
		if err != nil || len(entries) > 0 || wait <= 0 {
			return entries, err
		}
		if _, why := w.Next(ctx, deadline); why == Timeout || why == Gone {
			return entries, nil
		}
	}
}
