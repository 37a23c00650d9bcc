package handlers

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/channels/web"
)

// The capability routes answer whoever holds their URL, a browser that was
// sent there included, and each promises headers on every one of its
// answers, whoever gives it: the handler, a refusal, or the router (404,
// 405, a method chi does not know). So they are set before routing, from
// the path, rather than by the routes' handlers.
const (
	inputPrefix       = "/v1/input/"
	callbackPrefix    = "/v1/callback/"
	connectionsPrefix = "/v1/connections/"

	// callbackPolicy goes with every answer of a callback URL. A hook's
	// static response is the hook owner's text, sent from this origin: in a
	// sandbox with nothing allowed, a browser that was made to post there
	// shows it as a document of an opaque origin that runs no script and
	// loads nothing, so it cannot reach the console's storage or the API.
	callbackPolicy = "sandbox; default-src 'none'"
)

// capabilityHeaders sets the headers of the capability route a request's
// path belongs to: the answer page's on an answer URL and on a sign-in's
// pages, the sandbox and nosniff on a callback URL.
func capabilityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, inputPrefix), isSigninPath(p):
			web.SetAnswerPageHeaders(w.Header())
		case strings.HasPrefix(p, callbackPrefix):
			h := w.Header()
			h.Set("Content-Security-Policy", callbackPolicy)
			h.Set("X-Content-Type-Options", "nosniff")
		}
		next.ServeHTTP(w, r)
	})
}

// isSigninPath reports whether p is a page of a provider sign-in: a
// connection callback (/v1/connections/{name}/callback, and below it, where
// the path holds the attempt) or the page a sign-in lands on.
func isSigninPath(p string) bool {
	if p == signedInPath {
		return true
	}
	rest, ok := strings.CutPrefix(p, connectionsPrefix)
	if !ok {
		return false
	}
	_, below, _ := strings.Cut(rest, "/")
	return below == "callback" || strings.HasPrefix(below, "callback/")
}

// allowedMethods lists the methods mux serves at the request's path, for
// the Allow header of a 405.
func allowedMethods(mux *chi.Mux, r *http.Request) string {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		if mux.Match(chi.NewRouteContext(), m, path) {
			allow = append(allow, m)
		}
	}
	return strings.Join(allow, ", ")
}
