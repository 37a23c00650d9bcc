package handlers

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/channels/web"
	"github.com/taskhook/taskhook/connections"
	"github.com/taskhook/taskhook/tasks"
)

// maxSignInReturnForm bounds the form a provider posts to a connection callback.
const maxSignInReturnForm = 64 << 10

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

// signInReturn is the provider's redirect after a sign-in. It reads
// the query and, for a POST, the form; never headers or cookies. The
// attempt is found from the path and the query first: a form naming no
// live attempt is not read. The answer is a redirect to the page that says
// how the sign-in ended, naming the connection and the outcome only.
// (capabilityHeaders sets the headers of every answer.)
func (a *api) signInReturn(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	params := r.URL.Query()
	landed, err := a.connections.Land(r.Context(), name, chi.URLParam(r, "token"), params)
	if err != nil {
		a.writeSignInReturnError(w, r, err)
		return
	}
	if r.Method == http.MethodPost {
		// The body guard bounds it (413) and times it (408) like any body.
		body, err := a.body.ReadUpTo(r, maxSignInReturnForm)
		if err != nil {
			a.writeSignInReturnError(w, r, err)
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			a.writeSignInReturnError(w, r, invalidRequest("body", "must be a form"))
			return
		}
		for k, v := range params { // as net/http does: the form's values first
			form[k] = append(form[k], v...)
		}
		params = form
	}
	outcome, err := a.connections.Complete(r.Context(), landed, params)
	if err != nil {
		a.writeSignInReturnError(w, r, err)
		return
	}
	page := url.Values{"connection": {name}, "outcome": {outcome}}
	http.Redirect(w, r, signedInPath+"?"+page.Encode(), http.StatusSeeOther)
}

// signedInPath is the page a finished sign-in lands on.
const signedInPath = "/v1/connections/signed-in"

// signinPageStatuses are the refusals of a connection callback that a
// browser gets as a page, those a person can act on: the link was used or
// is unknown (404), it ran out or its task ended (410), the store did not
// answer (503, reload). The others (a malformed form, a body too large, a
// bug) are the provider's or the service's to mend, and stay JSON.
var signinPageStatuses = map[int]bool{
	http.StatusNotFound: true, http.StatusGone: true, http.StatusServiceUnavailable: true,
}

// writeSignInReturnError answers a refused callback: a page to a browser, for
// the statuses it has one for; else the JSON error.
func (a *api) writeSignInReturnError(w http.ResponseWriter, r *http.Request, err error) {
	if e := toAPIError(err); e != nil && signinPageStatuses[e.Status] && web.WantsHTML(r) {
		a.writeProblemPage(w, r, err, web.SigninProblems)
		return
	}
	a.writeError(w, r, err)
}

// signedIn is the page a finished sign-in lands on: how it ended, and that
// the tab can be closed; JSON ({connection, outcome}) to a client that
// prefers it. It shows only a configured connection's name and a known
// outcome, so a crafted link cannot make it say anything else.
func (a *api) signedIn(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var page web.SigninPage
	if name := q.Get("connection"); a.connections.Has(name) {
		page.Connection = name
	}
	switch o := q.Get("outcome"); o {
	case tasks.OutcomeAuthorized, tasks.OutcomeDeclined, tasks.OutcomeFailed:
		page.Outcome = o
	}
	if web.PrefersJSON(r) {
		writeJSON(w, http.StatusOK, page)
		return
	}
	web.RenderSignin(w, a.log, page)
}

// connectionError maps the refusals of package connections.
func connectionError(err error) *APIError {
	if errors.Is(err, connections.ErrSigninClosed) {
		return apiError(http.StatusGone, wire.CodeSigninClosed, "the sign-in attempt expired or its task ended; ask for the token again")
	}
	return nil
}
