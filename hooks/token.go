package hooks

import "github.com/taskhook/taskhook/tokens"

// TokenPrefix starts every ingest token.
const TokenPrefix = "whk_"

// NewToken returns a fresh ingest token for a hook of partition p:
// "whk_", the two characters ids.New uses to name the partition (so any
// replica finds the hook's slot), and base64url of 32 random bytes.
func NewToken(p int) string { return tokens.New(TokenPrefix, p) }

// HashToken is what Redis keeps of a token: the hex SHA-256.
func HashToken(token string) string { return tokens.Hash(token) }

// parseToken returns the partition of a well-formed token, or false. It reads
// only the token's shape: whether it belongs to a hook is for the store.
func parseToken(token string, partitions int) (int, bool) {
	return tokens.Parse(token, TokenPrefix, partitions)
}
