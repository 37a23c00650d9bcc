// Package authz turns bearer JWTs into principals and answers ownership
// questions about them. Its Vault seals the secrets the service stores.
//
// It imports only cache, for the tokens a Verifier remembers.
package authz

import (
	"context"
	"slices"
)

// ScopeAdmin is the scope that lets a principal see and change every object.
const ScopeAdmin = "admin"

// Principal is the authenticated caller.
type Principal struct {
	ID     string   // "sub", or "<iss>#<sub>" when an issuer is configured
	Scopes []string // from the space-separated "scope" claim
}

// Admin reports whether the principal has the admin scope.
func (p Principal) Admin() bool {
	return slices.Contains(p.Scopes, ScopeAdmin)
}

// CanAccess reports whether the principal may read or change an object owned
// by owner. An empty ID never matches, so a zero Principal owns nothing even
// if some record was stored without an owner.
func (p Principal) CanAccess(owner string) bool {
	return (p.ID != "" && p.ID == owner) || p.Admin()
}

type principalKey struct{}

// WithPrincipal returns a copy of ctx that carries p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal stored by WithPrincipal, if any.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
