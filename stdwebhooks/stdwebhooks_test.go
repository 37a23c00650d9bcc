package stdwebhooks_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/stdwebhooks"
)

// The test vector the Standard Webhooks reference libraries publish
// (TestWebhookSign in libraries/go/webhook_test.go of
// github.com/standard-webhooks/standard-webhooks), also recomputed with
// Python's hmac module before being relied on here.
const (
	refSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	refMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	refTimestamp = 1614265330
	refBody      = `{"test": 2432232314}`
	refSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var refTime = time.Unix(refTimestamp, 0)

func TestSignReproducesTheReferenceVector(t *testing.T) {
	for _, secret := range []string{refSecret, strings.TrimPrefix(refSecret, "whsec_")} {
		got, err := stdwebhooks.Sign(secret, refMsgID, refTime, []byte(refBody))
		if err != nil {
			t.Fatalf("Sign(%q): %v", secret, err)
		}
		if got != refSignature {
			t.Errorf("Sign(%q) = %q, want %q", secret, got, refSignature)
		}
	}
}

func TestHeadersCarryTheReferenceVector(t *testing.T) {
	// Sub-second parts of the time are not signed: the header is whole seconds.
	h, err := stdwebhooks.Headers(refSecret, refMsgID, refTime.Add(900*time.Millisecond), []byte(refBody))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"webhook-id":        refMsgID,
		"webhook-timestamp": strconv.Itoa(refTimestamp),
		"webhook-signature": refSignature,
	}
	for name, value := range want {
		if got := h.Get(name); got != value {
			t.Errorf("%s = %q, want %q", name, got, value)
		}
	}
	if len(h) != 3 {
		t.Errorf("Headers set %d headers, want 3: %v", len(h), h)
	}
	if err := stdwebhooks.Verify(refSecret, h, []byte(refBody), refTime, 0); err != nil {
		t.Errorf("Verify of the reference vector: %v", err)
	}
}

func TestNewSecret(t *testing.T) {
	a, b := stdwebhooks.NewSecret(), stdwebhooks.NewSecret()
	if a == b {
		t.Fatalf("two secrets are equal: %q", a)
	}
	for _, s := range []string{a, b} {
		rest, ok := strings.CutPrefix(s, "whsec_")
		if !ok {
			t.Fatalf("secret %q lacks the whsec_ prefix", s)
		}
		raw, err := base64.StdEncoding.Strict().DecodeString(rest)
		if err != nil || len(raw) != 32 {
			t.Fatalf("secret %q: %d bytes of standard base64 (err %v), want 32", s, len(raw), err)
		}
		key, err := stdwebhooks.DecodeSecret(s)
		if err != nil || !hmac.Equal(key, raw) {
			t.Fatalf("DecodeSecret(%q) = %x, %v; want %x", s, key, err, raw)
		}
	}
}

func TestDecodeSecret(t *testing.T) {
	key := []byte("unpadded-key!") // 13 bytes: its base64 needs padding
	for _, s := range []string{
		"whsec_" + base64.StdEncoding.EncodeToString(key),
		"whsec_" + base64.RawStdEncoding.EncodeToString(key),
		base64.StdEncoding.EncodeToString(key),
		base64.RawStdEncoding.EncodeToString(key),
	} {
		got, err := stdwebhooks.DecodeSecret(s)
		if err != nil || string(got) != string(key) {
			t.Errorf("DecodeSecret(%q) = %q, %v; want %q", s, got, err, key)
		}
	}
	for _, s := range []string{"", "whsec_", "whsec_***", "whsec_" + base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff}), "whsec_a"} {
		_, err := stdwebhooks.DecodeSecret(s)
		if !errors.Is(err, stdwebhooks.ErrSecret) {
			t.Errorf("DecodeSecret(%q) = %v, want ErrSecret", s, err)
		}
		if rest := strings.TrimPrefix(s, "whsec_"); len(rest) > 3 && err != nil && strings.Contains(err.Error(), rest) {
			t.Errorf("error %q quotes the secret", err)
		}
	}
}

// request is a signed message a test can spoil.
type request struct {
	secret string
	h      http.Header
	body   []byte
	now    time.Time
	tol    time.Duration
}

