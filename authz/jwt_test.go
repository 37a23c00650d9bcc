package authz

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	testAudience = "taskhook"
	testIssuer   = "https://idp.example"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	k := sharedKeys()

	jwksPath := writeJWKS(t,
		rsaJWK("rsa-1", &k.rsa.PublicKey),
		ecJWK(t, "ec-1", &k.ec.PublicKey),
		edJWK("ed-1", k.ed.Public().(ed25519.PublicKey)),
	)
	// Without kids, and with a decoy of each type first, so a token without
	// kid must be tried against more than one key.
	noKIDPath := writeJWKS(t,
		rsaJWK("", &k.otherRSA.PublicKey), rsaJWK("", &k.rsa.PublicKey),
		ecJWK(t, "", &k.otherEC.PublicKey), ecJWK(t, "", &k.ec.PublicKey),
		edJWK("", k.otherEd.Public().(ed25519.PublicKey)), edJWK("", k.ed.Public().(ed25519.PublicKey)),
	)
	verifiers := map[string]*Verifier{
		"hmac":     newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac}),
		"jwks":     newTestVerifier(t, VerifierConfig{JWKSFile: jwksPath}),
		"nokid":    newTestVerifier(t, VerifierConfig{JWKSFile: noKIDPath}),
		"both":     newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac, JWKSFile: jwksPath}),
		"strict":   newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac, JWKSFile: jwksPath, Audience: testAudience, Issuer: testIssuer}),
		"leeway1":  newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac, Leeway: time.Second}),
		"maxage1h": newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac, JWKSFile: jwksPath, MaxAge: time.Hour}),
	}

	hs := func(c jwt.MapClaims) string { return sign(t, jwt.SigningMethodHS256, k.hmac, "", c) }
	strictClaims := func(edits jwt.MapClaims) jwt.MapClaims {
		return edited(claims(jwt.MapClaims{"aud": testAudience, "iss": testIssuer}), edits)
	}

	rsaPublicDER, err := x509.MarshalPKIXPublicKey(&k.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaPublicPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaPublicDER})

	valid := hs(claims(nil))
	parts := strings.Split(valid, ".")
	noneHeader := b64([]byte(`{"alg":"none","typ":"JWT"}`))

	// A 32-byte HS256 signature leaves two unused bits in its last base64
	// character; setting one gives a second spelling of the same signature.
	lastChar := strings.IndexByte(base64URLAlphabet, valid[len(valid)-1])
	nonCanonical := valid[:len(valid)-1] + string(base64URLAlphabet[lastChar^1])
	flipped := valid[:len(valid)-2] + string(base64URLAlphabet[(strings.IndexByte(base64URLAlphabet, valid[len(valid)-2])+1)%64]) + valid[len(valid)-1:]

	tests := []struct {
		name       string
		verifier   string
		token      string
		want       rejection // empty: the token is accepted
		wantID     string
		wantScopes []string
	}{
		// Accepted tokens.
		{name: "HS256", verifier: "hmac", token: valid, wantID: "alice"},
		{name: "HS256 with scopes", verifier: "hmac", token: hs(claims(jwt.MapClaims{"scope": " read  write admin "})), wantID: "alice", wantScopes: []string{"read", "write", "admin"}},
		{name: "HS256 kid is ignored", verifier: "hmac", token: sign(t, jwt.SigningMethodHS256, k.hmac, "whatever", claims(nil)), wantID: "alice"},
		{name: "RS256 with kid", verifier: "jwks", token: sign(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", claims(nil)), wantID: "alice"},
		{name: "ES256 with kid", verifier: "jwks", token: sign(t, jwt.SigningMethodES256, k.ec, "ec-1", claims(nil)), wantID: "alice"},
		{name: "EdDSA with kid", verifier: "jwks", token: sign(t, jwt.SigningMethodEdDSA, k.ed, "ed-1", claims(nil)), wantID: "alice"},
		{name: "RS256 without kid", verifier: "jwks", token: sign(t, jwt.SigningMethodRS256, k.rsa, "", claims(nil)), wantID: "alice"},
		{name: "ES256 without kid", verifier: "jwks", token: sign(t, jwt.SigningMethodES256, k.ec, "", claims(nil)), wantID: "alice"},
		{name: "EdDSA without kid", verifier: "jwks", token: sign(t, jwt.SigningMethodEdDSA, k.ed, "", claims(nil)), wantID: "alice"},
		{name: "RS256 tries each key", verifier: "nokid", token: sign(t, jwt.SigningMethodRS256, k.rsa, "", claims(nil)), wantID: "alice"},
		{name: "ES256 tries each key", verifier: "nokid", token: sign(t, jwt.SigningMethodES256, k.ec, "", claims(nil)), wantID: "alice"},
		{name: "EdDSA tries each key", verifier: "nokid", token: sign(t, jwt.SigningMethodEdDSA, k.ed, "", claims(nil)), wantID: "alice"},
		{name: "HS256 and JWKS together", verifier: "both", token: valid, wantID: "alice"},
		{name: "issuer namespaces the ID", verifier: "strict", token: hs(strictClaims(nil)), wantID: testIssuer + "#alice"},
		{name: "issuer namespaces JWKS tokens", verifier: "strict", token: sign(t, jwt.SigningMethodEdDSA, k.ed, "ed-1", strictClaims(jwt.MapClaims{"sub": "bob", "scope": "admin"})), wantID: testIssuer + "#bob", wantScopes: []string{"admin"}},
		{name: "audience list containing ours", verifier: "strict", token: hs(strictClaims(jwt.MapClaims{"aud": []string{"other", testAudience}})), wantID: testIssuer + "#alice"},
		{name: "exp inside the leeway", verifier: "hmac", token: hs(claims(jwt.MapClaims{"exp": testNow.Add(-10 * time.Second).Unix()})), wantID: "alice"},
		{name: "nbf inside the leeway", verifier: "hmac", token: hs(claims(jwt.MapClaims{"nbf": testNow.Add(10 * time.Second).Unix()})), wantID: "alice"},
		{name: "iat inside the leeway", verifier: "hmac", token: hs(claims(jwt.MapClaims{"iat": testNow.Add(10 * time.Second).Unix()})), wantID: "alice"},
		{name: "nbf and iat may be absent", verifier: "hmac", token: hs(claims(jwt.MapClaims{"iat": nil})), wantID: "alice"},
		{name: "audience ignored when not configured", verifier: "hmac", token: hs(claims(jwt.MapClaims{"aud": "someone-else", "iss": "anyone"})), wantID: "alice"},

		// The none algorithm.
		{name: "none", verifier: "hmac", token: sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", claims(nil)), want: errAlgorithm},
		{name: "none on JWKS", verifier: "jwks", token: sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "rsa-1", claims(nil)), want: errAlgorithm},
		{name: "none with a kept signature", verifier: "hmac", token: noneHeader + "." + parts[1] + "." + parts[2], want: errAlgorithm},
		{name: "none spelled NONE", verifier: "hmac", token: rawToken(`{"alg":"NONE"}`, `{"sub":"alice","exp":1900000000}`, nil), want: errAlgorithm},

		// Other algorithms outside the allowlist.
		{name: "RS256 without JWKS", verifier: "hmac", token: sign(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", claims(nil)), want: errAlgorithm},
		{name: "HS256 without secret", verifier: "jwks", token: valid, want: errAlgorithm},
		{name: "HS384", verifier: "both", token: sign(t, jwt.SigningMethodHS384, k.hmac, "", claims(nil)), want: errAlgorithm},
		{name: "RS512", verifier: "jwks", token: sign(t, jwt.SigningMethodRS512, k.rsa, "rsa-1", claims(nil)), want: errAlgorithm},
		{name: "PS256", verifier: "jwks", token: sign(t, jwt.SigningMethodPS256, k.rsa, "rsa-1", claims(nil)), want: errAlgorithm},
		{name: "unknown algorithm", verifier: "both", token: rawToken(`{"alg":"XX99"}`, `{"sub":"alice","exp":1900000000}`, []byte("sig")), want: errAlgorithm},
		{name: "missing algorithm", verifier: "both", token: rawToken(`{"typ":"JWT"}`, `{"sub":"alice","exp":1900000000}`, []byte("sig")), want: errAlgorithm},
		{name: "algorithm not a string", verifier: "both", token: rawToken(`{"alg":["HS256"]}`, `{"sub":"alice","exp":1900000000}`, []byte("sig")), want: errAlgorithm},

		// HS/RS key confusion: an HMAC over the public key never verifies.
		{name: "HS256 keyed with RSA public PEM, JWKS only", verifier: "jwks", token: sign(t, jwt.SigningMethodHS256, rsaPublicPEM, "rsa-1", claims(nil)), want: errAlgorithm},
		{name: "HS256 keyed with RSA public PEM, both", verifier: "both", token: sign(t, jwt.SigningMethodHS256, rsaPublicPEM, "rsa-1", claims(nil)), want: errSignature},
		{name: "HS256 keyed with RSA public DER, both", verifier: "both", token: sign(t, jwt.SigningMethodHS256, rsaPublicDER, "", claims(nil)), want: errSignature},
		{name: "HS256 keyed with RSA modulus, both", verifier: "both", token: sign(t, jwt.SigningMethodHS256, k.rsa.N.Bytes(), "rsa-1", claims(nil)), want: errSignature},

		// Wrong keys.
		{name: "HS256 other secret", verifier: "hmac", token: sign(t, jwt.SigningMethodHS256, k.otherHMAC, "", claims(nil)), want: errSignature},
		{name: "RS256 other key", verifier: "jwks", token: sign(t, jwt.SigningMethodRS256, k.otherRSA, "rsa-1", claims(nil)), want: errSignature},
		{name: "ES256 other key", verifier: "jwks", token: sign(t, jwt.SigningMethodES256, k.otherEC, "ec-1", claims(nil)), want: errSignature},
		{name: "EdDSA other key", verifier: "jwks", token: sign(t, jwt.SigningMethodEdDSA, k.otherEd, "ed-1", claims(nil)), want: errSignature},
		{name: "RS256 other key without kid", verifier: "jwks", token: sign(t, jwt.SigningMethodRS256, k.otherRSA, "", claims(nil)), want: errSignature},
		{name: "signature bit flipped", verifier: "hmac", token: flipped, want: errSignature},
		{name: "claims swapped under a signature", verifier: "hmac", token: parts[0] + "." + strings.Split(hs(claims(jwt.MapClaims{"sub": "mallory"})), ".")[1] + "." + parts[2], want: errSignature},
		{name: "expired and wrong key says signature", verifier: "hmac", token: sign(t, jwt.SigningMethodHS256, k.otherHMAC, "", claims(jwt.MapClaims{"exp": testNow.Add(-time.Hour).Unix()})), want: errSignature},

		// Key ids.
		{name: "unknown kid", verifier: "jwks", token: sign(t, jwt.SigningMethodRS256, k.rsa, "rsa-2", claims(nil)), want: errUnknownKID},
		{name: "kid of a key of another type", verifier: "jwks", token: sign(t, jwt.SigningMethodRS256, k.rsa, "ec-1", claims(nil)), want: errUnknownKID},
		{name: "kid when the set has none", verifier: "nokid", token: sign(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", claims(nil)), want: errUnknownKID},
		{name: "kid not a string", verifier: "jwks", token: sign(t, jwt.SigningMethodRS256, k.rsa, "", claims(nil), map[string]any{"kid": 1}), want: errUnknownKID},
		{name: "critical header", verifier: "hmac", token: sign(t, jwt.SigningMethodHS256, k.hmac, "", claims(nil), map[string]any{"crit": []string{"b64"}, "b64": false}), want: errCriticalHeader},

		// Time claims.
		{name: "expired", verifier: "hmac", token: hs(claims(jwt.MapClaims{"exp": testNow.Add(-time.Hour).Unix()})), want: errExpired},
		{name: "expired past a short leeway", verifier: "leeway1", token: hs(claims(jwt.MapClaims{"exp": testNow.Add(-10 * time.Second).Unix()})), want: errExpired},
		{name: "nbf in the future", verifier: "hmac", token: hs(claims(jwt.MapClaims{"nbf": testNow.Add(5 * time.Minute).Unix()})), want: errNotYetValid},
		{name: "iat in the future", verifier: "hmac", token: hs(claims(jwt.MapClaims{"iat": testNow.Add(5 * time.Minute).Unix()})), want: errIssuedInFuture},
		{name: "missing exp", verifier: "hmac", token: hs(claims(jwt.MapClaims{"exp": nil})), want: errMissingExp},
		{name: "missing exp on JWKS", verifier: "jwks", token: sign(t, jwt.SigningMethodEdDSA, k.ed, "ed-1", claims(jwt.MapClaims{"exp": nil})), want: errMissingExp},
		{name: "exp not a number", verifier: "hmac", token: hs(claims(jwt.MapClaims{"exp": "tomorrow"})), want: errMalformed},

		// Lifetime: exp - iat at most the maximum age (24h by default); without
		// iat, exp at most the maximum age (and the leeway) from now.
		{name: "lifetime at the default maximum", verifier: "hmac", token: hs(claims(jwt.MapClaims{"exp": testNow.Add(24 * time.Hour).Unix()})), wantID: "alice"},
		{name: "lifetime a second above the default maximum", verifier: "hmac", token: hs(claims(jwt.MapClaims{"exp": testNow.Add(24*time.Hour + time.Second).Unix()})), want: errLifetime},
		{name: "a year-long token", verifier: "hmac", token: hs(claims(jwt.MapClaims{"exp": testNow.AddDate(1, 0, 0).Unix()})), want: errLifetime},
		{name: "exp at the end of time", verifier: "hmac", token: hs(claims(jwt.MapClaims{"exp": int64(1) << 53})), want: errLifetime},
		{name: "old iat, long lifetime, not expired yet", verifier: "hmac", token: hs(claims(jwt.MapClaims{"iat": testNow.Add(-20 * time.Hour).Unix(), "exp": testNow.Add(5 * time.Hour).Unix()})), want: errLifetime},
		{name: "old iat within the lifetime", verifier: "hmac", token: hs(claims(jwt.MapClaims{"iat": testNow.Add(-20 * time.Hour).Unix(), "exp": testNow.Add(4 * time.Hour).Unix()})), wantID: "alice"},
		{name: "no iat, exp within the maximum", verifier: "hmac", token: hs(claims(jwt.MapClaims{"iat": nil, "exp": testNow.Add(23 * time.Hour).Unix()})), wantID: "alice"},
		{name: "no iat, exp at the maximum and the leeway", verifier: "hmac", token: hs(claims(jwt.MapClaims{"iat": nil, "exp": testNow.Add(24*time.Hour + 30*time.Second).Unix()})), wantID: "alice"},
		{name: "no iat, exp past the maximum and the leeway", verifier: "hmac", token: hs(claims(jwt.MapClaims{"iat": nil, "exp": testNow.Add(24*time.Hour + 31*time.Second).Unix()})), want: errExpiresTooLate},
		{name: "no iat, exp years ahead", verifier: "hmac", token: hs(claims(jwt.MapClaims{"iat": nil, "exp": testNow.AddDate(10, 0, 0).Unix()})), want: errExpiresTooLate},
		{name: "configured maximum age", verifier: "maxage1h", token: hs(claims(jwt.MapClaims{"exp": testNow.Add(time.Hour).Unix()})), wantID: "alice"},
		{name: "above the configured maximum age", verifier: "maxage1h", token: hs(claims(jwt.MapClaims{"exp": testNow.Add(2 * time.Hour).Unix()})), want: errLifetime},
		{name: "above the configured maximum age on JWKS", verifier: "maxage1h", token: sign(t, jwt.SigningMethodEdDSA, k.ed, "ed-1", claims(jwt.MapClaims{"exp": testNow.Add(2 * time.Hour).Unix()})), want: errLifetime},
		{name: "no iat, above the configured maximum age", verifier: "maxage1h", token: hs(claims(jwt.MapClaims{"iat": nil, "exp": testNow.Add(2 * time.Hour).Unix()})), want: errExpiresTooLate},
		{name: "long-lived and wrong key says signature", verifier: "hmac", token: sign(t, jwt.SigningMethodHS256, k.otherHMAC, "", claims(jwt.MapClaims{"exp": testNow.AddDate(1, 0, 0).Unix()})), want: errSignature},

		// Audience, issuer, subject.
		{name: "wrong audience", verifier: "strict", token: hs(strictClaims(jwt.MapClaims{"aud": "other"})), want: errAudience},
		{name: "audience list without ours", verifier: "strict", token: hs(strictClaims(jwt.MapClaims{"aud": []string{"a", "b"}})), want: errAudience},
		{name: "missing audience", verifier: "strict", token: hs(strictClaims(jwt.MapClaims{"aud": nil})), want: errMissingAudience},
		{name: "wrong issuer", verifier: "strict", token: hs(strictClaims(jwt.MapClaims{"iss": "https://evil.example"})), want: errIssuer},
		{name: "issuer differs by a slash", verifier: "strict", token: hs(strictClaims(jwt.MapClaims{"iss": testIssuer + "/"})), want: errIssuer},
		{name: "missing issuer", verifier: "strict", token: hs(strictClaims(jwt.MapClaims{"iss": nil})), want: errMissingIssuer},
		{name: "missing sub", verifier: "hmac", token: hs(claims(jwt.MapClaims{"sub": nil})), want: errMissingSub},
		{name: "empty sub", verifier: "hmac", token: hs(claims(jwt.MapClaims{"sub": ""})), want: errMissingSub},
		{name: "sub not a string", verifier: "hmac", token: hs(claims(jwt.MapClaims{"sub": 42})), want: errMalformed},
		{name: "scope not a string", verifier: "hmac", token: hs(claims(jwt.MapClaims{"scope": []string{"admin"}})), want: errMalformed},

		// Malformed tokens.
		{name: "empty", verifier: "hmac", token: "", want: errMissingToken},
		{name: "one segment", verifier: "hmac", token: "abc", want: errMalformed},
		{name: "two segments", verifier: "hmac", token: parts[0] + "." + parts[1], want: errMalformed},
		{name: "four segments", verifier: "hmac", token: valid + "." + parts[2], want: errMalformed},
		{name: "bearer prefix left on", verifier: "hmac", token: "Bearer " + valid, want: errMalformed},
		{name: "only dots", verifier: "hmac", token: "..", want: errMalformed},
		{name: "header not base64", verifier: "hmac", token: "!!!." + parts[1] + "." + parts[2], want: errMalformed},
		{name: "header not JSON", verifier: "hmac", token: b64([]byte("nope")) + "." + parts[1] + "." + parts[2], want: errMalformed},
		{name: "claims not JSON", verifier: "hmac", token: parts[0] + "." + b64([]byte("[1,2")) + "." + parts[2], want: errMalformed},
		{name: "claims a JSON array", verifier: "hmac", token: parts[0] + "." + b64([]byte("[]")) + "." + parts[2], want: errMalformed},
		{name: "signature not base64", verifier: "hmac", token: parts[0] + "." + parts[1] + ".***", want: errMalformed},
		{name: "padded signature", verifier: "hmac", token: valid + "=", want: errMalformed},
		{name: "non-canonical signature encoding", verifier: "hmac", token: nonCanonical, want: errMalformed},
		{name: "standard base64 alphabet", verifier: "hmac", token: parts[0] + "." + parts[1] + ".+" + parts[2][1:], want: errMalformed},
		{name: "too large", verifier: "hmac", token: hs(claims(jwt.MapClaims{"pad": strings.Repeat("x", maxTokenLength)})), want: errTokenTooLarge},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := verifiers[tc.verifier]
			got, err := v.Verify(tc.token)
			if tc.want != "" {
				if err == nil {
					t.Fatalf("Verify accepted the token as %+v, want %q", got, tc.want)
				}
				if !errors.Is(err, ErrInvalidToken) {
					t.Errorf("error %v does not wrap ErrInvalidToken", err)
				}
				if !errors.Is(err, tc.want) {
					t.Errorf("error %q, want %q", err, tc.want)
				}
				if got.ID != "" || got.Scopes != nil {
					t.Errorf("rejected token still gave principal %+v", got)
				}
				assertSafeMessage(t, err, tc.token)
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.ID != tc.wantID {
				t.Errorf("ID = %q, want %q", got.ID, tc.wantID)
			}
			if !slices.Equal(got.Scopes, tc.wantScopes) {
				t.Errorf("Scopes = %q, want %q", got.Scopes, tc.wantScopes)
			}
		})
	}
}

const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// assertSafeMessage checks that err is one of the fixed reasons, so it cannot
// carry the token or any part of it.
func assertSafeMessage(t testing.TB, err error, token string) {
	t.Helper()
	var r rejection
	if !errors.As(err, &r) || !slices.Contains(allRejections, r) {
		t.Errorf("error %q is not one of the fixed reasons", err)
	}
	for _, part := range strings.Split(token, ".") {
		if len(part) >= 8 && strings.Contains(err.Error(), part) {
			t.Errorf("error %q contains part of the token", err)
		}
	}
}

func TestRejectionMessage(t *testing.T) {
	t.Parallel()
	for _, r := range allRejections {
		err := error(r)
		if !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%q does not wrap ErrInvalidToken", r)
		}
		if want := "invalid token: " + string(r); err.Error() != want {
			t.Errorf("Error() = %q, want %q", err.Error(), want)
		}
	}
}

func TestVerifyAdminScope(t *testing.T) {
	t.Parallel()
	k := sharedKeys()
	v := newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac})
	tests := []struct {
		name  string
		scope any
		admin bool
	}{
		{name: "admin", scope: "admin", admin: true},
		{name: "admin among others", scope: "tasks:read admin", admin: true},
		{name: "no scope", scope: nil, admin: false},
		{name: "other scopes", scope: "tasks:read tasks:write", admin: false},
		{name: "admin as a substring", scope: "administrator", admin: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			token := sign(t, jwt.SigningMethodHS256, k.hmac, "", claims(jwt.MapClaims{"scope": tc.scope}))
			p, err := v.Verify(token)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if p.Admin() != tc.admin {
				t.Errorf("Admin() = %v, want %v (scopes %q)", p.Admin(), tc.admin, p.Scopes)
			}
			if got := p.CanAccess("somebody-else"); got != tc.admin {
				t.Errorf("CanAccess(somebody-else) = %v, want %v", got, tc.admin)
			}
			if !p.CanAccess("alice") {
				t.Error("CanAccess(own id) = false")
			}
		})
	}
}

