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

// ScopeDelegate is the scope that lets a principal name any other principal
// as the requester of the tasks it creates, and so use that principal's
// provider tokens. Admin does not imply it: seeing every object is one
// privilege, spending other people's provider accounts another.
const ScopeDelegate = "delegate"

// Principal is the authenticated caller.
type Principal struct {
	ID     string   // "sub", or "<iss>#<sub>" when an issuer is configured
	Scopes []string // from the space-separated "scope" claim
	// ActFor are the principals, besides itself, this one may name as a
	// task's requester: the "act_for" claim, each entry namespaced as ID is.
	ActFor []string
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

// CanActFor reports whether the principal may name requester as the
// requester of a task: itself, anybody with the delegate scope, or a
// principal its token lists in act_for. The admin scope does not help. An
// empty ID or requester never matches.
func (p Principal) CanActFor(requester string) bool {
	if p.ID == "" || requester == "" {
		return false
	}
	return requester == p.ID || slices.Contains(p.Scopes, ScopeDelegate) || slices.Contains(p.ActFor, requester)
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
