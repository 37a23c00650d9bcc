package store

import (
	"strconv"
	"strings"

	"github.com/taskhook/taskhook/waits"
)

// The fields of a wake stream entry, as prelude.lua's wake writes them (it
// gets them as WAKE_FIELD from luaNames).
const (
	wakeFieldKind     = "k"
	wakeFieldID       = "i"
	wakeFieldSession  = "s"
	wakeFieldRevision = "r"
	wakeFieldTypes    = "e" // the event types, comma-separated; absent when unknown
)

// parseWake reads a wake stream entry. It carries no record (an entry an
// older replica wrote with its task's json under "j" is read without it).
func parseWake(v map[string]any) waits.Wake {
	str := func(k string) string { s, _ := v[k].(string); return s }
	rev, _ := strconv.ParseInt(str(wakeFieldRevision), 10, 64)
	wk := waits.Wake{Kind: waits.WakeKind(str(wakeFieldKind)), ID: str(wakeFieldID), SessionID: str(wakeFieldSession), Revision: rev}
	if types, ok := v[wakeFieldTypes].(string); ok {
		wk.Types = []string{}
		if types != "" {
			wk.Types = strings.Split(types, ",")
		}
	}
	return wk
}
