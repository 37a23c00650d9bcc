package authz

import (
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

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
