package hooks

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/taskhook/taskhook/store"
)

// TokenPrefix starts every callback token.
const TokenPrefix = "whk_"

// tokenRandomBytes is the token's randomness: 256 bits.
const tokenRandomBytes = 32

// tokenLen is the length of every token: prefix, two partition characters,
// then base64url of the random bytes without padding.
var tokenLen = len(TokenPrefix) + 2 + base64.RawURLEncoding.EncodedLen(tokenRandomBytes)

// noRandom stands in for the random part of an id, to read its partition back.
const noRandom = "00000000000000000000000000"

// NewToken returns a fresh callback token for a hook of partition p:
// "whk_", the two characters store.NewID uses to name the partition (so any
// replica finds the hook's slot), and base64url of 32 random bytes.
func NewToken(p int) string {
	buf := make([]byte, tokenRandomBytes)
	_, _ = rand.Read(buf) // crypto/rand.Read never fails on supported platforms
	part := store.NewID("", p)[:2]
	return TokenPrefix + part + base64.RawURLEncoding.EncodeToString(buf)
}

// HashToken is what Redis keeps of a token: the hex SHA-256.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// parseToken returns the partition of a well-formed token, or false. It reads
// only the token's shape: whether it belongs to a hook is for the store.
func parseToken(token string, partitions int) (int, bool) {
	if len(token) != tokenLen || !strings.HasPrefix(token, TokenPrefix) {
		return 0, false
	}
	rest := token[len(TokenPrefix):]
	p, err := store.PartitionOf(rest[:2]+noRandom, "", partitions)
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
