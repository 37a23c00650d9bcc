package handlers

import (
	"net/http"
	"strings"

	"github.com/taskhook/taskhook/api/wire"

	"github.com/taskhook/taskhook/authz"
)

// authenticate puts the bearer token's principal into the context, or
// answers 401.
func (a *api) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok {
			writeAPIError(w, apiError(http.StatusUnauthorized, wire.CodeUnauthorized, "a bearer token is required"))
			return
		}
		p, err := a.verifier.Verify(token)
		if err != nil {
			e := apiError(http.StatusUnauthorized, wire.CodeUnauthorized, err.Error())
			e.BearerError = "invalid_token"
			writeAPIError(w, e)
			return
		}
		a.body.Authenticated(r)
		next.ServeHTTP(w, r.WithContext(authz.WithPrincipal(r.Context(), p)))
	})
}

func principal(r *http.Request) authz.Principal {
	p, _ := authz.FromContext(r.Context())
	return p
}

// identify is authenticate for a face that answers its own 401s: a valid
// bearer token's principal goes into the context, and its body on the
// authenticated budget; any other request passes as it is.
func (a *api) identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token, ok := bearer(r); ok {
			if p, err := a.verifier.Verify(token); err == nil {
				a.body.Authenticated(r)
				r = r.WithContext(authz.WithPrincipal(r.Context(), p))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// bearer is the request's bearer token, if it carries one.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}
