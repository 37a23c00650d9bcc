package store

import (
	"fmt"
	"strconv"
)

// replyOutcomes maps the first word of every write script's answer to its
// Outcome; the words are documented in each script's header.
var replyOutcomes = map[string]Outcome{
	"ok": OK, "replay": Replayed, "idem_conflict": IdemConflict, "conflict": Conflict,
	"not_found": Missing, "session_not_found": SessionMissing, "session_not_active": SessionNotActive,
	"exists": Exists, "already": AlreadyCancelled, "task_not_found": TaskMissing, "task_terminal": TaskTerminal,
	"duplicate": Duplicate, "closed": Closed, "rate_limited": RateLimited, "too_many_groups": TooManyGroups,
	"too_many_tasks": TooManyTasks, "not_cancelling": AlreadyCancelled, "tasks_left": Conflict,
}

// scriptReply is a script's answer: an outcome word, then what that outcome
// carries.
type scriptReply []any

// str is member i as text (a string, or an integer written out), "" when
// there is none.
func (r scriptReply) str(i int) string {
	if i < len(r) {
		switch v := r[i].(type) {
		case string:
			return v
		case int64:
			return strconv.FormatInt(v, 10)
		}
	}
	return ""
}

func (r scriptReply) outcome() (Outcome, error) {
	if len(r) == 0 {
		return 0, fmt.Errorf("empty script reply")
	}
	o, ok := replyOutcomes[r.str(0)]
	if !ok {
		return 0, fmt.Errorf("unexpected script reply %q", r.str(0))
	}
	return o, nil
}

// replay is the stored answer a {'replay', status, body} reply carries.
func (r scriptReply) replay() (int, []byte) {
	status, _ := strconv.Atoi(r.str(1))
	return status, []byte(r.str(2))
}
