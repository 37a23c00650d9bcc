package handlers

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/endpoints"
	"github.com/taskhook/taskhook/idem"
)

// Notification endpoints of a session (param "sessionId") or a task
// ("taskId"): add, list, remove, and a session's dead letters.

func notifyOwner(r *http.Request) endpoints.Owner {
	if id := chi.URLParam(r, "sessionId"); id != "" {
		return endpoints.Owner{Session: true, ID: id}
	}
	return endpoints.Owner{ID: chi.URLParam(r, "taskId")}
}

func (a *api) addEndpoint(w http.ResponseWriter, r *http.Request) {
	serveWrite(a, w, r, http.StatusCreated, func(ctx context.Context, p authz.Principal, in wire.EndpointRequest, key idem.Key) (idem.Reply, error) {
		return a.notify.Add(ctx, p, notifyOwner(r), in, key)
	})
}

func (a *api) listEndpoints(w http.ResponseWriter, r *http.Request) {
	eps, err := a.notify.List(r.Context(), principal(r), notifyOwner(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"notify": eps})
}

func (a *api) removeEndpoint(w http.ResponseWriter, r *http.Request) {
	left, err := a.notify.Remove(r.Context(), principal(r), notifyOwner(r), chi.URLParam(r, "endpointId"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"notify": left})
}

func (a *api) deadLetters(w http.ResponseWriter, r *http.Request) {
	limit, err := parseLimit(r, 50, 100)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	after := r.URL.Query().Get("after")
	items, cursor, err := a.notify.DeadLetters(r.Context(), principal(r), chi.URLParam(r, "sessionId"), after, limit)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deadLetters": items, "cursor": cursor})
}
