package authz

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzVerify feeds arbitrary strings to Verify. It must never panic, every
// failure must be one of the fixed reasons, and it may only accept a token
// whose signed part (header and claims) is one this test signed itself.
//
// The fuzzer runs this function in several processes, so the keys and the
// clock are fixed where they can be: the HMAC secret, the Ed25519 seed and the
// P-256 scalar are constants, and the signed parts are the same in every
// process. Only the RSA key differs per process, which makes another
// process's RS256 seed merely invalid, never wrongly accepted.
func FuzzVerify(f *testing.F) {
	secret := []byte("fuzz-secret-fuzz-secret-fuzz-sec")
	ed := ed25519.NewKeyFromSeed([]byte("fuzz-ed25519-seed-fuzz-ed25519-s"))
	ec, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), []byte("fuzz-p256-scalar-fuzz-p256-scala"))
	if err != nil {
		f.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		f.Fatal(err)
	}
	path := writeJWKS(f,
		rsaJWK("rsa-1", &rsaKey.PublicKey),
		ecJWK(f, "ec-1", &ec.PublicKey),
		edJWK("ed-1", ed.Public().(ed25519.PublicKey)),
	)
	v := newTestVerifier(f, VerifierConfig{HMACSecret: secret, JWKSFile: path, Audience: testAudience, Issuer: testIssuer})

	good := func(sub, scope string) jwt.MapClaims {
		return claims(jwt.MapClaims{"sub": sub, "scope": scope, "aud": testAudience, "iss": testIssuer, "nbf": testNow.Add(-time.Minute).Unix()})
	}
	signed := map[string]Principal{} // signed part -> the principal it stands for
	var seeds []string
	add := func(token string, p Principal) {
		signed[token[:strings.LastIndexByte(token, '.')]] = p
		seeds = append(seeds, token)
	}
	add(sign(f, jwt.SigningMethodHS256, secret, "", good("alice", "")), Principal{ID: testIssuer + "#alice"})
	add(sign(f, jwt.SigningMethodRS256, rsaKey, "rsa-1", good("bob", "read")), Principal{ID: testIssuer + "#bob", Scopes: []string{"read"}})
	add(sign(f, jwt.SigningMethodES256, ec, "ec-1", good("carol", "admin")), Principal{ID: testIssuer + "#carol", Scopes: []string{"admin"}})
	add(sign(f, jwt.SigningMethodEdDSA, ed, "", good("dave", "read write")), Principal{ID: testIssuer + "#dave", Scopes: []string{"read", "write"}})

	for _, token := range seeds {
		// The success path must be reachable, or the check below proves nothing.
		if _, err := v.Verify(token); err != nil {
			f.Fatalf("seed token rejected: %v", err)
		}
		f.Add(token)
		parts := strings.Split(token, ".")
		f.Add(token[:len(token)/2])
		f.Add(token + ".")
		f.Add(token[:len(token)-1] + "A")
		f.Add(parts[0] + "." + parts[1] + ".")
		f.Add(b64([]byte(`{"alg":"none"}`)) + "." + parts[1] + ".")
		f.Add(b64([]byte(`{"alg":"HS256","kid":"rsa-1"}`)) + "." + parts[1] + "." + parts[2])
		f.Add(parts[1] + "." + parts[0] + "." + parts[2])
	}
	for _, s := range []string{"", ".", "..", "a.b.c", "e30.e30.", "e30.e30.e30", "eyJhbGciOiJub25lIn0.e30."} {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, token string) {
		p, err := v.Verify(token)
		if err != nil {
			var r rejection
			if !errors.Is(err, ErrInvalidToken) || !errors.As(err, &r) || !slices.Contains(allRejections, r) {
				t.Fatalf("error %q is not one of the fixed reasons", err)
			}
			if p.ID != "" || p.Scopes != nil {
				t.Fatalf("rejected token still gave principal %+v", p)
			}
			return
		}
		want, ok := signed[token[:strings.LastIndexByte(token, '.')]]
		if !ok {
			t.Fatalf("accepted a token this test never signed: %q", token)
		}
		if p.ID != want.ID || !slices.Equal(p.Scopes, want.Scopes) {
			t.Fatalf("principal %+v, want %+v", p, want)
		}
	})
}
