package store

import (
	"strings"
	"testing"

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
	} {
		if _, err := inlineNames(bad); err == nil {
			t.Errorf("inlineNames(%q): no error", bad)
		}
	}
}
