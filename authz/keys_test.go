package authz

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// testNow is the clock of every test verifier, so claims are exact.
var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// testKeys are real keys made once per test binary: RSA generation is slow
// under -race, and the tests only read them.
type testKeys struct {
	hmac, otherHMAC []byte
	rsa, otherRSA   *rsa.PrivateKey
	ec, otherEC     *ecdsa.PrivateKey
	ed, otherEd     ed25519.PrivateKey
}

var sharedKeys = sync.OnceValue(func() *testKeys {
	k := &testKeys{
		hmac:      randomBytes(32),
		otherHMAC: randomBytes(32),
	}
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.otherRSA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	if k.otherEC, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		panic(err)
	}
	if _, k.otherEd, err = ed25519.GenerateKey(rand.Reader); err != nil {
		panic(err)
	}
	return k
})

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func rsaJWK(kid string, pub *rsa.PublicKey) map[string]any {
	return withKID(kid, map[string]any{
		"kty": "RSA",
		"n":   b64(pub.N.Bytes()),
		"e":   b64(big.NewInt(int64(pub.E)).Bytes()),
	})
}

func ecJWK(t testing.TB, kid string, pub *ecdsa.PublicKey) map[string]any {
	t.Helper()
	point, err := pub.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return withKID(kid, map[string]any{
		"kty": "EC",
		"crv": "P-256",
		"x":   b64(point[1:33]),
		"y":   b64(point[33:]),
	})
}

func edJWK(kid string, pub ed25519.PublicKey) map[string]any {
	return withKID(kid, map[string]any{
		"kty": "OKP",
		"crv": "Ed25519",
		"x":   b64(pub),
	})
}

func withKID(kid string, k map[string]any) map[string]any {
	if kid != "" {
		k["kid"] = kid
	}
	return k
}

// writeJWKS writes a key set to a fresh file and returns its path.
func writeJWKS(t testing.TB, keys ...map[string]any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, data)
}

func writeFile(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newTestVerifier builds a verifier whose clock stands at testNow.
func newTestVerifier(t testing.TB, cfg VerifierConfig) *Verifier {
	t.Helper()
	v, err := NewVerifier(cfg)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	v.now = func() time.Time { return testNow }
	return v
}

// claims returns a valid claim set for alice at testNow, changed by edits; an
// edit to nil removes the claim.
func claims(edits jwt.MapClaims) jwt.MapClaims {
	return edited(jwt.MapClaims{
		"sub": "alice",
		"iat": testNow.Unix(),
		"exp": testNow.Add(time.Hour).Unix(),
	}, edits)
}

// edited is a copy of m with edits made; an edit to nil removes the field.
func edited[M ~map[string]any](m, edits M) M {
	out := maps.Clone(m)
	for f, v := range edits {
		if v == nil {
			delete(out, f)
			continue
		}
		out[f] = v
	}
	return out
}

// sign makes a token; headers are added to (or, when nil, removed from) the
// header the library writes.
func sign(t testing.TB, method jwt.SigningMethod, key any, kid string, c jwt.MapClaims, headers ...map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	for _, h := range headers {
		for k, v := range h {
			if v == nil {
				delete(tok.Header, k)
				continue
			}
			tok.Header[k] = v
		}
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", method.Alg(), err)
	}
	return s
}

// rawToken assembles a token from JSON header and claims and a raw signature,
// for shapes the library refuses to produce.
func rawToken(header, payload string, sig []byte) string {
	return b64([]byte(header)) + "." + b64([]byte(payload)) + "." + b64(sig)
}

// allRejections lists every reason Verify may give.
var allRejections = []rejection{
	errMissingToken, errTokenTooLarge, errMalformed, errAlgorithm,
	errCriticalHeader, errUnknownKID, errSignature, errExpired,
	errNotYetValid, errIssuedInFuture, errMissingExp, errMissingSub,
	errMissingAudience, errAudience, errMissingIssuer, errIssuer,
	errTokenRejected, errLifetime, errExpiresTooLate, errActFor,
}