// The act_for claim: a list of subjects, namespaced like sub when an issuer
// is configured; any other shape refuses the token with its own reason, but
// only once the signature has held.
func TestVerifyActFor(t *testing.T) {
	t.Parallel()
	k := sharedKeys()
	plain := newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac})
	strict := newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac, Audience: testAudience, Issuer: testIssuer})
	tests := []struct {
		name   string
		actFor any // nil: no claim
		raw    string
		forged bool // signed with another key
		want   rejection
		plain  []string // the principal's ActFor on each verifier
		strict []string
	}{
		{name: "absent"},
		{name: "null", raw: "null"},
		{name: "empty list", actFor: []string{}},
		{name: "one", actFor: []string{"bob"}, plain: []string{"bob"}, strict: []string{testIssuer + "#bob"}},
		{name: "two", actFor: []string{"bob", "carol"}, plain: []string{"bob", "carol"},
			strict: []string{testIssuer + "#bob", testIssuer + "#carol"}},
		{name: "an entry with a hash is still a sub of this issuer", actFor: []string{"https://evil.example#bob"},
			plain: []string{"https://evil.example#bob"}, strict: []string{testIssuer + "#https://evil.example#bob"}},
		{name: "a string", actFor: "bob", want: errActFor},
		{name: "a number", actFor: 42, want: errActFor},
		{name: "an object", actFor: map[string]any{"bob": true}, want: errActFor},
		{name: "a number in the list", actFor: []any{"bob", 7}, want: errActFor},
		{name: "a list in the list", actFor: []any{[]string{"bob"}}, want: errActFor},
		{name: "an empty entry", actFor: []string{"bob", ""}, want: errActFor},
		{name: "a null entry", raw: `["bob",null]`, want: errActFor},
		{name: "bad shape under a bad signature", actFor: "bob", forged: true, want: errSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			edits := jwt.MapClaims{"aud": testAudience, "iss": testIssuer}
			switch {
			case tc.raw != "":
				edits["act_for"] = json.RawMessage(tc.raw)
			case tc.actFor != nil:
				edits["act_for"] = tc.actFor
			}
			key := k.hmac
			if tc.forged {
				key = k.otherHMAC
			}
			token := sign(t, jwt.SigningMethodHS256, key, "", claims(edits))
			for name, v := range map[string]*Verifier{"plain": plain, "strict": strict} {
				p, err := v.Verify(token)
				if tc.want != "" {
					if !errors.Is(err, tc.want) || p.ID != "" || p.ActFor != nil {
						t.Errorf("%s: %+v, %v; want %q", name, p, err, tc.want)
					}
					assertSafeMessage(t, err, token)
					continue
				}
				want := tc.plain
				if name == "strict" {
					want = tc.strict
				}
				if err != nil || !slices.Equal(p.ActFor, want) {
					t.Errorf("%s: ActFor %q, %v; want %q", name, p.ActFor, err, want)
				}
			}
		})
	}
}

