package handlers

import (
	"errors"
	"html"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/connections"
)

// maxCallbackForm bounds the form a provider posts to a connection callback.
const maxCallbackForm = 64 << 10

func (a *api) listConnections(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"items": a.connections.List(), "nextCursor": nil})
}

// askAuthorization answers 200 with a usable token, or 202 with the pending
// sign-in request.
func (a *api) askAuthorization(w http.ResponseWriter, r *http.Request) {
	var in wire.AuthorizationAsk
	p, idem, ok := a.decodePost(w, r, &in)
	if !ok {
		return
	}
	tok, pending, err := a.connections.Ask(r.Context(), p, chi.URLParam(r, "taskId"), in, idem)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if tok != nil {
		writeJSON(w, http.StatusOK, tok)
		return
	}
	writeJSON(w, http.StatusAccepted, pending)
}

func (a *api) rejectAuthorization(w http.ResponseWriter, r *http.Request) {
	var in struct{}
	p, _, ok := a.decodePost(w, r, &in)
	if !ok {
		return
	}
	out, err := a.connections.Reject(r.Context(), p, chi.URLParam(r, "taskId"), chi.URLParam(r, "name"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) signOut(w http.ResponseWriter, r *http.Request) {
	if err := a.connections.SignOut(r.Context(), principal(r), chi.URLParam(r, "name")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// connectionCallback is the provider's redirect after a sign-in. It reads
// the query and, for a POST, the form; never headers or cookies. The
// attempt is found from the path and the query first: a form naming no
// live attempt is not read.
func (a *api) connectionCallback(w http.ResponseWriter, r *http.Request) {
	params := r.URL.Query()
	landed, err := a.connections.Land(r.Context(), chi.URLParam(r, "name"), chi.URLParam(r, "token"), params)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if r.Method == http.MethodPost {
		// The body guard bounds it (413) and times it (408) like any body.
		body, err := a.body.readUpTo(r, maxCallbackForm)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			a.writeError(w, r, invalidRequest("body", "must be a form"))
			return
		}
		for k, v := range params { // as net/http does: the form's values first
			form[k] = append(form[k], v...)
		}
		params = form
	}
	outcome, err := a.connections.Complete(r.Context(), landed, params)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/v1/connections/signed-in?outcome="+url.QueryEscape(outcome), http.StatusSeeOther)
}

var signinPages = map[string]string{
	"authorized": "You are signed in. You can close this tab.",
	"declined":   "The sign-in was declined. You can close this tab.",
	"failed":     "The sign-in did not complete. You can close this tab.",
}

// signedIn is the plain page a finished sign-in lands on.
func (a *api) signedIn(w http.ResponseWriter, r *http.Request) {
	msg, ok := signinPages[r.URL.Query().Get("outcome")]
	if !ok {
		msg = "You can close this tab."
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("<!doctype html><meta charset=utf-8><title>taskhook sign-in</title><p>" + html.EscapeString(msg) + "</p>\n"))
}

// connectionError maps the refusals of package connections.
func connectionError(err error) *APIError {
	if errors.Is(err, connections.ErrSigninClosed) {
		return apiError(http.StatusGone, wire.CodeSigninClosed, "the sign-in attempt expired or its task ended; ask for the token again")
	}
	return nil
}
