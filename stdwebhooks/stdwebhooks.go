// Package stdwebhooks signs and verifies webhooks the Standard Webhooks way
// (https://www.standardwebhooks.com): a "whsec_" secret whose base64 part is
// the HMAC key, and three headers, webhook-id, webhook-timestamp and
// webhook-signature, the last holding "v1,<base64 HMAC-SHA256 of
// id.timestamp.body>".
//
// It is the one home of that format: callbacks signs outbound notifications
// with it, hooks verifies inbound standard-webhooks senders with it, and the
// Go client verifies notifications with it. It imports the standard library
// only, so that each of them can use it without pulling in the others.
package stdwebhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names, in canonical form.
const (
	HeaderID        = "Webhook-Id"
	HeaderTimestamp = "Webhook-Timestamp"
	HeaderSignature = "Webhook-Signature"
)

// SecretPrefix starts every secret NewSecret makes. DecodeSecret accepts a
// secret with or without it.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far a signed timestamp may be from the receiver's
// clock, either way, when Verify is given a tolerance of zero or less.
const DefaultTolerance = 5 * time.Minute

// secretBytes is the size of the HMAC key NewSecret draws: as long as the
// SHA-256 output, more would add nothing.
const secretBytes = 32

// Limits on what Verify reads. Real headers are far smaller; the caps keep
// hostile input from costing more than a few microseconds.
const (
	maxIDLen        = 1 << 10 // webhook-id
	maxSignatureLen = 8 << 10 // webhook-signature, one or more entries
)

// Kinds of failure. Every error Verify and DecodeSecret return is an *Error
// whose Kind is one of these, so errors.Is finds it.
var (
	// ErrSecret: the secret is not "whsec_" (optional) then base64 of at
	// least one byte.
	ErrSecret = errors.New("secret not usable")
	// ErrMissingHeaders: webhook-id, webhook-timestamp or webhook-signature
	// is absent or blank.
	ErrMissingHeaders = errors.New("missing webhook headers")
	// ErrMalformedHeaders: a header is longer than any real one.
	ErrMalformedHeaders = errors.New("malformed webhook headers")
	// ErrTimestamp: webhook-timestamp is not unix seconds in plain digits, or
	// is further from now than the tolerance.
	ErrTimestamp = errors.New("webhook timestamp not acceptable")
	// ErrSignature: webhook-signature holds no well-formed v1 entry, or none
	// that matches.
	ErrSignature = errors.New("webhook signature does not match")
)

// Error is a refusal by Verify or DecodeSecret. Reason says what was wrong in
// a few words that are safe to show the sender: it never quotes the secret, a
// signature or the body.
type Error struct {
	Kind   error // one of the Err* kinds above
	Reason string
}

func (e *Error) Error() string { return "stdwebhooks: " + e.Reason }

// Unwrap lets errors.Is match the Kind.
func (e *Error) Unwrap() error { return e.Kind }

func refuse(kind error, reason string) error {
	return &Error{Kind: kind, Reason: reason}
}

// NewSecret returns a fresh secret: "whsec_" and the standard base64 of 32
// random bytes.
func NewSecret() string {
	key := make([]byte, secretBytes)
	rand.Read(key) // never fails: crypto/rand aborts the program rather than return short
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// DecodeSecret returns the HMAC key of a secret: the standard base64 after an
// optional "whsec_", padded or not.
func DecodeSecret(secret string) ([]byte, error) {
	s := strings.TrimPrefix(secret, SecretPrefix)
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(s)
	}
	switch {
	case err != nil:
		return nil, refuse(ErrSecret, "secret is not base64")
	case len(key) == 0:
		return nil, refuse(ErrSecret, "secret is empty")
	}
	return key, nil
}

// Sign returns the webhook-signature value for one message: "v1," and the
// base64 HMAC-SHA256 of "msgID.unixSeconds.body". It fails only when the
// secret is not usable.
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := DecodeSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, msgID, unixText(ts), body)), nil
}

// Headers returns the three headers that sign one message. msgID is the
// message's identity: the same on every retry, so the receiver can drop
// repeats.
func Headers(secret, msgID string, ts time.Time, body []byte) (http.Header, error) {
	sig, err := Sign(secret, msgID, ts, body)
	if err != nil {
		return nil, err
	}
	h := make(http.Header, 3)
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, unixText(ts))
	h.Set(HeaderSignature, sig)
	return h, nil
}

// Verify checks that h signs body with secret and that its timestamp is
// within tolerance of now (DefaultTolerance when tolerance is zero or less;
// whole seconds count). webhook-signature may list several space-separated
// entries, as during a secret rotation; any "v1," entry may match, and other
// versions are ignored. Every candidate is compared in constant time, and
// all of them whatever the result of the first.
//
// The timestamp is signed as the text the header carries, once it is known
// to be plain digits. Verify returns nil or an *Error.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := DecodeSecret(secret)
	if err != nil {
		return err
	}
	id, ts, sigs, err := readHeaders(h)
	if err != nil {
		return err
	}
	if err := checkTimestamp(ts, now, tolerance); err != nil {
		return err
	}
	return matchSignature(sigs, mac(key, id, ts, body))
}

// readHeaders returns the three headers, trimmed, or why they cannot be used.
func readHeaders(h http.Header) (id, ts, sigs string, err error) {
	id = strings.TrimSpace(h.Get(HeaderID))
	ts = strings.TrimSpace(h.Get(HeaderTimestamp))
	sigs = h.Get(HeaderSignature)
	switch {
	case id == "":
		err = refuse(ErrMissingHeaders, "missing webhook-id header")
	case ts == "":
		err = refuse(ErrMissingHeaders, "missing webhook-timestamp header")
	case strings.TrimSpace(sigs) == "":
		err = refuse(ErrMissingHeaders, "missing webhook-signature header")
	case len(id) > maxIDLen:
		err = refuse(ErrMalformedHeaders, "webhook-id header too long")
	case len(sigs) > maxSignatureLen:
		err = refuse(ErrMalformedHeaders, "webhook-signature header too long")
	}
	return id, ts, sigs, err
}

// checkTimestamp refuses a timestamp that is not plain decimal unix seconds
// or that is further than tolerance from now.
func checkTimestamp(ts string, now time.Time, tolerance time.Duration) error {
	unix, ok := ParseTimestamp(ts)
	if !ok {
		return refuse(ErrTimestamp, "malformed webhook-timestamp header")
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if !WithinTolerance(unix, now, int64(tolerance/time.Second)) {
		return refuse(ErrTimestamp, "timestamp outside tolerance")
	}
	return nil
}

// matchSignature looks for want among the v1 entries of sigs. Entries of
// another version, or that are not the base64 of a SHA-256 MAC, are skipped.
func matchSignature(sigs string, want []byte) error {
	candidates := 0
	matched := false
	for entry := range strings.FieldsSeq(sigs) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.Strict().DecodeString(sig)
		if err != nil || len(got) != sha256.Size {
			continue
		}
		candidates++
		// No early exit: each candidate costs the same whether or not an
		// earlier one matched.
		if hmac.Equal(got, want) {
			matched = true
		}
	}
	switch {
	case matched:
		return nil
	case candidates == 0:
		return refuse(ErrSignature, "no v1 signature in webhook-signature header")
	default:
		return refuse(ErrSignature, "no matching signature")
	}
}

// mac is the HMAC-SHA256 of "id.ts.body" under key.
func mac(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	// A hash.Hash never returns an error from Write.
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

func unixText(ts time.Time) string { return strconv.FormatInt(ts.Unix(), 10) }
