// Package tokens makes and reads capability tokens: hook callback tokens
// and input answer tokens, each a credential on its own. A token is a
// prefix, the two characters ids.New uses to name the partition (so any
// replica finds the record's slot), and base64url of 32 bytes (256 bits):
// random for hook tokens (New), an HMAC for answer tokens (package tasks).
// Redis keeps only a token's hash. It imports ids only.
package tokens

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/taskhook/taskhook/ids"
)

const randomBytes = 32

// noRandom stands in for the random part of an id, to read its partition back.
const noRandom = "00000000000000000000000000"

// New returns a fresh capability token for a record of partition p.
func New(prefix string, p int) string {
	buf := make([]byte, randomBytes)
	_, _ = rand.Read(buf) // crypto/rand.Read never fails on supported platforms
	return prefix + ids.New("", p)[:2] + base64.RawURLEncoding.EncodeToString(buf)
}

// length is the length of every token made by New with prefix.
func length(prefix string) int {
	return len(prefix) + 2 + base64.RawURLEncoding.EncodedLen(randomBytes)
}

// Hash is what Redis keeps of a token: the hex SHA-256.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// SameHash compares two token hashes in constant time.
func SameHash(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// Parse returns the partition of a well-formed token, or false. It reads
// only the token's shape: whether it names a record is for the store.
func Parse(token, prefix string, partitions int) (int, bool) {
	if len(token) != length(prefix) || !strings.HasPrefix(token, prefix) {
		return 0, false
	}
	rest := token[len(prefix):]
	p, err := ids.PartitionOf(rest[:2]+noRandom, "", partitions)
	if err != nil {
		return 0, false
	}
	for i := 2; i < len(rest); i++ {
		c := rest[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return 0, false
		}
	}
	return p, true
}
