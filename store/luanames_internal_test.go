package store

import (
	"strings"
	"testing"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/waits"
)

func TestInlineNames(t *testing.T) {
	got, err := inlineNames("-- one of WAKE_KIND\nlocal k = WAKE_KIND.task .. OUTBOX_FIELD.event_id\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "local k = '" + string(waits.WakeTask) + "' .. '" + outboxFieldEventID + "'"
	if !strings.Contains(got, want) {
		t.Errorf("inlined:\n%s\nwant a line %q", got, want)
	}
	for _, bad := range []string{
		"local k = WAKE_KIND.nope",             // a name Go does not define
		"for _, f in pairs(WAKE_FIELD) do end", // a table used as a table
		"local t = CLOSED\nreturn t.expired",   // the same, through a variable
		"local s = HOOK_STATUS",                // the same, for a table of statuses
	} {
		if _, err := inlineNames(bad); err == nil {
			t.Errorf("inlineNames(%q): no error", bad)
		}
	}
}

// The statuses, close reasons and fields the scripts write are Go's values.
func TestInlineNamesFromWire(t *testing.T) {
	cases := map[string]string{
		"HOOK_STATUS.open":         wire.HookOpen,
		"HOOK_STATUS.closed":       wire.HookClosed,
		"CLOSED.explicitly":        wire.CloseReasonClosed,
		"CLOSED.expired":           wire.CloseReasonExpired,
		"CLOSED.task_terminal":     wire.CloseReasonTaskTerminal,
		"CLOSED.session_cancelled": wire.CloseReasonSessionCancelled,
		"SESSION_STATUS.active":    wire.SessionActive,
		"TASK_STATUS.working":      wire.StatusWorking,
		"ENDPOINT_STATUS.dead":     wire.EndpointDead,
		"RECORD_FIELD.endpoints":   recordFieldEndpoints,
		"HOOK_HASH.config":         hookFieldConfig,
		"HOOK_HASH.ceiling":        hookFieldCeiling,
		"IDEM.command":             commandHash,
		"IDEM.task_record":         taskCommandHash,
		"RECORD_FIELD.commands":    taskFieldCommands,
		"RECORD_FIELD.undo":        taskFieldUndo,
		"RECORD_FIELD.undos":       taskFieldUndos,
		"RECORD_FIELD.log":         taskFieldLog,
		"EVENT_FIELD.cut":          eventFieldCut,
		"SESSION_FIELD.kept":       sessionFieldKept,
		"INDEX_MEMBER.kept":        indexMemberKept,
	}
	for ref, want := range cases {
		got, err := inlineNames("return " + ref)
		if err != nil || got != "return '"+want+"'" {
			t.Errorf("%s: %q, %v; want '%s'", ref, got, err, want)
		}
	}
}

// The set of terminal statuses is wire.Terminal's, written as a Lua table.
func TestInlineTerminalStatuses(t *testing.T) {
	got, err := inlineNames("local terminal = TERMINAL_STATUSES")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range wire.TaskStatuses {
		in := strings.Contains(got, "['"+st+"'] = true")
		if in != wire.Terminal(st) {
			t.Errorf("%s in the set: %v; wire.Terminal: %v (%s)", st, in, wire.Terminal(st), got)
		}
	}
}

// A value with bytes that are not printable ASCII is written with Lua's
// escapes, so a script's text holds none.
func TestLuaLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"plain":       `'plain'`,
		"it's":        `'it\'s'`,
		`a\b`:         `'a\\b'`,
		FillQueueID:   `'\001'`,
		FillSeq + "7": `'\0027'`,
	} {
		if got := luaLiteral(in); got != want {
			t.Errorf("luaLiteral(%q) = %s, want %s", in, got, want)
		}
	}
}
