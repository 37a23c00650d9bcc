// Package idem holds what makes a write safe to repeat: the key a request
// carried, scoped to its caller and route and bound to its body, and the
// reply a write answers, marked when it is the stored answer of an earlier
// request with the same key. The store keeps them, the services pass them
// through and the faces make the key and write the reply, all with these
// two types. It imports nothing of the module, so every package may import
// it.
package idem

import (
	"crypto/sha256"
	"encoding/hex"
)

// Key is the key a request carried, already scoped to its principal and
// route, and the hash of its body. The zero value means no key.
type Key struct {
	Scope    string
	BodyHash string
}

// KeyFor is the key of scope for a request with body: a repeat with
// another body is told apart by the hash. Without a scope (no key was sent)
// it is the zero Key.
func KeyFor(scope string, body []byte) Key {
	if scope == "" {
		return Key{}
	}
	sum := sha256.Sum256(body)
	return Key{Scope: scope, BodyHash: hex.EncodeToString(sum[:])}
}

// Reply is a write's answer: its JSON, and whether it is the answer an
// earlier request with the same key got, replayed.
type Reply struct {
	JSON     []byte
	Replayed bool
}
