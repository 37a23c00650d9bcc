package hooks

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
)

func TestProviderEventID(t *testing.T) {
	stripeBody := []byte(`{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","data":{"object":{"id":"ch_123"}}}`)
	long := strings.Repeat("x", MaxProviderEventIDLen+1)

	for _, tc := range []struct {
		name         string
		headers      map[string]string
		body         []byte
		dedupeHeader string
		want         string
	}{
		{name: "nothing", want: ""},
		{name: "webhook-id", headers: map[string]string{"webhook-id": "msg_1"}, want: "msg_1"},
		{name: "X-GitHub-Delivery", headers: map[string]string{"X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, want: "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
		{name: "webhook-id before X-GitHub-Delivery", headers: map[string]string{"webhook-id": "msg_1", "X-GitHub-Delivery": "gh_1"}, want: "msg_1"},
		{name: "dedupe header wins", headers: map[string]string{"X-Request-Id": "req_9", "webhook-id": "msg_1", "X-GitHub-Delivery": "gh_1"}, dedupeHeader: "x-request-id", want: "req_9"},
		{name: "dedupe header wins over stripe", headers: map[string]string{"X-Request-Id": "req_9", "Stripe-Signature": "t=1,v1=00"}, body: stripeBody, dedupeHeader: "X-Request-Id", want: "req_9"},
		{name: "absent dedupe header falls through", headers: map[string]string{"webhook-id": "msg_1"}, dedupeHeader: "X-Request-Id", want: "msg_1"},
		{name: "blank dedupe header falls through", headers: map[string]string{"X-Request-Id": "  ", "X-GitHub-Delivery": "gh_1"}, dedupeHeader: "X-Request-Id", want: "gh_1"},
		{name: "absent dedupe header and nothing else", headers: map[string]string{"X-Other": "1"}, dedupeHeader: "X-Request-Id", want: ""},
		{name: "values are trimmed", headers: map[string]string{"webhook-id": "  msg_1\t"}, want: "msg_1"},
		{name: "stripe event id", headers: map[string]string{"Stripe-Signature": "t=1,v1=00"}, body: stripeBody, want: "evt_1NG8Du2eZvKYlo2CUI79vXWy"},
		{name: "stripe id needs the Stripe-Signature header", body: stripeBody, want: ""},
		{name: "webhook-id before stripe", headers: map[string]string{"webhook-id": "msg_1", "Stripe-Signature": "t=1,v1=00"}, body: stripeBody, want: "msg_1"},
		{name: "stripe body not JSON", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte("id=evt_1"), want: ""},
		{name: "stripe body a JSON array", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte(`[{"id":"evt_1"}]`), want: ""},
		{name: "stripe body a JSON string", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte(`"evt_1"`), want: ""},
		{name: "stripe id not a string", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte(`{"id":12345}`), want: ""},
		{name: "stripe id null", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte(`{"id":null}`), want: ""},
		{name: "stripe id empty", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte(`{"id":""}`), want: ""},
		{name: "stripe ID in another case is not the id", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte(`{"ID":"evt_1","Id":"evt_2"}`), want: ""},
		{name: "stripe nested id only", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte(`{"data":{"id":"evt_1"}}`), want: ""},
		{name: "stripe body truncated", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte(`{"id":"evt_1"`), want: ""},
		{name: "stripe body with trailing garbage", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte(`{"id":"evt_1"} x`), want: ""},
		{name: "id of exactly the cap", headers: map[string]string{"webhook-id": strings.Repeat("y", MaxProviderEventIDLen)}, want: strings.Repeat("y", MaxProviderEventIDLen)},
		{name: "id over the cap is hashed", headers: map[string]string{"webhook-id": long}, want: sha256Hex(long)},
		{name: "stripe id over the cap is hashed", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte(`{"id":"` + long + `"}`), want: sha256Hex(long)},
		{name: "non-ASCII id is hashed", headers: map[string]string{"X-GitHub-Delivery": "délivery"}, want: sha256Hex("délivery")},
		{name: "control characters are hashed", headers: map[string]string{"Stripe-Signature": "t=1"}, body: []byte(`{"id":"evt\n1"}`), want: sha256Hex("evt\n1")},
		{name: "spaces inside are kept", headers: map[string]string{"X-Request-Id": "a b"}, dedupeHeader: "X-Request-Id", want: "a b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			if got := ProviderEventID(h, tc.body, tc.dedupeHeader); got != tc.want {
				t.Errorf("ProviderEventID = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestProviderEventIDHashIsStableAndDistinct(t *testing.T) {
	a := strings.Repeat("a", 1000)
	b := strings.Repeat("a", 999) + "b"
	id := func(v string) string {
		h := http.Header{}
		h.Set("webhook-id", v)
		return ProviderEventID(h, nil, "")
	}
	if id(a) != id(a) {
		t.Fatal("the same long id hashed to two values")
	}
	if id(a) == id(b) {
		t.Fatal("two long ids hashed to one value")
	}
	if got := len(id(a)); got != len("sha256:")+64 {
		t.Fatalf("hashed id has length %d", got)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func FuzzProviderEventID(f *testing.F) {
	f.Add("msg_1", "", "", []byte(nil))
	f.Add("", "gh_1", "", []byte(nil))
	f.Add("", "", "t=1,v1=00", []byte(`{"id":"evt_1"}`))
	f.Add("", "", "t=1", []byte(`{"id":"evt_\u0000","id":"x"}`))
	f.Add("", "", "t=1", []byte(`{"id":`+strings.Repeat("[", 10000)))
	f.Add("\xff", "", "", []byte{0xff})

	f.Fuzz(func(t *testing.T, webhookID, delivery, stripeSig string, body []byte) {
		h := http.Header{}
		h["Webhook-Id"] = []string{webhookID}
		h["X-Github-Delivery"] = []string{delivery}
		h["Stripe-Signature"] = []string{stripeSig}
		id := ProviderEventID(h, body, "")
		if len(id) > MaxProviderEventIDLen {
			t.Fatalf("id of %d bytes", len(id))
		}
		if !printableASCII(id) {
			t.Fatalf("id %q is not printable ASCII", id)
		}
		if id != ProviderEventID(h, body, "") {
			t.Fatal("ProviderEventID is not deterministic")
		}
	})
}
