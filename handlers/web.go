package handlers

import (
	"errors"
	"mime"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/channels/web"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/tasks"
)

// root sends a browser (a request that prefers HTML) to the web console;
// any other client gets the JSON 404 of a path that is not the API's,
// saying where the API and the console are.
func (a *api) root(w http.ResponseWriter, r *http.Request) {
	if web.WantsHTML(r) {
		w.Header().Set("Location", web.ConsolePath)
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	writeAPIError(w, errNothingAtRoot)
}

var errNothingAtRoot = apiError(http.StatusNotFound, wire.CodeNotFound,
	"no resource at /: the API is under /v1 (GET /v1/info), the web console at /console/")

// answerPage shows the request an answer URL names, as an HTML page to a
// browser and as JSON to anything else. A GET never answers.
func (a *api) answerPage(w http.ResponseWriter, r *http.Request) {
	view, err := a.tasks.ViewAnswer(r.Context(), chi.URLParam(r, "token"))
	html := web.WantsHTML(r)
	switch {
	case err != nil && html:
		a.writePageError(w, r, err)
	case err != nil:
		a.writeError(w, r, err)
	case html:
		web.RenderAnswer(w, a.log, http.StatusOK, web.AnswerPage{AnswerView: view})
	default:
		writeJSON(w, http.StatusOK, view)
	}
}

// answerInputAny answers through an answer URL: JSON from a channel, or the
// answer page's own form post, which is answered with a redirect to the
// page (post, redirect, get), so a reload never posts twice. A form post is
// a form body from a client that prefers HTML (a browser): curl -d sends
// JSON as a form too, and keeps its JSON answer.
func (a *api) answerInputAny(w http.ResponseWriter, r *http.Request) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/x-www-form-urlencoded" && web.WantsHTML(r) {
		a.answerForm(w, r)
		return
	}
	a.answerInput(w, r)
}

// answerForm answers the form of the answer page: a field optionId (a
// button) or text (the text box). A request that is no longer open, answered
// by this post, another one or another channel, is shown by the page it
// redirects to; a refused answer shows the form again with the reason.
func (a *api) answerForm(w http.ResponseWriter, r *http.Request) {
	token := chi.URLParam(r, "token")
	scope, err := idempotencyScope(r, authz.Principal{})
	if err != nil {
		a.writePageError(w, r, err)
		return
	}
	target, err := a.tasks.ResolveAnswer(r.Context(), token, idem.Key{Scope: scope})
	if errors.Is(err, tasks.ErrInputClosed) {
		a.seeAnswerPage(w, r)
		return
	}
	if err != nil {
		a.writePageError(w, r, err)
		return
	}
	body, err := a.readBody(r)
	var key idem.Key
	if err == nil {
		key, err = idempotency(r, authz.Principal{}, body)
	}
	var form url.Values
	if err == nil {
		if form, err = url.ParseQuery(string(body)); err != nil {
			err = invalidRequest("body", "is not a form")
		}
	}
	if err != nil {
		a.writePageError(w, r, err)
		return
	}
	in := tasks.AnswerInput{OptionID: form.Get("optionId"), Text: form.Get("text")}
	_, _, err = a.tasks.Answer(r.Context(), target, in, key)
	var refused *problem.ValidationError
	switch {
	case err == nil, errors.Is(err, tasks.ErrInputClosed):
		a.seeAnswerPage(w, r)
	case errors.As(err, &refused):
		view, verr := a.tasks.ViewAnswer(r.Context(), token)
		if verr != nil {
			a.writePageError(w, r, verr)
			return
		}
		web.RenderAnswer(w, a.log, http.StatusBadRequest, web.AnswerPage{AnswerView: view, Error: answerRefusal(refused)})
	default:
		a.writePageError(w, r, err)
	}
}

// answerRefusal says why an answer was refused, as the page's reader can act on it.
func answerRefusal(err *problem.ValidationError) string {
	switch err.Field {
	case "text":
		return "This question takes one of the buttons, not text."
	case "optionId":
		return "Pick one of the options below."
	}
	return "The answer was not taken: " + err.Message
}

// seeAnswerPage sends the browser back to the page of the URL it posted to.
func (a *api) seeAnswerPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Location", r.URL.EscapedPath())
	w.WriteHeader(http.StatusSeeOther)
}

// writePageError is writeError as an HTML page of an answer URL: the same
// status, the reason in words, no error code or id (a 500 is logged with its
// errorId).
func (a *api) writePageError(w http.ResponseWriter, r *http.Request, err error) {
	a.writeProblemPage(w, r, err, web.AnswerProblems)
}

// writeProblemPage is writeError as one of the error pages of set.
func (a *api) writeProblemPage(w http.ResponseWriter, r *http.Request, err error, set web.Problems) {
	e, ok := a.answerOf(w, r, err)
	if !ok {
		return
	}
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterUnavailable)
	} else if e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
	}
	web.RenderProblem(w, a.log, e.Status, set)
}
