package handlers_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store/storetest"
)

// FuzzCallback sends arbitrary bodies, headers and tokens through the
// callback route of a real server (embedded store): nothing panics, every
// answer is one the contract allows, and no answer echoes the token, the
// verify secret or the body.
func FuzzCallback(f *testing.F) {
	e := startEnv(f, storetest.Embedded(f), app.Config{MaxBodyBytes: 4096, HookRateLimit: 1000, HookBurst: 1 << 30})
	ses := e.session(f)
	const secret = "fuzz-verify-secret"
	_, plain := e.hook(f, client.CreateHookInput{SessionID: ses, DedupeHeader: "X-Job-Event"})
	_, signed := e.hook(f, client.CreateHookInput{SessionID: ses, Verify: &client.HookVerify{Scheme: client.VerifyGitHub, Secret: secret}})
	_, static := e.hook(f, client.CreateHookInput{SessionID: ses,
		Response: &client.HookResponse{Status: 200, Body: "thanks", ContentType: "text/plain"}})
	closedID, closed := e.hook(f, client.CreateHookInput{SessionID: ses})
	e.must(f, 200, e.do(f, "POST", "/v1/hooks/"+closedID+"/close", e.alice, nil))
	tokens := []string{plain, signed, static, closed}

	for _, seed := range []struct {
		pick   uint8
		token  string
		body   []byte
		name   string
		value  string
		method string
	}{
		{0, "", []byte(`{"a":1}`), "Content-Type", "application/json", "POST"},
		{0, "", []byte{0xff, 0, 1}, "X-Job-Event", "evt-1", "POST"},
		{1, "", []byte("hello"), "X-Hub-Signature-256", "sha256=00", "POST"},
		{1, "", []byte("hello"), "X-Hub-Signature-256", "sha256=" + hmacHex(secret, "hello"), "POST"},
		{2, "", []byte(""), "Webhook-Id", "w1", "POST"},
		{3, "", []byte("late"), "", "", "POST"},
		{4, "whk_00AAAA", []byte("x"), "Stripe-Signature", "t=1,v1=zz", "POST"},
		{4, "../../v1/hooks", []byte("x"), "Authorization", "Bearer x", "POST"},
		{0, "", bytes.Repeat([]byte("y"), 5000), "", "", "POST"},
		{0, "", []byte("x"), "", "", "GET"},
	} {
		f.Add(seed.pick, seed.token, seed.body, seed.name, seed.value, seed.method)
	}

	f.Fuzz(func(t *testing.T, pick uint8, token string, body []byte, name, value, method string) {
		tok := token
		known := int(pick) < len(tokens)
		if known {
			tok = tokens[pick]
		}
		if method != "GET" && method != "PUT" {
			method = "POST"
		}
		req := httptest.NewRequest(method, "/v1/callback/"+url.PathEscape(tok), bytes.NewReader(body))
		if name != "" {
			req.Header[name] = []string{value}
		}
		rec := httptest.NewRecorder()
		e.srv.App.Handler.ServeHTTP(rec, req)

		allowed := map[int]bool{200: true, 202: true, 401: true, 404: true, 405: true, 410: true, 413: true, 429: true}
		if !allowed[rec.Code] {
			t.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
		}
		out := rec.Body.String()
		if known && strings.Contains(out, tok) {
			t.Fatalf("the answer echoes the token: %s", out)
		}
		if strings.Contains(out, secret) {
			t.Fatalf("the answer holds the verify secret: %s", out)
		}
		if len(body) >= 16 && strings.Contains(out, string(body)) {
			t.Fatalf("the answer echoes the body: %s", out)
		}
		if out == "thanks" {
			return
		}
		var v map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("answer is not JSON: %q", out)
		}
		if rec.Code >= 400 {
			code, _ := v["error"].(map[string]any)["code"].(string)
			want := map[int]string{401: "signature_invalid", 404: "not_found", 405: "method_not_allowed", 410: "hook_closed",
				413: "payload_too_large", 429: "rate_limited"}[rec.Code]
			if code != want {
				t.Fatalf("status %d with code %q", rec.Code, code)
			}
		}
		if rec.Code == http.StatusAccepted {
			id, isString := v["eventId"].(string)
			if v["ok"] != true || !isString || !ids.ValidEventID(id) {
				t.Fatalf("202 body: %s, want ok and the stored event's id", out)
			}
		}
	})
}
