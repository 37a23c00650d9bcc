package authz

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestNewVerifierConfig(t *testing.T) {
	t.Parallel()
	k := sharedKeys()
	good := writeJWKS(t, edJWK("ed-1", k.ed.Public().(ed25519.PublicKey)))
	tests := []struct {
		name    string
		cfg     VerifierConfig
		wantErr string // empty: NewVerifier succeeds
	}{
		{name: "nothing configured", cfg: VerifierConfig{}, wantErr: "no JWT key configured"},
		{name: "only audience and issuer", cfg: VerifierConfig{Audience: "a", Issuer: "i"}, wantErr: "no JWT key configured"},
		{name: "short HMAC secret", cfg: VerifierConfig{HMACSecret: []byte("dev-secret")}, wantErr: "at least 32 bytes"},
		{name: "negative leeway", cfg: VerifierConfig{HMACSecret: k.hmac, Leeway: -time.Second}, wantErr: "leeway"},
		{name: "negative maximum age", cfg: VerifierConfig{HMACSecret: k.hmac, MaxAge: -time.Hour}, wantErr: "maximum age"},
		{name: "missing JWKS file", cfg: VerifierConfig{JWKSFile: filepath.Join(t.TempDir(), "absent.json")}, wantErr: "read JWKS file"},
		{name: "missing JWKS file beside a secret", cfg: VerifierConfig{HMACSecret: k.hmac, JWKSFile: filepath.Join(t.TempDir(), "absent.json")}, wantErr: "read JWKS file"},
		{name: "HMAC only", cfg: VerifierConfig{HMACSecret: k.hmac}},
		{name: "JWKS only", cfg: VerifierConfig{JWKSFile: good}},
		{name: "both, with claims checks", cfg: VerifierConfig{HMACSecret: k.hmac, JWKSFile: good, Audience: "a", Issuer: "i", Leeway: time.Minute}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := NewVerifier(tc.cfg)
			if tc.wantErr == "" {
				if err != nil || v == nil {
					t.Fatalf("NewVerifier: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("NewVerifier succeeded, want error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewVerifierCopiesSecret(t *testing.T) {
	t.Parallel()
	secret := append([]byte(nil), sharedKeys().hmac...)
	v := newTestVerifier(t, VerifierConfig{HMACSecret: secret})
	token := sign(t, jwt.SigningMethodHS256, secret, "", claims(nil))
	secret[0] ^= 0xff
	if _, err := v.Verify(token); err != nil {
		t.Errorf("changing the caller's slice changed the verifier: %v", err)
	}
}

func TestJWKSFile(t *testing.T) {
	t.Parallel()
	k := sharedKeys()
	rsaKey := rsaJWK("rsa-1", &k.rsa.PublicKey)
	ecKey := ecJWK(t, "ec-1", &k.ec.PublicKey)
	edKey := edJWK("ed-1", k.ed.Public().(ed25519.PublicKey))

	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p384Point, err := p384.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}

	edit := edited[map[string]any]
	offCurve := make([]byte, 32)
	offCurve[31] = 1

	tests := []struct {
		name    string
		data    string           // raw file content; used when keys is nil
		keys    []map[string]any // written as {"keys": keys}
		wantErr string           // empty: the file loads
		wantAlg []string         // algorithms the loaded set offers
	}{
		{name: "RSA, EC and OKP", keys: []map[string]any{rsaKey, ecKey, edKey}, wantAlg: []string{algRS256, algES256, algEdDSA}},
		{name: "alg and use set as expected", keys: []map[string]any{
			edit(rsaKey, map[string]any{"alg": "RS256", "use": "sig", "key_ops": []string{"verify"}}),
			edit(ecKey, map[string]any{"alg": "ES256"}),
			edit(edKey, map[string]any{"alg": "EdDSA"}),
		}, wantAlg: []string{algRS256, algES256, algEdDSA}},
		{name: "fully specified Ed25519 alg", keys: []map[string]any{edit(edKey, map[string]any{"alg": "Ed25519"})}, wantAlg: []string{algEdDSA}},
		{name: "padded base64 tolerated", keys: []map[string]any{edit(rsaKey, map[string]any{"e": "AQAB=="})}, wantAlg: []string{algRS256}},
		{name: "private members ignored", keys: []map[string]any{edit(edKey, map[string]any{"d": b64(k.ed.Seed())})}, wantAlg: []string{algEdDSA}},
		{name: "foreign keys skipped", keys: []map[string]any{
			{"kty": "oct", "k": b64(k.hmac)},
			edit(rsaKey, map[string]any{"kid": "enc", "use": "enc"}),
			edit(rsaKey, map[string]any{"kid": "ps", "alg": "PS256"}),
			edit(rsaKey, map[string]any{"kid": "wrap", "key_ops": []string{"wrapKey"}}),
			{"kty": "EC", "crv": "P-384", "kid": "p384", "x": b64(p384Point[1:49]), "y": b64(p384Point[49:])},
			{"kty": "OKP", "crv": "X25519", "x": b64(make([]byte, 32))},
			{"kty": "OKP", "crv": "Ed448", "x": b64(make([]byte, 57))},
			ecKey,
		}, wantAlg: []string{algES256}},
		{name: "same kid on keys of two algorithms", keys: []map[string]any{edit(rsaKey, map[string]any{"kid": "k"}), edit(edKey, map[string]any{"kid": "k"})}, wantAlg: []string{algRS256, algEdDSA}},

		{name: "empty file", data: "", wantErr: "not a valid JWKS"},
		{name: "not JSON", data: "keys: []", wantErr: "not a valid JWKS"},
		{name: "keys not a list", data: `{"keys": {}}`, wantErr: "not a valid JWKS"},
		{name: "a single JWK, not a set", data: `{"kty":"OKP","crv":"Ed25519","x":"` + b64(k.ed.Public().(ed25519.PublicKey)) + `"}`, wantErr: "no usable"},
		{name: "no keys", keys: []map[string]any{}, wantErr: "no usable"},
		{name: "only foreign keys", keys: []map[string]any{{"kty": "oct", "k": b64(k.hmac)}, edit(rsaKey, map[string]any{"use": "enc"})}, wantErr: "no usable"},
		{name: "duplicate kid", keys: []map[string]any{rsaKey, rsaJWK("rsa-1", &k.otherRSA.PublicKey)}, wantErr: `duplicate kid "rsa-1"`},
		{name: "RSA key too small", keys: []map[string]any{rsaJWK("weak", &weak.PublicKey)}, wantErr: "1024 bits"},
		{name: "RSA modulus missing", keys: []map[string]any{edit(rsaKey, map[string]any{"n": nil})}, wantErr: `missing "n"`},
		{name: "RSA modulus not base64", keys: []map[string]any{edit(rsaKey, map[string]any{"n": "***"})}, wantErr: `"n" is not base64url`},
		{name: "RSA exponent even", keys: []map[string]any{edit(rsaKey, map[string]any{"e": b64([]byte{1, 0, 0})})}, wantErr: "exponent"},
		{name: "RSA exponent one", keys: []map[string]any{edit(rsaKey, map[string]any{"e": b64([]byte{1})})}, wantErr: "exponent"},
		{name: "RSA exponent huge", keys: []map[string]any{edit(rsaKey, map[string]any{"e": b64([]byte{1, 0, 0, 0, 1})})}, wantErr: "exponent"},
		{name: "EC point off the curve", keys: []map[string]any{edit(ecKey, map[string]any{"x": b64(offCurve), "y": b64(offCurve)})}, wantErr: "not a point on P-256"},
		{name: "EC coordinate short", keys: []map[string]any{edit(ecKey, map[string]any{"x": b64(offCurve[1:])})}, wantErr: "32 bytes"},
		{name: "EC coordinate missing", keys: []map[string]any{edit(ecKey, map[string]any{"y": nil})}, wantErr: `missing "y"`},
		{name: "Ed25519 key short", keys: []map[string]any{edit(edKey, map[string]any{"x": b64(make([]byte, 31))})}, wantErr: "32 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var path string
			if tc.keys != nil {
				path = writeJWKS(t, tc.keys...)
			} else {
				path = writeFile(t, []byte(tc.data))
			}
			v, err := NewVerifier(VerifierConfig{JWKSFile: path})
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("NewVerifier succeeded, want error containing %q", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q, want it to contain %q", err, tc.wantErr)
				}
				if n, _ := rsaKey["n"].(string); strings.Contains(err.Error(), n[:16]) {
					t.Errorf("error %q quotes key material", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewVerifier: %v", err)
			}
			for _, alg := range []string{algRS256, algES256, algEdDSA} {
				want := false
				for _, a := range tc.wantAlg {
					want = want || a == alg
				}
				if got := v.keys[alg] != nil; got != want {
					t.Errorf("offers %s = %v, want %v", alg, got, want)
				}
			}
		})
	}
}

// TestJWKSSkippedKeysDoNotVerify checks that a key we skipped is really out
// of play: a token signed for it fails even when its kid is named.
func TestJWKSSkippedKeysDoNotVerify(t *testing.T) {
	t.Parallel()
	k := sharedKeys()
	encRSA := rsaJWK("enc", &k.otherRSA.PublicKey)
	encRSA["use"] = "enc"
	v := newTestVerifier(t, VerifierConfig{JWKSFile: writeJWKS(t, encRSA, rsaJWK("rsa-1", &k.rsa.PublicKey))})

	if _, err := v.Verify(sign(t, jwt.SigningMethodRS256, k.otherRSA, "enc", claims(nil))); !errors.Is(err, errUnknownKID) {
		t.Errorf("token for the encryption key: %v, want %v", err, errUnknownKID)
	}
	if _, err := v.Verify(sign(t, jwt.SigningMethodRS256, k.otherRSA, "", claims(nil))); !errors.Is(err, errSignature) {
		t.Errorf("token for the encryption key without kid: %v, want %v", err, errSignature)
	}
	if p, err := v.Verify(sign(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", claims(nil))); err != nil || p.ID != "alice" {
		t.Errorf("token for the signing key: %+v, %v", p, err)
	}
}
