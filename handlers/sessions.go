package handlers

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/waits"
)

func (a *api) createSession(w http.ResponseWriter, r *http.Request) {
	serveWrite(a, w, r, http.StatusCreated, func(ctx context.Context, p authz.Principal, in sessions.CreateInput, key idem.Key) (idem.Reply, error) {
		raw, replayed, err := a.sessions.Create(ctx, p, in, key)
		return idem.Reply{JSON: raw, Replayed: replayed}, err
	})
}

func (a *api) getSession(w http.ResponseWriter, r *http.Request) {
	_, raw, err := a.sessions.Get(r.Context(), principal(r), chi.URLParam(r, "sessionId"))
	a.writeRead(w, r, raw, err)
}

func (a *api) listSessions(w http.ResponseWriter, r *http.Request) {
	a.serveList(w, r, func(cursor string, limit int) (paging.Page, error) {
		return a.sessions.List(r.Context(), principal(r), r.URL.Query().Get("status"), cursor, limit)
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
	a.sessionEnd(http.StatusOK, func(ctx context.Context, p authz.Principal, id, reason string, key idem.Key) ([]byte, bool, error) {
		return a.sessions.CancelAndWait(ctx, p, id, reason, key, wait)
	})(w, r)
}

// sessionEnd serves cancel (200) and reset (201): same body, same checks.
func (a *api) sessionEnd(status int, end func(ctx context.Context, p authz.Principal, id, reason string, key idem.Key) ([]byte, bool, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		serveWrite(a, w, r, status, func(ctx context.Context, p authz.Principal, in reasonBody, key idem.Key) (idem.Reply, error) {
			if len(in.Reason) > 1000 {
				return idem.Reply{}, invalidRequest("reason", "at most 1000 bytes")
			}
			raw, replayed, err := end(ctx, p, chi.URLParam(r, "sessionId"), in.Reason, key)
			return idem.Reply{JSON: raw, Replayed: replayed}, err
		})
	}
}
