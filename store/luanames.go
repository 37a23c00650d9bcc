package store

import (
	"fmt"
	"strings"
)

// luaNames is Lua put in front of every script, before the prelude: the
// names Go and the scripts share, each defined once, here in Go. A script
// reads them as WAKE_KIND.task, HOOK_FIELD.method, CLOSED.expired, ...
func luaNames() string {
	var b strings.Builder
	b.WriteString("-- Names shared with Go (store/luanames.go writes this part).\n")
	luaTable(&b, "WAKE_KIND", []string{
		"task", string(WakeTask), "session", string(WakeSession), "hook", string(WakeHook),
	})
	luaTable(&b, "WAKE_FIELD", []string{
		"kind", wakeFieldKind, "id", wakeFieldID, "session", wakeFieldSession,
		"revision", wakeFieldRevision, "snapshot", wakeFieldSnapshot,
	})
	luaTable(&b, "HOOK_FIELD", []string{
		"seq", hookFieldSeq, "at", hookFieldAt, "method", hookFieldMethod, "content_type", hookFieldContentType,
		"headers", hookFieldHeaders, "body", hookFieldBody, "body_base64", hookFieldBodyBase64,
		"provider_event_id", hookFieldProviderEventID,
		"dead_event_id", deadFieldEventID, "dead_group", deadFieldGroup,
		"dead_deliveries", deadFieldDeliveries, "dead_at", deadFieldAt,
	})
	luaTable(&b, "OUTBOX_FIELD", []string{
		"endpoint", outboxFieldEndpoint, "scope", outboxFieldScope, "session", outboxFieldSession, "task", outboxFieldTask,
		"event_id", outboxFieldEventID, "event", outboxFieldEvent, "attempt", outboxFieldAttempt,
	})
	luaTable(&b, "OUTBOX_SCOPE", []string{"task", string(ScopeTask), "session", string(ScopeSession)})
	luaTable(&b, "CLOSED", []string{
		"explicitly", ClosedExplicitly, "expired", ClosedExpired,
		"task_terminal", ClosedTaskTerminal, "session_cancelled", ClosedSessionCancelled,
	})
	return b.String()
}

// luaTable writes a local table of string constants, in the order given
// (name, value, name, value ...): the script's text, and so its SHA, is the
// same on every replica.
func luaTable(b *strings.Builder, name string, pairs []string) {
	fmt.Fprintf(b, "local %s = {", name)
	for i := 0; i+1 < len(pairs); i += 2 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, "%s = '%s'", pairs[i], pairs[i+1])
	}
	b.WriteString("}\n")
}
