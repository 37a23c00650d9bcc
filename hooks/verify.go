package hooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/taskhook/taskhook/slacksig"
	"github.com/taskhook/taskhook/stdwebhooks"
)

// Verification schemes a hook can require of inbound requests.
const (
	SchemeStandardWebhooks = "standard-webhooks"
	SchemeGitHub           = "github"
	SchemeStripe           = "stripe"
	SchemeSlack            = "slack"
	SchemeHMACSHA256       = "hmac-sha256"
)

// Encodings of the signature in an hmac-sha256 header.
const (
	EncodingHex    = "hex"
	EncodingBase64 = "base64"
)

// DefaultToleranceSeconds is how far a signed timestamp may be from the
// server's clock, either way, when a Verify leaves Tolerance at zero.
const DefaultToleranceSeconds = 300

// Limits on what Check reads from a request. Real signature headers are far
// smaller; the caps keep hostile input from costing more than a few
// microseconds and keep hook configuration within sane sizes.
const (
	maxSignatureHeaderLen = 8 << 10 // one header holding one or more signatures
	maxSecretLen          = 1 << 10
	maxHeaderNameLen      = 256
)

// Header names the fixed schemes read.
const (
	headerGitHubSignature = "X-Hub-Signature-256"
	headerStripeSignature = "Stripe-Signature"
)

// ErrSignatureInvalid is wrapped by every error Check returns. The ingest
// route maps it to 401 signature_invalid and stores nothing.
var ErrSignatureInvalid = errors.New("signature invalid")

// Verify is a hook's inbound signature check, as given in
// POST /v1/hooks {"verify": {...}}.
//
// Secret is a credential: responses and logs must not carry it. String and
// LogValue leave it out, and Redacted returns a copy without it.
type Verify struct {
	// Scheme is one of the Scheme* constants.
	Scheme string `json:"scheme"`
	// Secret is, for standard-webhooks, "whsec_<base64>" (the prefix is
	// optional) and, for the other schemes, the raw shared secret.
	Secret string `json:"secret"`
	// Header names the header holding the signature; hmac-sha256 only, and
	// required for it.
	Header string `json:"header,omitempty"`
	// Encoding is "hex" (the default) or "base64"; hmac-sha256 only. An
	// optional "sha256=" prefix in the header value is accepted either way.
	Encoding string `json:"encoding,omitempty"`
	// Tolerance is how many seconds a signed timestamp may differ from now,
	// for standard-webhooks, stripe and slack; 0 means 300.
	Tolerance int `json:"toleranceSeconds,omitempty"`
}

// VerifyError says which field of a Verify is wrong and why. Field is the JSON
// name inside "verify". The message never contains the secret.
type VerifyError struct {
	Field  string
	Reason string
}

func (e *VerifyError) Error() string {
	return "verify." + e.Field + ": " + e.Reason
}

func invalidField(field, reason string) error {
	return &VerifyError{Field: field, Reason: reason}
}

// Validate checks a Verify when a hook is created, so that a hook never exists
// that could not verify anything. It returns a *VerifyError.
func (v Verify) Validate() error {
	switch v.Scheme {
	case SchemeStandardWebhooks, SchemeGitHub, SchemeStripe, SchemeSlack, SchemeHMACSHA256:
	case "":
		return invalidField("scheme", "is required")
	default:
		return invalidField("scheme", fmt.Sprintf("%q is not one of standard-webhooks, github, stripe, slack, hmac-sha256", truncate(v.Scheme, 64)))
	}

	switch {
	case v.Secret == "":
		return invalidField("secret", "is required")
	case len(v.Secret) > maxSecretLen:
		return invalidField("secret", fmt.Sprintf("is longer than %d bytes", maxSecretLen))
	}
	if v.Scheme == SchemeStandardWebhooks {
		if _, err := stdwebhooks.DecodeSecret(v.Secret); err != nil {
			return invalidField("secret", "must be whsec_ followed by base64 (the whsec_ prefix is optional)")
		}
	}

	if v.Scheme == SchemeHMACSHA256 {
		switch {
		case v.Header == "":
			return invalidField("header", "is required for hmac-sha256")
		case len(v.Header) > maxHeaderNameLen || !validHeaderName(v.Header):
			return invalidField("header", "is not a valid HTTP header name")
		}
		switch v.Encoding {
		case "", EncodingHex, EncodingBase64:
		default:
			return invalidField("encoding", fmt.Sprintf("%q is not hex or base64", truncate(v.Encoding, 64)))
		}
	} else {
		// Fields a scheme ignores are rejected: a caller who sets them
		// believes they do something.
		if v.Header != "" {
			return invalidField("header", "is only used by hmac-sha256")
		}
		if v.Encoding != "" {
			return invalidField("encoding", "is only used by hmac-sha256")
		}
	}

	switch {
	case v.Tolerance < 0:
		return invalidField("toleranceSeconds", "must not be negative")
	case v.Tolerance > 0 && !v.hasTimestamp():
		return invalidField("toleranceSeconds", "is only used by standard-webhooks, stripe and slack")
	}
	return nil
}

