package handlers

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/waits"
)

func (a *api) createSession(w http.ResponseWriter, r *http.Request) {
	serveWrite(a, w, r, http.StatusCreated, func(ctx context.Context, p authz.Principal, in sessions.CreateInput, idem store.Idempotency) (store.Reply, error) {
		raw, replayed, err := a.sessions.Create(ctx, p, in, idem)
		return store.Reply{JSON: raw, Replayed: replayed}, err
	})
}

func (a *api) getSession(w http.ResponseWriter, r *http.Request) {
	_, raw, err := a.sessions.Get(r.Context(), principal(r), chi.URLParam(r, "sessionId"))
	a.writeRead(w, r, raw, err)
}

func (a *api) listSessions(w http.ResponseWriter, r *http.Request) {
	a.serveList(w, r, func(after *store.Position, limit int) (store.Page, error) {
		return a.sessions.List(r.Context(), principal(r), r.URL.Query().Get("status"), after, limit)
	})
}

func (a *api) sessionEvents(w http.ResponseWriter, r *http.Request) {
	p, id := principal(r), chi.URLParam(r, "sessionId")
	a.serveEvents(w, r, func(ctx context.Context, q waits.LogQuery) *waits.LogPoll {
		return a.sessions.PollEvents(ctx, p, id, q)
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
		serveWrite(a, w, r, status, func(ctx context.Context, p authz.Principal, in reasonBody, idem store.Idempotency) (store.Reply, error) {
			if len(in.Reason) > 1000 {
				return store.Reply{}, invalidRequest("reason", "at most 1000 bytes")
			}
			raw, replayed, err := end(ctx, p, chi.URLParam(r, "sessionId"), in.Reason, idem)
			return store.Reply{JSON: raw, Replayed: replayed}, err
		})
	}
}
