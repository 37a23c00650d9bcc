package slacksig

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// Slack's "Verifying requests from Slack" walks through this request.
const (
	docSecret    = "8f742231b10e8888abcd99yyyzzz85a5"
	docTimestamp = "1531420618"
	docBody      = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	docSignature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

func signed(ts, sig string) http.Header {
	h := http.Header{}
	if ts != "" {
		h.Set(HeaderTimestamp, ts)
	}
	if sig != "" {
		h.Set(HeaderSignature, sig)
	}
	return h
}

// TestVerifySlackExample: Slack's published example verifies, and Sign
// makes its signature.
func TestVerifySlackExample(t *testing.T) {
	at := time.Unix(1531420618, 0)
	if got := Sign([]byte(docSecret), docTimestamp, []byte(docBody)); got != docSignature {
		t.Fatalf("Sign = %s, want %s", got, docSignature)
	}
	if err := Verify([]byte(docSecret), signed(docTimestamp, docSignature), []byte(docBody), at.Add(4*time.Minute), 0); err != nil {
		t.Fatalf("the documented request: %v", err)
	}
}

// TestVerifyRefusals: each way a request can fail is a SignatureError.
func TestVerifyRefusals(t *testing.T) {
	at := time.Unix(1531420618, 0)
	secret := []byte(docSecret)
	for _, c := range []struct {
		name, ts, sig, body string
		now                 time.Time
		reason              string
	}{
		{"no timestamp", "", docSignature, docBody, at, "missing X-Slack-Request-Timestamp header"},
		{"no signature", docTimestamp, "", docBody, at, "missing X-Slack-Signature header"},
		{"signed timestamp with a sign", "+1531420618", docSignature, docBody, at, "malformed X-Slack-Request-Timestamp header"},
		{"other scheme", docTimestamp, "v1=" + docSignature[3:], docBody, at, "malformed X-Slack-Signature header"},
		{"short", docTimestamp, docSignature[:20], docBody, at, "malformed X-Slack-Signature header"},
		{"stale", docTimestamp, docSignature, docBody, at.Add(5*time.Minute + time.Second), "timestamp outside tolerance"},
		{"from the future", docTimestamp, docSignature, docBody, at.Add(-6 * time.Minute), "timestamp outside tolerance"},
		{"body changed", docTimestamp, docSignature, docBody + "&x=1", at, "no matching signature"},
		{"timestamp changed", "1531420619", docSignature, docBody, at, "no matching signature"},
		{"uppercase hex is another text", docTimestamp, "v0=A2114D57B48EAC39B9AD189DD8316235A7B4A8D21A10BD27519666489C69B503", docBody, at, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(secret, signed(c.ts, c.sig), []byte(c.body), c.now, 0)
			if c.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *SignatureError
			if !errors.As(err, &se) || !errors.Is(err, ErrSignatureInvalid) || se.Reason != c.reason {
				t.Fatalf("err = %v, want the reason %q", err, c.reason)
			}
		})
	}
}