// Check verifies a request's signature over its raw body. It returns nil when
// the signature is valid and otherwise an error wrapping ErrSignatureInvalid
// whose text says why in a few words, never quoting the secret or a signature.
// now is the server's clock, injected so that tests can pin it.
func (v Verify) Check(h http.Header, body []byte, now time.Time) error {
	switch v.Scheme {
	case SchemeStandardWebhooks:
		return v.checkStandardWebhooks(h, body, now)
	case SchemeGitHub:
		return v.checkGitHub(h, body)
	case SchemeStripe:
		return v.checkStripe(h, body, now)
	case SchemeSlack:
		return v.checkSlack(h, body, now)
	case SchemeHMACSHA256:
		return v.checkHMAC(h, body)
	default:
		// Validate keeps this from happening; fail closed if it does.
		return badSignature("unsupported verify scheme")
	}
}

// Redacted returns v without its secret, for responses and logs.
func (v Verify) Redacted() Verify {
	v.Secret = ""
	return v
}

// String describes v without its secret, so that %v never prints it.
func (v Verify) String() string {
	s := "Verify{scheme=" + v.Scheme
	if v.Header != "" {
		s += " header=" + v.Header
	}
	if v.Encoding != "" {
		s += " encoding=" + v.Encoding
	}
	if v.Tolerance != 0 {
		s += " toleranceSeconds=" + strconv.Itoa(v.Tolerance)
	}
	return s + "}"
}

// LogValue keeps the secret out of slog output.
func (v Verify) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("scheme", v.Scheme),
		slog.String("header", v.Header),
		slog.String("encoding", v.Encoding),
		slog.Int("toleranceSeconds", v.Tolerance),
	)
}

var (
	_ fmt.Stringer   = Verify{}
	_ slog.LogValuer = Verify{}
)

// checkStandardWebhooks follows https://www.standardwebhooks.com through
// package stdwebhooks, the one place that reads that format. Its refusals
// carry reasons written to be shown to the sender, which become the reason of
// the 401; only an unusable secret is named here, as this hook's
// configuration rather than the request.
func (v Verify) checkStandardWebhooks(h http.Header, body []byte, now time.Time) error {
	err := stdwebhooks.Verify(v.Secret, h, body, now, v.toleranceDuration())
	if err == nil {
		return nil
	}
	var refusal *stdwebhooks.Error
	switch {
	case errors.Is(err, stdwebhooks.ErrSecret):
		return badSignature("verify secret is not usable")
	case errors.As(err, &refusal):
		return badSignature(refusal.Reason)
	default:
		// stdwebhooks refuses with an *Error only; fail closed if that changes.
		return badSignature("no matching signature")
	}
}

// checkGitHub follows GitHub's "Validating webhook deliveries":
// X-Hub-Signature-256 is "sha256=" and the hex HMAC-SHA256 of the raw body.
func (v Verify) checkGitHub(h http.Header, body []byte) error {
	value := strings.TrimSpace(h.Get(headerGitHubSignature))
	if value == "" {
		return badSignature("missing X-Hub-Signature-256 header")
	}
	if len(value) > maxSignatureHeaderLen {
		return badSignature("X-Hub-Signature-256 header too long")
	}
	got, err := prefixedHexMAC(value, "sha256=", "X-Hub-Signature-256")
	if err != nil {
		return err
	}
	if !hmac.Equal(got, hmacSHA256([]byte(v.Secret), body)) {
		return badSignature("no matching signature")
	}
	return nil
}

// checkStripe follows Stripe's "Verify webhook signatures manually":
// Stripe-Signature is comma-separated key=value pairs with one t (unix
// seconds) and one or more v1 (hex HMAC-SHA256 of "t.body"); any v1 may
// match, and v0 and unknown keys are ignored.
func (v Verify) checkStripe(h http.Header, body []byte, now time.Time) error {
	value := h.Get(headerStripeSignature)
	if strings.TrimSpace(value) == "" {
		return badSignature("missing Stripe-Signature header")
	}
	if len(value) > maxSignatureHeaderLen {
		return badSignature("Stripe-Signature header too long")
	}

	var ts string
	var sigs [][]byte
	for pair := range strings.SplitSeq(value, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			continue
		}
		switch key {
		case "t":
			if ts != "" {
				// Two timestamps make it ambiguous which one was signed.
				return badSignature("malformed Stripe-Signature header")
			}
			if ts = val; ts == "" {
				return badSignature("malformed Stripe-Signature header")
			}
		case "v1":
			sig, err := hex.DecodeString(val)
			if err != nil || len(sig) != sha256.Size {
				continue
			}
			sigs = append(sigs, sig)
		}
	}
	if ts == "" {
		return badSignature("malformed Stripe-Signature header")
	}
	unix, ok := stdwebhooks.ParseTimestamp(ts)
	if !ok {
		return badSignature("malformed Stripe-Signature header")
	}
	if len(sigs) == 0 {
		return badSignature("no v1 signature in Stripe-Signature header")
	}
	if !stdwebhooks.WithinTolerance(unix, now, v.tolerance()) {
		return badSignature("timestamp outside tolerance")
	}

	mac := hmac.New(sha256.New, []byte(v.Secret))
	writeAll(mac, []byte(ts), []byte("."), body)
	want := mac.Sum(nil)
	matched := false
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			matched = true
		}
	}
	if !matched {
		return badSignature("no matching signature")
	}
	return nil
}

