package waits

import "slices"

// WakeKind says what a wake-up is about: its ID is a task's, a session's or
// a hook's.
type WakeKind string

// Kinds of wake-up. The store's scripts write the same letters: the store
// hands them over as WAKE_KIND.
const (
	WakeTask    WakeKind = "t"
	WakeSession WakeKind = "s"
	WakeHook    WakeKind = "h"
)

// Wake is one wake-up hint: something changed on a task, a session or a hook.
type Wake struct {
	Kind      WakeKind
	ID        string
	SessionID string // the session of the task or hook; the ID itself for a session
	Revision  int64
	Snapshot  []byte // the task's json when small enough, else nil
	// Types are the types of the events the change appended, in order; empty
	// when it appended none, nil when unknown (a waiter then reads the log).
	Types []string
	// First is the lowest revision a wake of a task stands for when it
	// stands for several in a row (Waiters coalesce the wakes a waiter has
	// not read yet; Types are then the types of all of them); 0 when it
	// stands for Revision alone.
	First int64
	// Merged says the wake also stands for wakes of other tasks, sessions
	// or hooks that were coalesced into it: only its Types speak for them.
	Merged bool
}

// WaitKey names what a waiter waits on.
func WaitKey(kind WakeKind, id string) string { return string(kind) + ":" + id }

// firstRevision is the lowest revision the wake stands for.
func (wk Wake) firstRevision() int64 {
	if wk.First > 0 && wk.First < wk.Revision {
		return wk.First
	}
	return wk.Revision
}

// FollowsOn reports whether the wake of a task stands for every change
// after revision known up to its own, so that a waiter that knew the task
// at known has missed none of them.
func (wk Wake) FollowsOn(known int64) bool {
	return !wk.Merged && wk.Types != nil && wk.firstRevision() <= known+1
}

// coalesce is the one wake that stands for pending (not read yet) and then
// next: for one task, the newer of the two, standing for the revisions of
// both; else next, marked Merged. The event types are those of both (nil,
// unknown, when either is unknown or, for one task, when revisions between
// the two are missing).
func coalesce(pending, next Wake) Wake {
	types := unionTypes(pending.Types, next.Types)
	if pending.Kind != next.Kind || pending.ID != next.ID {
		next.Types, next.Merged = types, true
		return next
	}
	newer, older := next, pending
	if pending.Revision > next.Revision {
		newer, older = pending, next
	}
	if newer.firstRevision() > older.Revision+1 {
		types = nil // a wake between the two was lost: what it was about is unknown
	}
	newer.First = min(pending.firstRevision(), next.firstRevision())
	newer.Merged = pending.Merged || next.Merged
	newer.Types = types
	return newer
}

func unionTypes(a, b []string) []string {
	if a == nil || b == nil {
		return nil
	}
	out := make([]string, 0, len(a)+len(b))
	out = append(out, a...)
	for _, t := range b {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
