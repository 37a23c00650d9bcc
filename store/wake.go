package store

import "strconv"

// WakeKind says what a wake-up is about: its ID is a task's, a session's or
// a hook's.
type WakeKind string

// Kinds of wake-up. The scripts write the same letters: they get them as
// WAKE_KIND from luaNames.
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
}

// WaitKey names what a waiter waits on.
func WaitKey(kind WakeKind, id string) string { return string(kind) + ":" + id }

// The fields of a wake stream entry, as prelude.lua's wake writes them (it
// gets them as WAKE_FIELD from luaNames).
const (
	wakeFieldKind     = "k"
	wakeFieldID       = "i"
	wakeFieldSession  = "s"
	wakeFieldRevision = "r"
	wakeFieldSnapshot = "j"
)

// parseWake reads a wake stream entry.
func parseWake(v map[string]any) Wake {
	str := func(k string) string { s, _ := v[k].(string); return s }
	rev, _ := strconv.ParseInt(str(wakeFieldRevision), 10, 64)
	wk := Wake{Kind: WakeKind(str(wakeFieldKind)), ID: str(wakeFieldID), SessionID: str(wakeFieldSession), Revision: rev}
	if j := str(wakeFieldSnapshot); j != "" {
		wk.Snapshot = []byte(j)
	}
	return wk
}