// A token's act_for lets it name exactly the principals it lists, of its
// own issuer; admin names nobody else.
func TestVerifyActForGrants(t *testing.T) {
	t.Parallel()
	k := sharedKeys()
	v := newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac, Audience: testAudience, Issuer: testIssuer})
	token := sign(t, jwt.SigningMethodHS256, k.hmac, "", claims(jwt.MapClaims{"aud": testAudience, "iss": testIssuer,
		"sub": "agent", "scope": "admin", "act_for": []string{"alice"}}))
	p, err := v.Verify(token)
	if err != nil {
		t.Fatal(err)
	}
	for requester, want := range map[string]bool{
		testIssuer + "#agent": true, testIssuer + "#alice": true, "alice": false,
		testIssuer + "#bob": false, "https://evil.example#alice": false,
	} {
		if got := p.CanActFor(requester); got != want {
			t.Errorf("CanActFor(%q) = %v, want %v", requester, got, want)
		}
	}
}

// A verifier without an injected clock checks tokens against the real one;
// and the development token app.Run prints lives the default maximum age,
// and is taken.
func TestVerifyUsesRealClock(t *testing.T) {
	t.Parallel()
	k := sharedKeys()
	v, err := NewVerifier(VerifierConfig{HMACSecret: k.hmac})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tc := range []struct {
		name    string
		subject string
		ttl     time.Duration
		issued  time.Time
		want    error
	}{
		{"fresh token", "alice", time.Hour, now, nil},
		{"stale token", "alice", time.Hour, now.Add(-2 * time.Hour), errExpired},
		{"dev token", "dev", DefaultMaxAge, now, nil},
		{"a dev token above the maximum age", "dev", DefaultMaxAge + time.Minute, now, errLifetime},
	} {
		token, err := IssueDevToken(k.hmac, tc.subject, nil, tc.ttl, tc.issued)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(token); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// A token Verify has taken is answered from memory, but never past its exp
// plus the leeway, nor for a clock set back before it was verified.
func TestVerifyRemembersUntilExpiry(t *testing.T) {
	t.Parallel()
	k := sharedKeys()
	v := newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac})
	clock := testNow
	v.now = func() time.Time { return clock }

	token := sign(t, jwt.SigningMethodHS256, k.hmac, "", claims(jwt.MapClaims{"nbf": testNow.Unix(), "scope": "tasks:write"}))
	exp := testNow.Add(time.Hour)
	for _, tc := range []struct {
		name string
		at   time.Time
		want error
	}{
		{"first sight", testNow, nil},
		{"remembered", testNow.Add(time.Minute), nil},
		{"just before exp plus leeway", exp.Add(defaultLeeway - time.Second), nil},
		{"at exp plus leeway", exp.Add(defaultLeeway), errExpired},
		{"verified again after expiry", testNow, nil},
		{"clock set back before nbf", testNow.Add(-defaultLeeway - time.Second), errNotYetValid},
	} {
		clock = tc.at
		p, err := v.Verify(token)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if err == nil && (p.ID != "alice" || len(p.Scopes) != 1 || p.Scopes[0] != "tasks:write") {
			t.Fatalf("%s: principal %+v", tc.name, p)
		}
	}
}

