package store

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/taskhook/taskhook/waits"
)

// luaNames are the names Go and the scripts share, each defined once, here
// in Go. A script writes them as WAKE_KIND.task, HOOK_FIELD.method,
// CLOSED.expired, ...; inlineNames puts each one's value in its place when
// the scripts are loaded, so no run of a script builds tables of them.
func luaNames() map[string]string {
	b := map[string]string{}
	luaTable(b, "WAKE_KIND", []string{
		"task", string(waits.WakeTask), "session", string(waits.WakeSession), "hook", string(waits.WakeHook),
	})
	luaTable(b, "WAKE_FIELD", []string{
		"kind", wakeFieldKind, "id", wakeFieldID, "session", wakeFieldSession,
		"revision", wakeFieldRevision, "snapshot", wakeFieldSnapshot, "types", wakeFieldTypes,
	})
	luaTable(b, "HOOK_FIELD", []string{
		"seq", hookFieldSeq, "at", hookFieldAt, "method", hookFieldMethod, "content_type", hookFieldContentType,
		"headers", hookFieldHeaders, "body", hookFieldBody, "body_base64", hookFieldBodyBase64,
		"provider_event_id", hookFieldProviderEventID,
		"dead_event_id", deadFieldEventID, "dead_group", deadFieldGroup,
		"dead_deliveries", deadFieldDeliveries, "dead_at", deadFieldAt,
	})
	luaTable(b, "OUTBOX_FIELD", []string{
		"endpoint", outboxFieldEndpoint, "scope", outboxFieldScope, "session", outboxFieldSession, "task", outboxFieldTask,
		"event_id", outboxFieldEventID, "event", outboxFieldEvent, "attempt", outboxFieldAttempt,
	})
	luaTable(b, "OUTBOX_SCOPE", []string{"task", string(ScopeTask), "session", string(ScopeSession)})
	luaTable(b, "CLOSED", []string{
		"explicitly", ClosedExplicitly, "expired", ClosedExpired,
		"task_terminal", ClosedTaskTerminal, "session_cancelled", ClosedSessionCancelled,
	})
	return b
}

// luaTable adds the names of one table (name, value, name, value ...).
func luaTable(b map[string]string, table string, pairs []string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		b[table+"."+pairs[i]] = pairs[i+1]
	}
}

// luaNameRef is a use of a shared name in a script.
var luaNameRef = regexp.MustCompile(`\b(WAKE_KIND|WAKE_FIELD|HOOK_FIELD|OUTBOX_FIELD|OUTBOX_SCOPE|CLOSED)\.([A-Za-z_]+)\b`)

// luaNameTable is any mention of a table of shared names, in code or not.
var luaNameTable = regexp.MustCompile(`\b(WAKE_KIND|WAKE_FIELD|HOOK_FIELD|OUTBOX_FIELD|OUTBOX_SCOPE|CLOSED)\b`)

// inlineNames replaces each use of a shared name in a script's source with
// its value as a Lua string. A name Go does not define, or a table used other
// than by one of its names in code, is an error: the script is not loaded.
// The result is the same text on every replica, and so is its SHA.
func inlineNames(src string) (string, error) {
	names := luaNames()
	var errs []error
	out := luaNameRef.ReplaceAllStringFunc(src, func(ref string) string {
		v, ok := names[ref]
		if !ok {
			errs = append(errs, fmt.Errorf("lua: unknown name %s", ref))
			return ref
		}
		return "'" + v + "'"
	})
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		if m := luaNameTable.FindString(line); m != "" {
			errs = append(errs, fmt.Errorf("lua: table %s used other than by a name: %q", m, line))
		}
	}
	return out, errors.Join(errs...)
}
