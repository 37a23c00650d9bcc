package handlers

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
)

func (a *api) createSession(w http.ResponseWriter, r *http.Request) {
	var in sessions.CreateInput
	p, idem, ok := a.decodePost(w, r, &in)
	if !ok {
		return
	}
	raw, replayed, err := a.sessions.Create(r.Context(), p, in, idem)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeReplayable(w, http.StatusCreated, raw, replayed)
}

func (a *api) getSession(w http.ResponseWriter, r *http.Request) {
	_, raw, err := a.sessions.Get(r.Context(), principal(r), chi.URLParam(r, "sessionId"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, raw)
}

func (a *api) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, cursor, err := parsePage(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	page, err := a.sessions.List(r.Context(), principal(r), r.URL.Query().Get("status"), cursor, limit)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeList(w, page.Items, page.Next)
}

func (a *api) sessionEvents(w http.ResponseWriter, r *http.Request) {
	a.serveEvents(w, r, func(q store.LogQuery) (store.LogPage, error) {
		return a.sessions.Events(r.Context(), principal(r), chi.URLParam(r, "sessionId"), q)
	})
}

type reasonBody struct {
	Reason string `json:"reason"`
}

// cancelSession cancels a session; with ?wait= it waits for the executors
// to release the tasks it cancelled, and its answer says which were not
// (unreleasedTaskIds).
func (a *api) cancelSession(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("wait") == "" {
		a.sessionEnd(http.StatusOK, a.sessions.Cancel)(w, r)
		return
	}
	wait, err := parseWait(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.sessionEnd(http.StatusOK, func(ctx context.Context, p authz.Principal, id, reason string, idem store.Idempotency) ([]byte, bool, error) {
		return a.sessions.CancelAndWait(ctx, p, id, reason, idem, wait)
	})(w, r)
}

// sessionEnd serves cancel (200) and reset (201): same body, same checks.
func (a *api) sessionEnd(status int, end func(ctx context.Context, p authz.Principal, id, reason string, idem store.Idempotency) ([]byte, bool, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in reasonBody
		p, idem, ok := a.decodePost(w, r, &in)
		if !ok {
			return
		}
		if len(in.Reason) > 1000 {
			a.writeError(w, r, invalidRequest("reason", "at most 1000 bytes"))
			return
		}
		raw, replayed, err := end(r.Context(), p, chi.URLParam(r, "sessionId"), in.Reason, idem)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		writeReplayable(w, status, raw, replayed)
	}
}