// What Verify refused is refused again, and each token keeps its own
// principal.
func TestVerifyRemembersOnlyWhatItTook(t *testing.T) {
	t.Parallel()
	k := sharedKeys()
	v := newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac})
	alice := sign(t, jwt.SigningMethodHS256, k.hmac, "", claims(nil))
	bob := sign(t, jwt.SigningMethodHS256, k.hmac, "", claims(jwt.MapClaims{"sub": "bob"}))
	forged := sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef0123"), "", claims(nil))
	for range 2 {
		if p, err := v.Verify(alice); err != nil || p.ID != "alice" {
			t.Fatalf("alice: %+v, %v", p, err)
		}
		if p, err := v.Verify(bob); err != nil || p.ID != "bob" {
			t.Fatalf("bob: %+v, %v", p, err)
		}
		if _, err := v.Verify(forged); !errors.Is(err, errSignature) {
			t.Fatalf("forged: %v, want %v", err, errSignature)
		}
	}
}

func TestIssueDevToken(t *testing.T) {
	t.Parallel()
	k := sharedKeys()
	v := newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac})

	token, err := IssueDevToken(k.hmac, "dev", []string{"admin", "tasks:write"}, time.Hour, testNow)
	if err != nil {
		t.Fatalf("IssueDevToken: %v", err)
	}
	p, err := v.Verify(token)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if p.ID != "dev" || !slices.Equal(p.Scopes, []string{"admin", "tasks:write"}) {
		t.Errorf("principal = %+v", p)
	}

	var c jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &c); err != nil {
		t.Fatal(err)
	}
	if c["iat"] != float64(testNow.Unix()) || c["exp"] != float64(testNow.Add(time.Hour).Unix()) {
		t.Errorf("iat/exp = %v/%v", c["iat"], c["exp"])
	}

	later := newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac})
	later.now = func() time.Time { return testNow.Add(time.Hour + defaultLeeway + time.Second) }
	if _, err := later.Verify(token); !errors.Is(err, errExpired) {
		t.Errorf("after ttl: %v, want %v", err, errExpired)
	}

	noScopes, err := IssueDevToken(k.hmac, "dev", nil, time.Minute, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := v.Verify(noScopes); err != nil || p.Scopes != nil {
		t.Errorf("no scopes: %+v, %v", p, err)
	}
}

