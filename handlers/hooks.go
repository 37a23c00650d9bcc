package handlers

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/hooks"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/paging"
)

func (a *api) getHook(w http.ResponseWriter, r *http.Request) {
	_, raw, err := a.hooks.Get(r.Context(), principal(r), chi.URLParam(r, "hookId"))
	a.writeRead(w, r, raw, err)
}

func (a *api) listHooks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := hooks.ListFilter{TaskID: q.Get("taskId"), SessionID: q.Get("sessionId")}
	a.serveList(w, r, func(cursor string, limit int) (paging.Page, error) {
		return a.hooks.List(r.Context(), principal(r), f, cursor, limit)
	})
}

func (a *api) closeHook(w http.ResponseWriter, r *http.Request) {
	serveWrite(a, w, r, http.StatusOK, func(ctx context.Context, p authz.Principal, _ struct{}, key idem.Key) (idem.Reply, error) {
		return a.hooks.Close(ctx, p, chi.URLParam(r, "hookId"), key)
	})
}

// hookEvents is the consuming read of a consumer group.
func (a *api) hookEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o := hooks.ReadOptions{Group: q.Get("group"), Consumer: q.Get("consumer")}
	var err error
	if o.Count, err = queryInt(r, "count", 1, hooks.MaxCount); err != nil {
		a.writeError(w, r, err)
		return
	}
	vis, err := queryInt(r, "visibilityMs", 1, int(hooks.MaxVisibility.Milliseconds()))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	o.Visibility = time.Duration(vis) * time.Millisecond
	if o.Wait, err = parseWait(r); err != nil {
		a.writeError(w, r, err)
		return
	}
	batch, err := a.hooks.Read(r.Context(), principal(r), chi.URLParam(r, "hookId"), o)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, batch)
}

// queryInt reads an optional whole-number query parameter in [lo, hi]; 0
// when it is absent.
func queryInt(r *http.Request, name string, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, invalidRequest(name, "must be a whole number from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
	}
	return n, nil
}

func (a *api) ackHook(w http.ResponseWriter, r *http.Request) {
	serveWrite(a, w, r, http.StatusOK, func(ctx context.Context, p authz.Principal, in hooks.AckInput, key idem.Key) (idem.Reply, error) {
		return a.hooks.Ack(ctx, p, chi.URLParam(r, "hookId"), in, key)
	})
}

// hookLog is the non-consuming read of everything a hook received.
func (a *api) hookLog(w http.ResponseWriter, r *http.Request) {
	limit, err := parseLimit(r, 50, 100)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	page, err := a.hooks.Log(r.Context(), principal(r), chi.URLParam(r, "hookId"), r.URL.Query().Get("after"), limit)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// callback takes a webhook: no JWT, the token in the path is the
// capability. The path (and so the token) is never logged: the request log
// has the route template only. The token is resolved before the body is
// read, so a post to an unknown or dead hook costs no body bytes.
func (a *api) callback(w http.ResponseWriter, r *http.Request) {
	target, err := a.hooks.Resolve(r.Context(), chi.URLParam(r, "token"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	body, err := a.readBody(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	acc, err := a.hooks.Ingest(r.Context(), target, hooks.Post{Method: r.Method, Header: r.Header, Body: body})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if res := acc.Response; res != nil {
		w.Header().Set("Content-Type", res.ContentType)
		w.WriteHeader(res.Status)
		_, _ = w.Write([]byte(res.Body))
		return
	}
	writeJSON(w, http.StatusAccepted, struct {
		OK        bool   `json:"ok"`
		EventID   string `json:"eventId"`
		Duplicate bool   `json:"duplicate"`
	}{true, acc.EventID, acc.Duplicate})
}
