package callbacks

import (
	"strings"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/store"
)

// An endpoint's signing secret is kept sealed in the vault, bound to the
// endpoint's id: the store never holds it in clear, a session reset carries
// it over as it is (the endpoint keeps its id), and a sealed secret copied
// to another endpoint does not open.

// SealSecret is an endpoint's secret as the store keeps it.
func SealSecret(v *authz.Vault, endpointID, secret string) string {
	return v.Seal([]byte(secret), "endpoint", endpointID)
}

// OpenSecret is the secret of a stored one. A secret stored before secrets
// were sealed is the "whsec_..." secret itself (a sealed value never starts
// so: it starts with a key id and a dot, and whsec_ secrets hold no dot);
// reseal says it should be sealed again, as should one sealed with a key
// that no longer seals.
func OpenSecret(v *authz.Vault, endpointID, stored string) (secret string, reseal bool, err error) {
	if strings.HasPrefix(stored, "whsec_") && !strings.Contains(stored, ".") {
		return stored, true, nil
	}
	plain, err := v.Open(stored, "endpoint", endpointID)
	if err != nil {
		return "", false, err
	}
	return string(plain), !v.Current(stored), nil
}

// A create that registers endpoints keeps its answer, which shows their
// secrets, for a repeat with the same Idempotency-Key: that answer is kept
// sealed too, bound to the principal whose key it is.

// SealReplay is a create's answer as the store keeps it for a repeat.
func (r *Registrar) SealReplay(p authz.Principal, answer []byte) []byte {
	return []byte(r.vault.Seal(answer, "replay", p.ID))
}

// OpenReplay is the answer a repeat gets. An answer that holds no endpoint
// (or one kept in clear by an earlier version) is JSON as it is.
func (r *Registrar) OpenReplay(p authz.Principal, kept []byte) ([]byte, error) {
	if len(kept) == 0 || kept[0] == '{' || r == nil {
		return kept, nil
	}
	return r.vault.Open(string(kept), "replay", p.ID)
}

// Settle is store.Settle for a write whose stored answer may hold an
// endpoint's secret: a replayed answer is opened for p.
func (r *Registrar) Settle(p authz.Principal, o store.Outcome, replay []byte, what string) (idem.Reply, error) {
	reply, err := store.Settle(o, replay, what)
	if err == nil && reply.Replayed {
		reply.JSON, err = r.OpenReplay(p, reply.JSON)
	}
	return reply, err
}