func TestIssueDevTokenActingFor(t *testing.T) {
	t.Parallel()
	k := sharedKeys()
	v := newTestVerifier(t, VerifierConfig{HMACSecret: k.hmac})
	token, err := IssueDevTokenActingFor(k.hmac, "agent", []string{"read"}, []string{"alice", "bob"}, time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(token)
	if err != nil || p.ID != "agent" || !slices.Equal(p.Scopes, []string{"read"}) || !slices.Equal(p.ActFor, []string{"alice", "bob"}) {
		t.Fatalf("principal %+v, %v", p, err)
	}
	var c jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &c); err != nil {
		t.Fatal(err)
	}
	if list, ok := c["act_for"].([]any); !ok || len(list) != 2 {
		t.Errorf("act_for claim = %#v, want a list of two", c["act_for"])
	}
	plain, err := IssueDevToken(k.hmac, "agent", nil, time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}
	var pc jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(plain, &pc); err != nil {
		t.Fatal(err)
	}
	if _, ok := pc["act_for"]; ok {
		t.Error("a token without act_for carries the claim")
	}
	if _, err := IssueDevTokenActingFor(k.hmac, "agent", nil, []string{"alice", ""}, time.Hour, testNow); err == nil {
		t.Error("an empty act_for entry was signed")
	}
}