const fixtureUnix = 1700000000

func validRequest(t *testing.T) request {
	t.Helper()
	body := []byte(`{"id":"1700000000000-0","type":"task.status"}`)
	now := time.Unix(fixtureUnix, 0)
	h, err := stdwebhooks.Headers(refSecret, "evt_fixture", now, body)
	if err != nil {
		t.Fatal(err)
	}
	r := request{secret: refSecret, h: h, body: body, now: now}
	if err := r.verify(); err != nil {
		t.Fatalf("fixture does not verify: %v", err)
	}
	return r
}

func (r request) verify() error {
	return stdwebhooks.Verify(r.secret, r.h, r.body, r.now, r.tol)
}

func TestVerifyRejects(t *testing.T) {
	otherSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a-different-secret"))
	cases := []struct {
		name   string
		spoil  func(r *request)
		kind   error
		reason string
	}{
		{"wrong secret", func(r *request) { r.secret = otherSecret }, stdwebhooks.ErrSignature, "no matching signature"},
		{"tampered body", func(r *request) { r.body[3] ^= 1 }, stdwebhooks.ErrSignature, "no matching signature"},
		{"body with a byte appended", func(r *request) { r.body = append(r.body, '\n') }, stdwebhooks.ErrSignature, "no matching signature"},
		{"empty body", func(r *request) { r.body = nil }, stdwebhooks.ErrSignature, "no matching signature"},
		{"another message id", func(r *request) { r.h.Set("webhook-id", "evt_other") }, stdwebhooks.ErrSignature, "no matching signature"},
		{"timestamp changed, signature not", func(r *request) { r.h.Set("webhook-timestamp", strconv.Itoa(fixtureUnix+1)) }, stdwebhooks.ErrSignature, "no matching signature"},
		{"signature of another message", func(r *request) { r.h.Set("webhook-signature", refSignature) }, stdwebhooks.ErrSignature, "no matching signature"},
		{"only v1a entries", func(r *request) {
			r.h.Set("webhook-signature", "v1a,"+strings.TrimPrefix(r.h.Get("webhook-signature"), "v1,"))
		}, stdwebhooks.ErrSignature, "no v1 signature"},
		{"version missing", func(r *request) {
			r.h.Set("webhook-signature", strings.TrimPrefix(r.h.Get("webhook-signature"), "v1,"))
		}, stdwebhooks.ErrSignature, "no v1 signature"},
		{"signature not base64", func(r *request) { r.h.Set("webhook-signature", "v1,!!!not-base64!!!") }, stdwebhooks.ErrSignature, "no v1 signature"},
		{"signature truncated", func(r *request) { r.h.Set("webhook-signature", r.h.Get("webhook-signature")[:20]) }, stdwebhooks.ErrSignature, "no v1 signature"},
		{"stale timestamp", func(r *request) { r.now = r.now.Add(301 * time.Second) }, stdwebhooks.ErrTimestamp, "timestamp outside tolerance"},
		{"future timestamp", func(r *request) { r.now = r.now.Add(-301 * time.Second) }, stdwebhooks.ErrTimestamp, "timestamp outside tolerance"},
		{"stale under a custom tolerance", func(r *request) { r.tol = 10 * time.Second; r.now = r.now.Add(11 * time.Second) }, stdwebhooks.ErrTimestamp, "timestamp outside tolerance"},
		{"timestamp in milliseconds", func(r *request) { r.h.Set("webhook-timestamp", strconv.Itoa(fixtureUnix)+"000") }, stdwebhooks.ErrTimestamp, "timestamp outside tolerance"},
		{"timestamp with a plus sign", func(r *request) { r.h.Set("webhook-timestamp", "+"+strconv.Itoa(fixtureUnix)) }, stdwebhooks.ErrTimestamp, "malformed"},
		{"negative timestamp", func(r *request) { r.h.Set("webhook-timestamp", "-1") }, stdwebhooks.ErrTimestamp, "malformed"},
		{"timestamp too long", func(r *request) { r.h.Set("webhook-timestamp", strings.Repeat("9", 40)) }, stdwebhooks.ErrTimestamp, "malformed"},
		{"timestamp with an exponent", func(r *request) { r.h.Set("webhook-timestamp", "1.7e9") }, stdwebhooks.ErrTimestamp, "malformed"},
		{"missing webhook-id", func(r *request) { r.h.Del("webhook-id") }, stdwebhooks.ErrMissingHeaders, "missing webhook-id header"},
		{"missing webhook-timestamp", func(r *request) { r.h.Del("webhook-timestamp") }, stdwebhooks.ErrMissingHeaders, "missing webhook-timestamp header"},
		{"missing webhook-signature", func(r *request) { r.h.Del("webhook-signature") }, stdwebhooks.ErrMissingHeaders, "missing webhook-signature header"},
		{"blank webhook-signature", func(r *request) { r.h.Set("webhook-signature", "   ") }, stdwebhooks.ErrMissingHeaders, "missing webhook-signature header"},
		{"no headers at all", func(r *request) { r.h = nil }, stdwebhooks.ErrMissingHeaders, "missing"},
		{"webhook-id too long", func(r *request) { r.h.Set("webhook-id", strings.Repeat("a", 2000)) }, stdwebhooks.ErrMalformedHeaders, "webhook-id header too long"},
		{"webhook-signature too long", func(r *request) {
			r.h.Set("webhook-signature", strings.Repeat("v1,AAAA ", 2000)+r.h.Get("webhook-signature"))
		}, stdwebhooks.ErrMalformedHeaders, "webhook-signature header too long"},
		{"unusable secret", func(r *request) { r.secret = "whsec_***" }, stdwebhooks.ErrSecret, "secret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := validRequest(t)
			r.h = r.h.Clone()
			tc.spoil(&r)
			err := r.verify()
			if err == nil {
				t.Fatal("verified")
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("error %v is not %v", err, tc.kind)
			}
			var e *stdwebhooks.Error
			if !errors.As(err, &e) || !strings.Contains(e.Reason, tc.reason) {
				t.Errorf("error %v: want an *Error whose reason contains %q", err, tc.reason)
			}
			assertNoLeak(t, err.Error(), r)
		})
	}
}

