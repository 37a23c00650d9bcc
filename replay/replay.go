// Package replay keeps a create's answer for a repeat with the same
// Idempotency-Key when that answer shows notification endpoints' secrets: it
// is kept sealed in the vault, bound to the principal whose key it is, and
// opened again when a repeat replays it. Task and session creates and an
// endpoint's add seal their answers so; Settle is the idempotency helpers'
// Settle for those writes.
//
// It imports authz (the vault), store (the outcomes of an idempotent write)
// and idem (the reply) only: the services and package endpoints import it.
package replay

import (
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/store"
)

// Seal is a create's answer as the store keeps it for a repeat.
func Seal(v *authz.Vault, p authz.Principal, answer []byte) []byte {
	return []byte(v.Seal(answer, "replay", p.ID))
}

// Open is the answer a repeat gets. An answer that holds no endpoint (or one
// kept in clear by an earlier version) is JSON as it is; so is every answer
// when v is nil (a service that registers no endpoints).
func Open(v *authz.Vault, p authz.Principal, kept []byte) ([]byte, error) {
	if len(kept) == 0 || kept[0] == '{' || v == nil {
		return kept, nil
	}
	return v.Open(string(kept), "replay", p.ID)
}

// Settle is store.Settle for a write whose stored answer may hold an
// endpoint's secret: a replayed answer is opened for p.
func Settle(v *authz.Vault, p authz.Principal, o store.Outcome, kept []byte, what string) (idem.Reply, error) {
	reply, err := store.Settle(o, kept, what)
	if err == nil && reply.Replayed {
		reply.JSON, err = Open(v, p, reply.JSON)
	}
	return reply, err
}
