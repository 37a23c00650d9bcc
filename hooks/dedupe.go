package hooks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/taskhook/taskhook/stdwebhooks"
)

// MaxProviderEventIDLen is the longest provider event id ProviderEventID
// returns as sent; longer ids are hashed (see ProviderEventID).
const MaxProviderEventIDLen = 256

// ProviderEventID returns the id the sender gives a delivery, which the
// ingest route uses to answer a repeat with duplicate: true, or "" when the
// request carries none. The first present source wins:
//
//  1. the header named by dedupeHeader, when dedupeHeader is non-empty;
//  2. webhook-id (Standard Webhooks);
//  3. X-GitHub-Delivery;
//  4. when a Stripe-Signature header is present, the top-level string "id" of a
//     JSON object body (Stripe's "evt_..." event id).
//
// A configured dedupeHeader that is absent from a request falls through to the
// others, so a sender that also speaks a known scheme still gets deduped.
// Values are trimmed of surrounding spaces. An id longer than
// MaxProviderEventIDLen bytes, or holding anything but printable ASCII, is
// returned as "sha256:" and the hex SHA-256 of the value: repeats still match,
// and what reaches storage and logs stays short and plain.
func ProviderEventID(h http.Header, body []byte, dedupeHeader string) string {
	if dedupeHeader != "" {
		if id := headerValue(h, dedupeHeader); id != "" {
			return boundedID(id)
		}
	}
	if id := headerValue(h, stdwebhooks.HeaderID); id != "" {
		return boundedID(id)
	}
	if id := headerValue(h, "X-GitHub-Delivery"); id != "" {
		return boundedID(id)
	}
	if headerValue(h, headerStripeSignature) != "" {
		if id := stripeEventID(body); id != "" {
			return boundedID(id)
		}
	}
	return ""
}

func headerValue(h http.Header, name string) string {
	return strings.TrimSpace(h.Get(name))
}

// stripeEventID returns the top-level string "id" of a JSON object, matched
// exactly (encoding/json would also take "ID" into a struct field), or "".
func stripeEventID(body []byte) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return ""
	}
	raw, ok := obj["id"]
	if !ok {
		return ""
	}
	var id string
	if err := json.Unmarshal(raw, &id); err != nil {
		return ""
	}
	return strings.TrimSpace(id)
}

func boundedID(id string) string {
	if len(id) <= MaxProviderEventIDLen && printableASCII(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func printableASCII(s string) bool {
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
