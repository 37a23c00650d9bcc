package endpoints

import (
	"strings"

	"github.com/taskhook/taskhook/authz"
)

// An endpoint's signing secret is kept sealed in the vault, bound to the
// endpoint's id: the store never holds it in clear, a session reset carries
// it over as it is (the endpoint keeps its id), and a sealed secret copied
// to another endpoint does not open.

// SealSecret is an endpoint's secret as the store keeps it.
func SealSecret(v *authz.Vault, endpointID, secret string) string {
	return v.Seal([]byte(secret), "endpoint", endpointID)
}

// OpenSecret is the secret of a stored one, and whether it should be
// sealed again (authz.Vault.OpenKept decides). A secret stored before
// secrets were sealed is the "whsec_..." secret itself (a sealed value never
// starts so: it starts with a key id and a dot, and whsec_ secrets hold no
// dot).
func OpenSecret(v *authz.Vault, endpointID, stored string) (secret string, reseal bool, err error) {
	sealed, clear := stored, ""
	if strings.HasPrefix(stored, "whsec_") && !strings.Contains(stored, ".") {
		sealed, clear = "", stored
	}
	plain, reseal, err := v.OpenKept(sealed, clear, "endpoint", endpointID)
	return string(plain), reseal, err
}