func TestVerifyAcceptsAnyV1Entry(t *testing.T) {
	r := validRequest(t)
	valid := r.h.Get("webhook-signature")
	other, err := stdwebhooks.Sign(stdwebhooks.NewSecret(), "evt_fixture", r.now, r.body)
	if err != nil {
		t.Fatal(err)
	}
	for _, sigs := range []string{
		other + " " + valid,
		valid + " " + other,
		"v1,bm9wZQ== v2," + strings.TrimPrefix(other, "v1,") + " " + valid + " v1a,xyz",
		"  " + valid + "  ",
	} {
		r.h.Set("webhook-signature", sigs)
		if err := r.verify(); err != nil {
			t.Errorf("signatures %q: %v", sigs, err)
		}
	}
}

func TestVerifyTolerance(t *testing.T) {
	cases := []struct {
		tol  time.Duration
		skew time.Duration
		ok   bool
	}{
		{0, 300 * time.Second, true},
		{0, -300 * time.Second, true},
		{0, 301 * time.Second, false},
		{-time.Second, 300 * time.Second, true}, // negative means the default too
		{10 * time.Second, 10 * time.Second, true},
		{10 * time.Second, -10 * time.Second, true},
		{10 * time.Second, 11 * time.Second, false},
		{time.Hour, 59 * time.Minute, true},
	}
	for _, tc := range cases {
		r := validRequest(t)
		r.tol = tc.tol
		r.now = r.now.Add(tc.skew)
		err := r.verify()
		if (err == nil) != tc.ok {
			t.Errorf("tolerance %v, clock skew %v: err %v, want ok=%v", tc.tol, tc.skew, err, tc.ok)
		}
	}
}

// assertNoLeak checks that an error text quotes neither the secret nor
// signature material from the request.
func assertNoLeak(t *testing.T, msg string, r request) {
	t.Helper()
	for _, s := range []string{r.secret, strings.TrimPrefix(r.secret, "whsec_")} {
		if len(s) > 3 && strings.Contains(msg, s) {
			t.Errorf("error %q contains the secret", msg)
		}
	}
	for _, part := range signatureParts.FindAllString(r.h.Get("webhook-signature"), -1) {
		if strings.Contains(msg, part) {
			t.Errorf("error %q contains signature material %q", msg, part)
		}
	}
}

