package handlers

import (
	"context"
	"net/http"
	"time"
)

func (a *api) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 while the store answers, 503 otherwise.
func (a *api) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := a.ready(ctx); err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Capabilities this build serves, for /v1/info; "slack" is added when the
// Slack interactions route is mounted.
var capabilities = []string{
	"sessions", "session-cancel", "tasks", "input-requests", "long-poll", "idempotency", "events-json", "events-sse", "hooks",
	"notifications", "slack-render", "event-kinds", "release", "answer-pages", "console",
}

func (a *api) info(w http.ResponseWriter, r *http.Request) {
	caps := a.caps
	if a.connections != nil {
		caps = append(caps[:len(caps):len(caps)], "connections")
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"name": "taskhook", "version": a.version, "store": a.storeKind,
		"partitions": a.partitions, "capabilities": caps,
	})
}