func TestIssueDevTokenRefuses(t *testing.T) {
	t.Parallel()
	secret := sharedKeys().hmac
	tests := []struct {
		name    string
		secret  []byte
		subject string
		scopes  []string
		ttl     time.Duration
	}{
		{name: "no secret", secret: nil, subject: "dev", ttl: time.Hour},
		{name: "short secret", secret: []byte("dev-secret"), subject: "dev", ttl: time.Hour},
		{name: "no subject", secret: secret, subject: "", ttl: time.Hour},
		{name: "zero ttl", secret: secret, subject: "dev", ttl: 0},
		{name: "negative ttl", secret: secret, subject: "dev", ttl: -time.Second},
		{name: "scope with a space", secret: secret, subject: "dev", scopes: []string{"admin read"}, ttl: time.Hour},
		{name: "empty scope", secret: secret, subject: "dev", scopes: []string{""}, ttl: time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			token, err := IssueDevToken(tc.secret, tc.subject, tc.scopes, tc.ttl, testNow)
			if err == nil {
				t.Errorf("IssueDevToken = %q, want an error", token)
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	k := sharedKeys()
	path := writeJWKS(b,
		rsaJWK("rsa-1", &k.rsa.PublicKey),
		ecJWK(b, "ec-1", &k.ec.PublicKey),
		edJWK("ed-1", k.ed.Public().(ed25519.PublicKey)),
	)
	v := newTestVerifier(b, VerifierConfig{HMACSecret: k.hmac, JWKSFile: path})
	tokens := []struct {
		alg   string
		token string
	}{
		{"HS256", sign(b, jwt.SigningMethodHS256, k.hmac, "", claims(nil))},
		{"RS256", sign(b, jwt.SigningMethodRS256, k.rsa, "rsa-1", claims(nil))},
		{"ES256", sign(b, jwt.SigningMethodES256, k.ec, "ec-1", claims(nil))},
		{"EdDSA", sign(b, jwt.SigningMethodEdDSA, k.ed, "ed-1", claims(nil))},
	}
	for _, tc := range tokens {
		// full: a token seen for the first time; remembered: the same token
		// again, as a client sends it on every request.
		b.Run(tc.alg+"/full", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.verify(tc.token); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.alg+"/remembered", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(tc.token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

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
