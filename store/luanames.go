package store

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/waits"
)

// luaNames are the names Go and the scripts share, each defined once, here
// in Go or in api/wire. A script writes them as WAKE_KIND.task,
// HOOK_STATUS.open, CLOSED.expired, ...; inlineNames puts each one's value
// in its place when the scripts are loaded, so no run of a script builds
// tables of them.
func luaNames() map[string]string {
	b := map[string]string{}
	luaTable(b, "IDEM", []string{"command", commandHash, "task_record", taskCommandHash})
	luaTable(b, "WAKE_KIND", []string{
		"task", string(waits.WakeTask), "session", string(waits.WakeSession), "hook", string(waits.WakeHook),
	})
	luaTable(b, "WAKE_FIELD", []string{
		"kind", wakeFieldKind, "id", wakeFieldID, "session", wakeFieldSession,
		"revision", wakeFieldRevision, "types", wakeFieldTypes,
	})
	luaTable(b, "HOOK_FIELD", []string{
		"seq", hookFieldSeq,
		"dead_event_id", deadFieldEventID, "dead_group", deadFieldGroup,
		"dead_deliveries", deadFieldDeliveries, "dead_at", deadFieldAt,
	})
	luaTable(b, "HOOK_HASH", []string{"config", hookFieldConfig, "ceiling", hookFieldCeiling})
	luaTable(b, "RECORD_FIELD", []string{
		"endpoints", recordFieldEndpoints, "secret", recordFieldSecret, "commands", taskFieldCommands,
		"undo", taskFieldUndo, "undos", taskFieldUndos, "log", taskFieldLog,
	})
	luaTable(b, "EVENT_FIELD", []string{"cut", eventFieldCut, "parts", eventFieldParts})
	luaTable(b, "EVENT_PART", []string{"sep", eventPartSep})
	luaTable(b, "EVENT_FORM", []string{"parts", eventFormParts})
	luaTable(b, "EVENT_DATA", []string{"task_first", eventTaskData})
	luaTable(b, "ENDPOINT_MEMBER", []string{"by_executor", EndpointByExecutor})
	luaTable(b, "TOOL_FIELD", []string{
		"json", toolFieldJSON, "executor", toolFieldExecutor, "revision", toolFieldRevision,
		"created", toolFieldCreated, "open", toolFieldOpen, "indexed", toolFieldIndexed,
	})
	luaTable(b, "OUTBOX_FIELD", []string{
		"endpoint", outboxFieldEndpoint, "scope", outboxFieldScope, "session", outboxFieldSession, "task", outboxFieldTask,
		"event_id", outboxFieldEventID, "type", outboxFieldType, "event", outboxFieldEvent, "attempt", outboxFieldAttempt,
	})
	luaTable(b, "OUTBOX_SCOPE", []string{"task", string(ScopeTask), "session", string(ScopeSession)})
	luaTable(b, "TASK_STATUS", []string{"working", wire.StatusWorking, "cancelled", wire.StatusCancelled})
	luaTable(b, "SESSION_STATUS", []string{"active", wire.SessionActive, "cancelled", wire.SessionCancelled})
	luaTable(b, "SESSION_FIELD", []string{"kept", sessionFieldKept})
	luaTable(b, "INDEX_MEMBER", []string{"kept", indexMemberKept})
	luaTable(b, "ENDPOINT_STATUS", []string{"active", wire.EndpointActive, "dead", wire.EndpointDead})
	luaTable(b, "HOOK_STATUS", []string{"open", wire.HookOpen, "closed", wire.HookClosed})
	luaTable(b, "CLOSED", []string{
		"explicitly", wire.CloseReasonClosed, "expired", wire.CloseReasonExpired,
		"task_terminal", wire.CloseReasonTaskTerminal, "session_cancelled", wire.CloseReasonSessionCancelled,
	})
	luaTable(b, "FILL", []string{"queue_id", FillQueueID, "seq", FillSeq})
	return b
}

// luaSets are the sets Go gives the scripts: a script writes one's name
// where it wants the set, a table whose keys are its members (each true).
func luaSets() map[string][]string {
	var terminal []string
	for _, st := range wire.TaskStatuses {
		if wire.Terminal(st) {
			terminal = append(terminal, st)
		}
	}
	return map[string][]string{"TERMINAL_STATUSES": terminal}
}

// luaTable adds the names of one table (name, value, name, value ...).
func luaTable(b map[string]string, table string, pairs []string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		b[table+"."+pairs[i]] = pairs[i+1]
	}
}

// luaLiteral is s as a Lua string literal: quoted, with the quote, the
// backslash and every byte that is not printable ASCII escaped.
func luaLiteral(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			fmt.Fprintf(&b, `\%03d`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// luaSet is a set as a Lua table constructor, its members in order.
func luaSet(members []string) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = "[" + luaLiteral(m) + "] = true"
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// luaNamePatterns are what inlineNames looks for: a use of a shared name
// (TABLE.name), any mention of a table of shared names, and a use of a set.
func luaNamePatterns(names map[string]string, sets map[string][]string) (ref, table, set *regexp.Regexp) {
	var tables []string
	for n := range names {
		t, _, _ := strings.Cut(n, ".")
		if !slices.Contains(tables, t) {
			tables = append(tables, t)
		}
	}
	var setNames []string
	for n := range sets {
		setNames = append(setNames, n)
	}
	sort.Strings(tables)
	sort.Strings(setNames)
	alt := strings.Join(tables, "|")
	ref = regexp.MustCompile(`\b(` + alt + `)\.([A-Za-z_]+)\b`)
	table = regexp.MustCompile(`\b(` + alt + `)\b`)
	set = regexp.MustCompile(`\b(` + strings.Join(setNames, "|") + `)\b`)
	return ref, table, set
}

// inlineNames replaces each use of a shared name in a script's source with
// its value as a Lua string, and each use of a set with its table. A name
// Go does not define, or a table used other than by one of its names in
// code, is an error: the script is not loaded. The result is the same text
// on every replica, and so is its SHA.
func inlineNames(src string) (string, error) {
	names, sets := luaNames(), luaSets()
	refPattern, tablePattern, setPattern := luaNamePatterns(names, sets)
	var errs []error
	out := refPattern.ReplaceAllStringFunc(src, func(ref string) string {
		v, ok := names[ref]
		if !ok {
			errs = append(errs, fmt.Errorf("lua: unknown name %s", ref))
			return ref
		}
		return luaLiteral(v)
	})
	out = setPattern.ReplaceAllStringFunc(out, func(name string) string { return luaSet(sets[name]) })
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		if m := tablePattern.FindString(line); m != "" {
			errs = append(errs, fmt.Errorf("lua: table %s used other than by a name: %q", m, line))
		}
	}
	return out, errors.Join(errs...)
}