// signatureParts finds runs long enough to be signature material, so that
// words such as "v1" do not count as leaks.
var signatureParts = regexp.MustCompile(`[A-Za-z0-9+/=_-]{16,}`)

// trueSignature computes, independently of the package, the base64 MAC of
// exactly the bytes that are supposed to be signed.
func trueSignature(t *testing.T, secret, id, ts string, body []byte) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// FuzzVerify feeds arbitrary header values and bodies to Verify. It must not
// panic; each refusal is an *Error of a known kind that does not quote the
// secret; and a request verifies only when it carries the true MAC of what
// was sent, with a timestamp within tolerance. Valid requests are among the
// seeds, so the fuzzer explores near the accepting path.
func FuzzVerify(f *testing.F) {
	body := []byte(refBody)
	ts := strconv.Itoa(fixtureUnix)
	valid, err := stdwebhooks.Sign(refSecret, refMsgID, time.Unix(fixtureUnix, 0), body)
	if err != nil {
		f.Fatal(err)
	}
	other, err := stdwebhooks.Sign(stdwebhooks.NewSecret(), refMsgID, time.Unix(fixtureUnix, 0), body)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(refMsgID, ts, valid, body)
	f.Add(refMsgID, ts, "v1,bm9wZQ== "+valid+" v1a,xyz", body)
	f.Add(refMsgID, ts, valid, []byte(refBody+" "))
	f.Add(refMsgID, ts, other, body)
	f.Add(refMsgID, " "+ts+" ", " "+valid, body)
	f.Add(refMsgID, "0"+ts, valid, body)
	f.Add(refMsgID, ts, "v1,", body)
	f.Add(refMsgID, ts, ",,, v1 v1,,", body)
	f.Add("", ts, valid, body)
	f.Add(refMsgID, "", valid, body)
	f.Add(refMsgID, "-1", valid, body)
	f.Add(refMsgID, "99999999999999999999999", valid, body)
	f.Add(refMsgID, ts, strings.Repeat("v1,AAAA ", 100), body)
	f.Add("msg\x00id", "0x65", "v1,\xff\xfe", []byte{0xff})

	now := time.Unix(fixtureUnix, 0)
	kinds := []error{stdwebhooks.ErrMissingHeaders, stdwebhooks.ErrMalformedHeaders, stdwebhooks.ErrTimestamp, stdwebhooks.ErrSignature}
	f.Fuzz(func(t *testing.T, id, ts, sigs string, body []byte) {
		h := http.Header{}
		h["Webhook-Id"] = []string{id}
		h["Webhook-Timestamp"] = []string{ts}
		h["Webhook-Signature"] = []string{sigs}
		err := stdwebhooks.Verify(refSecret, h, body, now, 0)
		if err != nil {
			var e *stdwebhooks.Error
			if !errors.As(err, &e) || !isOneOf(err, kinds) {
				t.Fatalf("error %v is not an *Error of a known kind", err)
			}
			if strings.Contains(err.Error(), strings.TrimPrefix(refSecret, "whsec_")) {
				t.Fatalf("error %q contains the secret", err)
			}
			return
		}
		// It verified: the header must hold the MAC of exactly what was sent.
		want := trueSignature(t, refSecret, strings.TrimSpace(id), strings.TrimSpace(ts), body)
		// encoding/base64 skips CR and LF, which a real header cannot carry.
		if !strings.Contains(strings.NewReplacer("\r", "", "\n", "").Replace(sigs), want) {
			t.Fatalf("verified without the true signature: id=%q ts=%q sigs=%q", id, ts, sigs)
		}
		n, perr := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
		if perr != nil || n < fixtureUnix-300 || n > fixtureUnix+300 {
			t.Fatalf("verified with timestamp %q outside tolerance", ts)
		}
	})
}

func isOneOf(err error, kinds []error) bool {
	for _, k := range kinds {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}