// checkSlack follows Slack's "Verifying requests from Slack", as package
// slack checks every request from Slack.
func (v Verify) checkSlack(h http.Header, body []byte, now time.Time) error {
	err := slacksig.Verify([]byte(v.Secret), h, body, now, v.toleranceDuration())
	var refused *slacksig.SignatureError
	if errors.As(err, &refused) {
		return badSignature(refused.Reason)
	}
	return err
}

// checkHMAC verifies the generic scheme: the configured header holds the hex
// (or base64) HMAC-SHA256 of the raw body, optionally after "sha256=".
func (v Verify) checkHMAC(h http.Header, body []byte) error {
	if v.Header == "" || len(v.Header) > maxHeaderNameLen || !validHeaderName(v.Header) {
		return badSignature("verify header is not configured")
	}
	name := http.CanonicalHeaderKey(v.Header)
	value := strings.TrimSpace(h.Get(name))
	if value == "" {
		return badSignature("missing " + name + " header")
	}
	if len(value) > maxSignatureHeaderLen {
		return badSignature(name + " header too long")
	}
	if len(value) > len("sha256=") && strings.EqualFold(value[:len("sha256=")], "sha256=") {
		value = value[len("sha256="):]
	}

	var got []byte
	var err error
	switch v.Encoding {
	case "", EncodingHex:
		got, err = hex.DecodeString(value)
	case EncodingBase64:
		got, err = decodeAnyBase64(value)
	default:
		return badSignature("verify encoding is not configured")
	}
	if err != nil || len(got) != sha256.Size {
		return badSignature("malformed " + name + " header")
	}
	if !hmac.Equal(got, hmacSHA256([]byte(v.Secret), body)) {
		return badSignature("no matching signature")
	}
	return nil
}

// decodeAnyBase64 accepts standard or URL-safe base64, padded or not: senders
// differ, and the decoded bytes are what gets compared. Strict decoding refuses
// stray padding bits, so one MAC has one spelling per alphabet.
func decodeAnyBase64(s string) ([]byte, error) {
	var err error
	for _, enc := range []*base64.Encoding{
		base64.StdEncoding.Strict(), base64.RawStdEncoding.Strict(),
		base64.URLEncoding.Strict(), base64.RawURLEncoding.Strict(),
	} {
		var b []byte
		if b, err = enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, err
}

func (v Verify) tolerance() int64 {
	if v.Tolerance <= 0 {
		return DefaultToleranceSeconds
	}
	return int64(v.Tolerance)
}

// toleranceDuration is tolerance as a time.Duration, held at the longest one
// (about 292 years) so that a huge toleranceSeconds cannot wrap around.
func (v Verify) toleranceDuration() time.Duration {
	secs := v.tolerance()
	if secs > int64(math.MaxInt64/time.Second) {
		return math.MaxInt64
	}
	return time.Duration(secs) * time.Second
}

func (v Verify) hasTimestamp() bool {
	switch v.Scheme {
	case SchemeStandardWebhooks, SchemeStripe, SchemeSlack:
		return true
	}
	return false
}

func hmacSHA256(key, msg []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(msg)
	return mac.Sum(nil)
}

func writeAll(h hash.Hash, parts ...[]byte) {
	for _, p := range parts {
		h.Write(p) // a hash.Hash never returns an error
	}
}

// badSignature refuses a post whose signature does not hold: a 401
// signature_invalid, never a 400. reason names what was wrong, never a secret.
// prefixedHexMAC reads a header value that is prefix and a hex
// HMAC-SHA256 (GitHub's "sha256=...", Slack's "v0=...").
func prefixedHexMAC(value, prefix, header string) ([]byte, error) {
	hexSig, ok := strings.CutPrefix(value, prefix)
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(got) != sha256.Size {
		return nil, badSignature("malformed " + header + " header")
	}
	return got, nil
}

func badSignature(reason string) error {
	return fmt.Errorf("%w: %s", ErrSignatureInvalid, reason)
}

// validHeaderName reports whether s is an RFC 9110 token, the grammar of a
// header field name.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
