// Package slacksig signs and verifies requests as Slack does (the v0
// HMAC-SHA256 scheme of "Verifying requests from Slack"). The Slack channel
// and Slack-style hooks both use it; it imports stdwebhooks (timestamps) only.
package slacksig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/taskhook/taskhook/stdwebhooks"
)

// Headers of a signed request from Slack.
const (
	HeaderTimestamp = "X-Slack-Request-Timestamp"
	HeaderSignature = "X-Slack-Signature"
)

// DefaultTolerance is how far a request's timestamp may be from the clock,
// either way: Slack's advice, against replays of a captured request.
const DefaultTolerance = 5 * time.Minute

// Caps on what Verify reads: real headers are far smaller.
const (
	maxSignatureLen = 8 << 10
)

// ErrSignatureInvalid is what every SignatureError is (errors.Is).
var ErrSignatureInvalid = errors.New("signature invalid")

// SignatureError refuses a request whose Slack signature does not hold.
// Reason names what was wrong, never a secret or a signature.
type SignatureError struct{ Reason string }

func (e *SignatureError) Error() string        { return "signature invalid: " + e.Reason }
func (e *SignatureError) Is(target error) bool { return target == ErrSignatureInvalid }

func refuse(reason string) error { return &SignatureError{Reason: reason} }

// Verify checks a request from Slack as Slack documents it ("Verifying
// requests from Slack"): X-Slack-Signature is "v0=" and the hex
// HMAC-SHA256, keyed with the signing secret, of "v0:" + the
// X-Slack-Request-Timestamp header as sent + ":" + the raw body, and the
// timestamp is within tolerance of now (0: DefaultTolerance). It reads the
// headers and the raw body only: nothing is parsed before it says yes. The
// comparison takes the same time wherever the signatures differ.
func Verify(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	ts := strings.TrimSpace(h.Get(HeaderTimestamp))
	value := strings.TrimSpace(h.Get(HeaderSignature))
	switch {
	case ts == "":
		return refuse("missing " + HeaderTimestamp + " header")
	case value == "":
		return refuse("missing " + HeaderSignature + " header")
	case len(value) > maxSignatureLen:
		return refuse(HeaderSignature + " header too long")
	}
	unix, ok := stdwebhooks.ParseTimestamp(ts)
	if !ok {
		return refuse("malformed " + HeaderTimestamp + " header")
	}
	hexSig, ok := strings.CutPrefix(value, "v0=")
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(got) != sha256.Size {
		return refuse("malformed " + HeaderSignature + " header")
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	// Whole seconds, as the header counts them; no operand can overflow.
	if !stdwebhooks.WithinTolerance(unix, now, int64(tolerance/time.Second)) {
		return refuse("timestamp outside tolerance")
	}
	if !hmac.Equal(got, mac(secret, ts, body)) {
		return refuse("no matching signature")
	}
	return nil
}

// Sign is the X-Slack-Signature of a body sent at timestamp (unix seconds,
// as the X-Slack-Request-Timestamp header carries it): what Slack sends, and
// what tests of a receiver send.
func Sign(secret []byte, timestamp string, body []byte) string {
	return "v0=" + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret []byte, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("v0:"))
	m.Write([]byte(timestamp))
	m.Write([]byte(":"))
	m.Write(body)
	return m.Sum(nil)
}
