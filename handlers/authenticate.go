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
		h := r.Header.Get("Authorization")
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			writeAPIError(w, apiError(http.StatusUnauthorized, wire.CodeUnauthorized, "a bearer token is required"))
			return
		}
		p, err := a.verifier.Verify(strings.TrimSpace(token))
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
