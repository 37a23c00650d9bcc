package handlers_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// Black-box tests of the hook routes: a real server per store backend,
// driven over HTTP as an executor and an outside system would.

type hookEnv struct {
	srv   *apptest.Server
	alice string // bearer tokens
	bob   string
}

func eachStore(t *testing.T, cfg app.Config, fn func(t *testing.T, e *hookEnv)) {
	t.Helper()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) { fn(t, startEnv(t, sc, cfg)) })
}

func startEnv(t testing.TB, sc store.Config, cfg app.Config) *hookEnv {
	if cfg.WakeBlock == 0 {
		cfg.WakeBlock = 500 * time.Millisecond // Stop waits for the fan-in readers' blocking read
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "https://hooks.example.test"
	}
	srv := apptest.Start(t, sc, cfg)
	return &hookEnv{srv: srv, alice: apptest.Token(t, "alice"), bob: apptest.Token(t, "bob")}
}

type answer struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (a answer) str(path ...string) string {
	v := a.get(path...)
	s, _ := v.(string)
	return s
}

func (a answer) get(path ...string) any {
	var v any = a.body
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, _ := strconv.Atoi(p)
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func (a answer) list(path ...string) []any {
	l, _ := a.get(path...).([]any)
	return l
}

func (e *hookEnv) do(t testing.TB, method, path, bearer string, body any, headers ...string) answer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if rd != nil && len(headers) == 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: res.StatusCode, header: res.Header, raw: raw}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

func (e *hookEnv) must(t testing.TB, want int, a answer) answer {
	t.Helper()
	if a.status != want {
		t.Fatalf("status %d, want %d: %s", a.status, want, a.raw)
	}
	return a
}

func (e *hookEnv) session(t testing.TB) string {
	t.Helper()
	return e.must(t, 201, e.do(t, "POST", "/v1/sessions", e.alice, map[string]any{})).str("sessionId")
}

func (e *hookEnv) task(t testing.TB, session string) string {
	t.Helper()
	return e.must(t, 201, e.do(t, "POST", "/v1/tasks", e.alice, map[string]any{"sessionId": session})).str("taskId")
}

// hook creates a hook and returns its id and token.
func (e *hookEnv) hook(t testing.TB, body map[string]any) (string, string) {
	t.Helper()
	a := e.must(t, 201, e.do(t, "POST", "/v1/hooks", e.alice, body))
	return a.str("hookId"), a.str("token")
}

func (e *hookEnv) post(t testing.TB, token string, body string, headers ...string) answer {
	t.Helper()
	if len(headers) == 0 {
		headers = []string{"Content-Type", "application/json"}
	}
	return e.do(t, "POST", "/v1/callback/"+token, "", body, headers...)
}

func (e *hookEnv) logOf(t testing.TB, hook string) answer {
	t.Helper()
	return e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+hook+"/log", e.alice, nil))
}

func (e *hookEnv) read(t testing.TB, hook, query string) answer {
	t.Helper()
	return e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+hook+"/events?"+query, e.alice, nil))
}

func wantError(t testing.TB, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.str("error", "code") != code {
		t.Fatalf("got %d %s, want %d %s", a.status, a.raw, status, code)
	}
}

func TestHookLifecycle(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		ses := e.session(t)
		task := e.task(t, ses)

		created := e.must(t, 201, e.do(t, "POST", "/v1/hooks", e.alice, map[string]any{"taskId": task, "label": "ci"}))
		hook, token := created.str("hookId"), created.str("token")
		if !strings.HasPrefix(hook, "hook_") || !strings.HasPrefix(token, "whk_") || len(token) != 49 {
			t.Fatalf("create: %s", created.raw)
		}
		if created.str("url") != "https://hooks.example.test/v1/callback/"+token || created.str("status") != "open" ||
			created.str("sessionId") != ses || created.str("taskId") != task || created.header.Get("Location") != "/v1/hooks/"+hook {
			t.Fatalf("create: %s %v", created.raw, created.header)
		}
		if created.str("expiresAt") == "" || created.get("ttlMs") == nil {
			t.Errorf("create without expiry: %s", created.raw)
		}

		got := e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+hook, e.alice, nil))
		if got.get("token") != nil || got.get("url") != nil || got.str("status") != "open" || got.str("label") != "ci" {
			t.Fatalf("get: %s", got.raw)
		}
		for _, q := range []string{"", "?taskId=" + task, "?sessionId=" + ses} {
			l := e.must(t, 200, e.do(t, "GET", "/v1/hooks"+q, e.alice, nil))
			if items := l.list("items"); len(items) != 1 || l.str("items", "0", "hookId") != hook {
				t.Errorf("list %q: %s", q, l.raw)
			}
		}

		acc := e.must(t, 202, e.post(t, token, `{"state":"running"}`, "Content-Type", "application/json", "X-GitHub-Event", "push",
			"Authorization", "Bearer sender-credential", "Cookie", "c=1"))
		if acc.get("ok") != true || acc.get("duplicate") != false || acc.str("eventId") == "" {
			t.Fatalf("callback: %s", acc.raw)
		}
		batch := e.read(t, hook, "consumer=c1")
		evs := batch.list("events")
		if len(evs) != 1 || batch.str("group") != "default" || batch.get("pending") != float64(1) ||
			batch.str("hookStatus") != "open" || batch.get("closeReason") != nil {
			t.Fatalf("read: %s", batch.raw)
		}
		ev := evs[0].(map[string]any)
		if ev["eventId"] != acc.str("eventId") || ev["seq"] != float64(1) || ev["body"] != `{"state":"running"}` ||
			ev["deliveryCount"] != float64(1) || ev["method"] != "POST" || ev["contentType"] != "application/json" || ev["hookId"] != hook {
			t.Fatalf("event: %v", ev)
		}
		headers := ev["headers"].(map[string]any)
		if headers["x-github-event"] != "push" || headers["authorization"] != nil || headers["cookie"] != nil {
			t.Errorf("headers: %v", headers)
		}
		ack := e.must(t, 200, e.do(t, "POST", "/v1/hooks/"+hook+"/ack", e.alice, map[string]any{"eventIds": []string{acc.str("eventId")}}))
		if ack.get("acked") != float64(1) {
			t.Fatalf("ack: %s", ack.raw)
		}
		if again := e.read(t, hook, "consumer=c1&visibilityMs=1"); len(again.list("events")) != 0 || again.get("pending") != float64(0) {
			t.Fatalf("read after ack: %s", again.raw)
		}

		// The session hears of it, without the body.
		sesLog := e.must(t, 200, e.do(t, "GET", "/v1/sessions/"+ses+"/events", e.alice, nil))
		var received map[string]any
		for _, x := range sesLog.list("events") {
			if m := x.(map[string]any); m["type"] == "hook.received" {
				received = m
			}
		}
		if received == nil || received["taskId"] != task {
			t.Fatalf("no hook.received in %s", sesLog.raw)
		}
		data := received["data"].(map[string]any)
		if data["hookId"] != hook || data["eventId"] != acc.str("eventId") || data["seq"] != float64(1) || data["method"] != "POST" ||
			data["contentType"] != "application/json" || len(data) != 5 {
			t.Errorf("hook.received data: %v", data)
		}

		closed := e.must(t, 200, e.do(t, "POST", "/v1/hooks/"+hook+"/close", e.alice, nil))
		if closed.str("status") != "closed" || closed.str("closeReason") != "closed" || closed.str("closedAt") == "" {
			t.Fatalf("close: %s", closed.raw)
		}
		again := e.must(t, 200, e.do(t, "POST", "/v1/hooks/"+hook+"/close", e.alice, nil))
		if !bytes.Equal(again.raw, closed.raw) {
			t.Errorf("second close %s, first %s", again.raw, closed.raw)
		}
		late := e.post(t, token, `{"state":"late"}`)
		wantError(t, late, 410, "hook_closed")
		if late.str("error", "reason") != "closed" {
			t.Errorf("410 reason: %s", late.raw)
		}
		log := e.logOf(t, hook)
		if len(log.list("events")) != 1 || log.str("cursor") != acc.str("eventId") || len(log.list("deadLetters")) != 0 {
			t.Fatalf("log: %s", log.raw)
		}
	})
}

func TestHookCreateReplayLeavesTheTokenOut(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	ses := e.session(t)
	body := map[string]any{"sessionId": ses}
	first := e.must(t, 201, e.do(t, "POST", "/v1/hooks", e.alice, body, "Content-Type", "application/json", "Idempotency-Key", "k1"))
	again := e.must(t, 201, e.do(t, "POST", "/v1/hooks", e.alice, body, "Content-Type", "application/json", "Idempotency-Key", "k1"))
	if again.header.Get("Idempotent-Replayed") != "true" || again.str("hookId") != first.str("hookId") {
		t.Fatalf("replay: %s", again.raw)
	}
	if first.str("token") == "" || again.get("token") != nil || again.get("url") != nil {
		t.Fatalf("the token is shown once: first %s, replay %s", first.raw, again.raw)
	}
	wantError(t, e.do(t, "POST", "/v1/hooks", e.alice, map[string]any{"sessionId": ses, "label": "x"},
		"Content-Type", "application/json", "Idempotency-Key", "k1"), 409, "idempotency_conflict")
}

func TestHookCreateRefusals(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	ses := e.session(t)
	task := e.task(t, ses)
	other := e.session(t)
	for name, c := range map[string]struct {
		body   string
		status int
		code   string
		field  string
	}{
		"neither id":        {`{}`, 400, "invalid_request", "taskId"},
		"unknown field":     {`{"sessionId":"` + ses + `","nope":1}`, 400, "invalid_request", "nope"},
		"bad json":          {`{"sessionId":`, 400, "invalid_json", ""},
		"short ttl":         {`{"sessionId":"` + ses + `","ttlMs":10}`, 400, "invalid_request", "ttlMs"},
		"bad scheme":        {`{"sessionId":"` + ses + `","verify":{"scheme":"md5","secret":"x"}}`, 400, "invalid_request", "verify.scheme"},
		"no secret":         {`{"sessionId":"` + ses + `","verify":{"scheme":"github"}}`, 400, "invalid_request", "verify.secret"},
		"hmac no header":    {`{"sessionId":"` + ses + `","verify":{"scheme":"hmac-sha256","secret":"s"}}`, 400, "invalid_request", "verify.header"},
		"bad response":      {`{"sessionId":"` + ses + `","response":{"status":500,"body":"x"}}`, 400, "invalid_request", "response.status"},
		"bad content type":  {`{"sessionId":"` + ses + `","response":{"status":200,"contentType":"no type"}}`, 400, "invalid_request", "response.contentType"},
		"bad dedupe header": {`{"sessionId":"` + ses + `","dedupeHeader":"a b"}`, 400, "invalid_request", "dedupeHeader"},
		"other session":     {`{"taskId":"` + task + `","sessionId":"` + other + `"}`, 400, "invalid_request", "sessionId"},
		"unknown session":   {`{"sessionId":"ses_nope"}`, 404, "not_found", ""},
		"unknown task":      {`{"taskId":"` + store.NewID(store.TaskPrefix, 0) + `"}`, 404, "not_found", ""},
	} {
		a := e.do(t, "POST", "/v1/hooks", e.alice, c.body)
		if a.status != c.status || a.str("error", "code") != c.code || (c.field != "" && a.str("error", "details", "0", "field") != c.field) {
			t.Errorf("%s: %d %s, want %d %s on %s", name, a.status, a.raw, c.status, c.code, c.field)
		}
	}
	// Somebody else's session and task do not exist.
	wantError(t, e.do(t, "POST", "/v1/hooks", e.bob, map[string]any{"sessionId": ses}), 404, "not_found")
	wantError(t, e.do(t, "POST", "/v1/hooks", e.bob, map[string]any{"taskId": task}), 404, "not_found")
	// A finished task takes no hook.
	e.must(t, 200, e.do(t, "POST", "/v1/tasks/"+task+"/complete", e.alice, map[string]any{"result": 1}))
	wantError(t, e.do(t, "POST", "/v1/hooks", e.alice, map[string]any{"taskId": task}), 409, "task_terminal")
}

// A ttlMs above the maximum is capped, however large: a value whose
// nanoseconds overflow an int64 once made a hook that was closed (and its
// keys gone) the moment it was created.
func TestHookTTLAboveTheMaximumIsCapped(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	ses := e.session(t)
	task := e.task(t, ses)
	taskTTL := e.must(t, 200, e.do(t, "GET", "/v1/tasks/"+task, e.alice, nil)).get("ttlMs").(float64)
	for name, c := range map[string]struct {
		body map[string]any
		max  float64
	}{
		"session hook": {map[string]any{"sessionId": ses, "ttlMs": int64(1e13)}, float64((30 * 24 * time.Hour).Milliseconds())},
		"task hook":    {map[string]any{"taskId": task, "ttlMs": int64(1e13)}, taskTTL},
	} {
		a := e.must(t, 201, e.do(t, "POST", "/v1/hooks", e.alice, c.body))
		if ttl, _ := a.get("ttlMs").(float64); a.str("status") != "open" || ttl <= 0 || ttl > c.max {
			t.Errorf("%s: %s, want an open hook with ttlMs in (0, %v]", name, a.raw, c.max)
			continue
		}
		e.must(t, 202, e.post(t, a.str("token"), "x"))
		if g := e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+a.str("hookId"), e.alice, nil)); g.str("status") != "open" {
			t.Errorf("%s: %s", name, g.raw)
		}
	}
}

// A dedupe header that names a credential or signature header would store
// the sender's credential in every event (as providerEventId), where
// keptHeaders never stores it: such a hook is refused.
func TestHookDedupeHeaderIsNeverACredential(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	ses := e.session(t)
	const credential = "Bearer sender-credential-0123456789"
	for _, body := range []map[string]any{
		{"sessionId": ses, "dedupeHeader": "authorization"},
		{"sessionId": ses, "dedupeHeader": "Cookie"},
		{"sessionId": ses, "dedupeHeader": "X-Hub-Signature-256"},
		{"sessionId": ses, "dedupeHeader": "X-My-Sig",
			"verify": map[string]any{"scheme": "hmac-sha256", "secret": "s", "header": "x-my-sig"}},
	} {
		a := e.do(t, "POST", "/v1/hooks", e.alice, body)
		if a.status == 201 && body["verify"] == nil {
			e.must(t, 202, e.post(t, a.str("token"), "x", "Content-Type", "text/plain", body["dedupeHeader"].(string), credential))
			if l := e.logOf(t, a.str("hookId")); strings.Contains(string(l.raw), "sender-credential") {
				t.Errorf("dedupeHeader %v: the credential is stored: %s", body["dedupeHeader"], l.raw)
			}
		}
		if a.status != 400 || a.str("error", "details", "0", "field") != "dedupeHeader" {
			t.Errorf("dedupeHeader %v: %d %s, want 400 on dedupeHeader", body["dedupeHeader"], a.status, a.raw)
		}
	}
}

func TestHookOwnership(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	hook, token := e.hook(t, map[string]any{"sessionId": e.session(t)})
	e.must(t, 202, e.post(t, token, "x"))
	missing := e.do(t, "GET", "/v1/hooks/"+store.NewID(store.HookPrefix, 1), e.alice, nil)
	wantError(t, missing, 404, "not_found")
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/hooks/" + hook}, {"POST", "/v1/hooks/" + hook + "/close"},
		{"GET", "/v1/hooks/" + hook + "/events"}, {"GET", "/v1/hooks/" + hook + "/log"},
	} {
		a := e.do(t, r.method, r.path, e.bob, nil)
		if a.status != 404 || !bytes.Equal(a.raw, missing.raw) {
			t.Errorf("bob %s %s: %d %s, want the body of a missing hook", r.method, r.path, a.status, a.raw)
		}
	}
	a := e.do(t, "POST", "/v1/hooks/"+hook+"/ack", e.bob, map[string]any{"eventIds": []string{"1-0"}})
	wantError(t, a, 404, "not_found")
	if l := e.must(t, 200, e.do(t, "GET", "/v1/hooks", e.bob, nil)); len(l.list("items")) != 0 {
		t.Errorf("bob's list: %s", l.raw)
	}
	// No JWT on the hook routes is a 401; the callback route needs none.
	wantError(t, e.do(t, "GET", "/v1/hooks/"+hook, "", nil), 401, "unauthorized")
	// The hook is still open and its event unread.
	if g := e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+hook, e.alice, nil)); g.str("status") != "open" {
		t.Errorf("after bob: %s", g.raw)
	}
	admin := apptest.Token(t, "root", "admin")
	e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+hook, admin, nil))
}

// signer signs a request body for one verify scheme.
type signer struct {
	verify map[string]any
	sign   func(body string, secret string) []string // headers
	wrong  string                                    // another secret
}

func hmacHex(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func hmacB64(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func signers() map[string]signer {
	swSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-webhooks-test-key-32by!"))
	return map[string]signer{
		"standard-webhooks": {
			verify: map[string]any{"scheme": "standard-webhooks", "secret": swSecret},
			sign: func(body, secret string) []string {
				key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
				id, ts := "msg_"+strconv.FormatInt(time.Now().UnixNano(), 36), strconv.FormatInt(time.Now().Unix(), 10)
				return []string{"Webhook-Id", id, "Webhook-Timestamp", ts, "Webhook-Signature", "v1," + hmacB64(key, id+"."+ts+"."+body)}
			},
			wrong: "whsec_" + base64.StdEncoding.EncodeToString([]byte("another-key")),
		},
		"github": {
			verify: map[string]any{"scheme": "github", "secret": "gh-secret"},
			sign: func(body, secret string) []string {
				return []string{"X-Hub-Signature-256", "sha256=" + hmacHex(secret, body), "X-GitHub-Event", "push"}
			},
			wrong: "not-gh-secret",
		},
		"stripe": {
			verify: map[string]any{"scheme": "stripe", "secret": "whsec_stripe"},
			sign: func(body, secret string) []string {
				ts := strconv.FormatInt(time.Now().Unix(), 10)
				return []string{"Stripe-Signature", "t=" + ts + ",v1=" + hmacHex(secret, ts+"."+body)}
			},
			wrong: "whsec_other",
		},
		"slack": {
			verify: map[string]any{"scheme": "slack", "secret": "slack-signing"},
			sign: func(body, secret string) []string {
				ts := strconv.FormatInt(time.Now().Unix(), 10)
				return []string{"X-Slack-Request-Timestamp", ts, "X-Slack-Signature", "v0=" + hmacHex(secret, "v0:"+ts+":"+body)}
			},
			wrong: "slack-other",
		},
		"hmac-sha256 hex": {
			verify: map[string]any{"scheme": "hmac-sha256", "secret": "shared", "header": "X-Signature"},
			sign: func(body, secret string) []string {
				return []string{"X-Signature", hmacHex(secret, body)}
			},
			wrong: "not-shared",
		},
		"hmac-sha256 base64": {
			verify: map[string]any{"scheme": "hmac-sha256", "secret": "shared", "header": "X-Sig", "encoding": "base64"},
			sign: func(body, secret string) []string {
				return []string{"X-Sig", "sha256=" + hmacB64([]byte(secret), body)}
			},
			wrong: "not-shared",
		},
	}
}

func TestHookVerifiesSignatures(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		ses := e.session(t)
		for name, s := range signers() {
			secret := s.verify["secret"].(string)
			hook, token := e.hook(t, map[string]any{"sessionId": ses, "verify": s.verify})
			got := e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+hook, e.alice, nil))
			if got.str("verify", "scheme") != s.verify["scheme"] || strings.Contains(string(got.raw), secret) || got.get("verify", "secret") != nil {
				t.Errorf("%s: the hook shows its verify as %s", name, got.raw)
			}
			body := `{"event":"` + name + `"}`

			// Refused: wrong secret, tampered body, no signature at all.
			wantError(t, e.post(t, token, body, s.sign(body, s.wrong)...), 401, "signature_invalid")
			wantError(t, e.post(t, token, body+" ", s.sign(body, secret)...), 401, "signature_invalid")
			bad := e.post(t, token, body, "Content-Type", "application/json")
			wantError(t, bad, 401, "signature_invalid")
			if bad.header.Get("WWW-Authenticate") != "" {
				t.Errorf("%s: a 401 on the callback route asks for a bearer token", name)
			}
			if n := len(e.logOf(t, hook).list("events")); n != 0 {
				t.Fatalf("%s: %d events stored after bad signatures", name, n)
			}
			// Accepted.
			e.must(t, 202, e.post(t, token, body, s.sign(body, secret)...))
			log := e.logOf(t, hook)
			if evs := log.list("events"); len(evs) != 1 || evs[0].(map[string]any)["body"] != body {
				t.Fatalf("%s: log %s", name, log.raw)
			}
			for _, h := range []string{"webhook-signature", "x-hub-signature-256", "stripe-signature", "x-slack-signature", "x-signature", "x-sig"} {
				if log.get("events", "0", "headers", h) != nil {
					t.Errorf("%s: stored the signature header %s", name, h)
				}
			}
		}
	})
}

func TestHookStaleTimestampIsRefused(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	hook, token := e.hook(t, map[string]any{"sessionId": e.session(t), "verify": map[string]any{"scheme": "slack", "secret": "s"}})
	ts := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)
	wantError(t, e.post(t, token, "b", "X-Slack-Request-Timestamp", ts, "X-Slack-Signature", "v0="+hmacHex("s", "v0:"+ts+":b")), 401, "signature_invalid")
	if n := len(e.logOf(t, hook).list("events")); n != 0 {
		t.Fatalf("%d events stored", n)
	}
}

func TestHookDedupes(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		ses := e.session(t)
		for name, c := range map[string]struct {
			create  map[string]any
			headers func(id string) []string
		}{
			"webhook-id":        {nil, func(id string) []string { return []string{"Webhook-Id", id} }},
			"X-GitHub-Delivery": {nil, func(id string) []string { return []string{"X-GitHub-Delivery", id} }},
			"dedupeHeader":      {map[string]any{"dedupeHeader": "X-Job-Event"}, func(id string) []string { return []string{"X-Job-Event", id} }},
			"Idempotency-Key":   {nil, func(id string) []string { return []string{"Idempotency-Key", id} }},
		} {
			body := map[string]any{"sessionId": ses}
			for k, v := range c.create {
				body[k] = v
			}
			hook, token := e.hook(t, body)
			first := e.must(t, 202, e.post(t, token, `{"n":1}`, c.headers("d-1")...))
			again := e.must(t, 202, e.post(t, token, `{"n":1,"resent":true}`, c.headers("d-1")...))
			if again.get("duplicate") != true || again.str("eventId") != first.str("eventId") || first.get("duplicate") != false {
				t.Errorf("%s: first %s, repeat %s", name, first.raw, again.raw)
			}
			next := e.must(t, 202, e.post(t, token, `{"n":2}`, c.headers("d-2")...))
			if next.get("duplicate") != false || next.str("eventId") == first.str("eventId") {
				t.Errorf("%s: another id: %s", name, next.raw)
			}
			log := e.logOf(t, hook)
			if evs := log.list("events"); len(evs) != 2 || log.get("events", "1", "seq") != float64(2) {
				t.Errorf("%s: log %s", name, log.raw)
			}
		}
	})
}

func TestHookClosesWhenItsTaskEnds(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		ses := e.session(t)
		task := e.task(t, ses)
		hook, token := e.hook(t, map[string]any{"taskId": task})
		e.must(t, 200, e.do(t, "POST", "/v1/tasks/"+task+"/complete", e.alice, map[string]any{"result": "done"}))
		got := e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+hook, e.alice, nil))
		if got.str("status") != "closed" || got.str("closeReason") != "task_terminal" {
			t.Fatalf("after complete: %s", got.raw)
		}
		before := len(e.must(t, 200, e.do(t, "GET", "/v1/sessions/"+ses+"/events", e.alice, nil)).list("events"))
		late := e.post(t, token, `{"state":"complete"}`, "Content-Type", "application/json", "Webhook-Id", "late-1")
		wantError(t, late, 410, "hook_closed")
		if late.str("error", "reason") != "task_terminal" {
			t.Errorf("reason: %s", late.raw)
		}
		if n := len(e.logOf(t, hook).list("events")); n != 0 {
			t.Errorf("%d events stored after the task ended", n)
		}
		if n := len(e.must(t, 200, e.do(t, "GET", "/v1/sessions/"+ses+"/events", e.alice, nil)).list("events")); n != before {
			t.Errorf("the session log grew from %d to %d", before, n)
		}
	})
}

func TestHookClosesAfterItsTTL(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		hook, token := e.hook(t, map[string]any{"sessionId": e.session(t), "ttlMs": 1000})
		var g answer
		storetest.WaitFor(t, "the hook to expire", func() bool {
			g = e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+hook, e.alice, nil))
			return g.str("status") == "closed"
		})
		if g.str("closeReason") != "expired" {
			t.Fatalf("closed for %s", g.raw)
		}
		late := e.post(t, token, "late")
		wantError(t, late, 410, "hook_closed")
		if late.str("error", "reason") != "expired" {
			t.Errorf("reason: %s", late.raw)
		}
		if n := len(e.logOf(t, hook).list("events")); n != 0 {
			t.Errorf("%d events stored after expiry", n)
		}
	})
}

func TestHookUnknownTokens(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	hook, token := e.hook(t, map[string]any{"sessionId": e.session(t)})
	missing := e.do(t, "GET", "/v1/hooks/"+store.NewID(store.HookPrefix, 0), e.alice, nil)
	random := make([]byte, 32)
	_, _ = rand.Read(random)
	for name, tok := range map[string]string{
		"random well-formed": token[:6] + base64.RawURLEncoding.EncodeToString(random),
		"one character off":  token[:len(token)-1] + flip(token[len(token)-1]),
		"too short":          token[:20],
		"no prefix":          strings.TrimPrefix(token, "whk_"),
		"bad partition":      "whk_zz" + token[6:],
		"junk":               "whk_%2F..%2F",
	} {
		a := e.post(t, tok, "x")
		if a.status != 404 || !bytes.Equal(a.raw, missing.raw) {
			t.Errorf("%s: %d %s, want the body of any 404", name, a.status, a.raw)
		}
	}
	if n := len(e.logOf(t, hook).list("events")); n != 0 {
		t.Errorf("%d events stored", n)
	}
	wantError(t, e.do(t, "POST", "/v1/callback/", "", "x"), 404, "not_found")
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func TestHookAtLeastOnce(t *testing.T) {
	eachStore(t, noRecheck, func(t *testing.T, e *hookEnv) {
		hook, token := e.hook(t, map[string]any{"sessionId": e.session(t)})
		id := e.must(t, 202, e.post(t, token, "work item")).str("eventId")

		// Consumer a takes it and never acks.
		a := e.read(t, hook, "consumer=a&visibilityMs=300")
		if a.str("events", "0", "eventId") != id || a.get("events", "0", "deliveryCount") != float64(1) {
			t.Fatalf("a: %s", a.raw)
		}
		// Consumer b long-polls: it is answered once a's visibility runs out,
		// with the same event on its second delivery. Nothing else ends its
		// wait early (no re-check within it): had it sat the wait out, it
		// would answer with no event.
		b := e.read(t, hook, "consumer=b&visibilityMs=300&wait=20s")
		if b.str("events", "0", "eventId") != id || b.get("events", "0", "deliveryCount") != float64(2) {
			t.Fatalf("b: %s", b.raw)
		}
		e.must(t, 200, e.do(t, "POST", "/v1/hooks/"+hook+"/ack", e.alice, map[string]any{"eventIds": []string{id}}))
		// Acked, it never comes back, to anyone.
		for _, c := range []string{"a", "b", "c"} {
			if r := e.read(t, hook, "consumer="+c+"&visibilityMs=1&wait=0.2"); len(r.list("events")) != 0 {
				t.Fatalf("%s after ack: %s", c, r.raw)
			}
		}
		// Another group reads the same event independently.
		if r := e.read(t, hook, "group=audit&consumer=x"); r.str("events", "0", "eventId") != id || r.get("events", "0", "deliveryCount") != float64(1) {
			t.Fatalf("group audit: %s", r.raw)
		}
	})
}

// A waiting read is answered by the post that wakes it: with no re-check
// within its wait, a read that was not woken sits the wait out and answers
// with no event.
func TestHookLongPollWakesOnPost(t *testing.T) {
	eachStore(t, noRecheck, func(t *testing.T, e *hookEnv) {
		hook, token := e.hook(t, map[string]any{"sessionId": e.session(t)})
		e.read(t, hook, "consumer=a") // makes the group
		type result struct {
			status int
			body   []byte
			err    error
		}
		got := make(chan result, 1)
		go func() {
			req, _ := http.NewRequest("GET", e.srv.URL+"/v1/hooks/"+hook+"/events?consumer=a&wait=30s", nil)
			req.Header.Set("Authorization", "Bearer "+e.alice)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				got <- result{err: err}
				return
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			got <- result{res.StatusCode, b, err}
		}()
		// The post must come after the reader waits; a post before it is
		// found by its first read, which is fine too.
		storetest.WaitFor(t, "the reader to wait", func() bool {
			return strings.Contains(scrape(t, e), "taskhook_waiters 1")
		})
		e.must(t, 202, e.post(t, token, "wake up"))
		r := <-got
		if r.err != nil || r.status != 200 || !strings.Contains(string(r.body), `"body":"wake up"`) {
			t.Fatalf("long poll: %d %s %v", r.status, r.body, r.err)
		}
	})
}

func scrape(t testing.TB, e *hookEnv) string {
	t.Helper()
	res, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

func TestHookDeadLetters(t *testing.T) {
	eachStore(t, app.Config{HookMaxDeliveries: 2}, func(t *testing.T, e *hookEnv) {
		hook, token := e.hook(t, map[string]any{"sessionId": e.session(t)})
		id := e.must(t, 202, e.post(t, token, "poison")).str("eventId")
		if r := e.read(t, hook, "consumer=a&visibilityMs=50"); r.get("events", "0", "deliveryCount") != float64(1) {
			t.Fatalf("first: %s", r.raw)
		}
		if r := e.read(t, hook, "consumer=a&visibilityMs=50&wait=10s"); r.get("events", "0", "deliveryCount") != float64(2) {
			t.Fatalf("second: %s", r.raw)
		}
		// The next attempt would be the third: it moves to the dead letters.
		storetest.WaitFor(t, "the dead letter", func() bool {
			r := e.read(t, hook, "consumer=b&visibilityMs=50&wait=0.2")
			if len(r.list("events")) != 0 {
				t.Fatalf("delivered past the maximum: %s", r.raw)
			}
			return len(e.logOf(t, hook).list("deadLetters")) == 1
		})
		log := e.logOf(t, hook)
		dl := log.get("deadLetters", "0").(map[string]any)
		deadAt, isString := dl["deadAt"].(string)
		if _, err := time.Parse(time.RFC3339Nano, deadAt); !isString || err != nil {
			t.Errorf("dead letter without a deadAt time: %v", dl)
		}
		if dl["eventId"] != id || dl["deliveryCount"] != float64(2) || dl["group"] != "default" || dl["body"] != "poison" ||
			log.get("deadLetterCount") != float64(1) {
			t.Fatalf("dead letter: %v", dl)
		}
		if len(log.list("events")) != 1 {
			t.Errorf("the log still shows the event: %s", log.raw)
		}
		if !strings.Contains(scrape(t, e), "taskhook_hook_dead_letters_total 1") {
			t.Error("dead letter not counted")
		}
	})
}

func TestHookRateLimit(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{HookRateLimit: 0.1, HookBurst: 2})
	hook, token := e.hook(t, map[string]any{"sessionId": e.session(t)})
	e.must(t, 202, e.post(t, token, "1"))
	e.must(t, 202, e.post(t, token, "2"))
	a := e.post(t, token, "3")
	wantError(t, a, 429, "rate_limited")
	if ra, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || ra < 1 || ra > 10 {
		t.Errorf("Retry-After %q", a.header.Get("Retry-After"))
	}
	if n := len(e.logOf(t, hook).list("events")); n != 2 {
		t.Errorf("%d events stored", n)
	}
	if !strings.Contains(scrape(t, e), `taskhook_hook_posts_total{outcome="rate_limited"} 1`) {
		t.Error("rate limit not counted")
	}
}

func TestHookBodies(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{MaxBodyBytes: 1024})
	hook, token := e.hook(t, map[string]any{"sessionId": e.session(t)})
	binary := []byte{0xff, 0x00, 0xfe, 'x'}
	e.must(t, 202, e.do(t, "POST", "/v1/callback/"+token, "", binary, "Content-Type", "application/octet-stream"))
	e.must(t, 202, e.do(t, "POST", "/v1/callback/"+token, "", nil, "Content-Type", "text/plain"))
	wantError(t, e.do(t, "POST", "/v1/callback/"+token, "", strings.Repeat("x", 1025), "Content-Type", "text/plain"), 413, "payload_too_large")
	log := e.logOf(t, hook)
	if log.str("events", "0", "bodyBase64") != base64.StdEncoding.EncodeToString(binary) || log.get("events", "0", "body") != nil {
		t.Errorf("binary body: %s", log.raw)
	}
	if log.get("events", "1", "body") != "" || len(log.list("events")) != 2 {
		t.Errorf("empty body: %s", log.raw)
	}
}

func TestHookStaticResponse(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	_, token := e.hook(t, map[string]any{"sessionId": e.session(t),
		"response": map[string]any{"status": 200, "body": "<ok/>", "contentType": "application/xml"}})
	for range 2 {
		a := e.post(t, token, "x", "Webhook-Id", "same")
		if a.status != 200 || string(a.raw) != "<ok/>" || a.header.Get("Content-Type") != "application/xml" {
			t.Fatalf("static response: %d %s %v", a.status, a.raw, a.header)
		}
	}
}

func TestHookValidatesReads(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	hook, _ := e.hook(t, map[string]any{"sessionId": e.session(t)})
	for q, field := range map[string]string{
		"count=0": "count", "count=101": "count", "visibilityMs=0": "visibilityMs", "visibilityMs=x": "visibilityMs",
		"group=a%20b": "group", "consumer=" + strings.Repeat("c", 65): "consumer", "wait=-1s": "wait",
	} {
		a := e.do(t, "GET", "/v1/hooks/"+hook+"/events?"+q, e.alice, nil)
		if a.status != 400 || a.str("error", "details", "0", "field") != field {
			t.Errorf("%s: %d %s", q, a.status, a.raw)
		}
	}
	for body, field := range map[string]string{
		`{}`: "eventIds", `{"eventIds":[]}`: "eventIds", `{"eventIds":["x"]}`: "eventIds[0]", `{"eventIds":["1-0"],"group":"!"}`: "group",
	} {
		a := e.do(t, "POST", "/v1/hooks/"+hook+"/ack", e.alice, body)
		if a.status != 400 || a.str("error", "details", "0", "field") != field {
			t.Errorf("ack %s: %d %s", body, a.status, a.raw)
		}
	}
	wantError(t, e.do(t, "GET", "/v1/hooks/"+hook+"/log?after=nope", e.alice, nil), 400, "invalid_request")
}

func TestHookStoreUnavailable(t *testing.T) {
	e := startEnv(t, store.Config{URL: "redis://127.0.0.1:1/0", Prefix: storetest.Prefix()}, app.Config{})
	a := e.post(t, "whk_00"+base64.RawURLEncoding.EncodeToString(make([]byte, 32)), "x")
	wantError(t, a, 503, "store_unavailable")
	if a.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
}

// The token, the verify secret and the bodies appear in no log line and in
// no metric, through a run that touches every hook route.
func TestHookSecretsStayOutOfLogs(t *testing.T) {
	eachStore(t, app.Config{LogLevel: "debug"}, func(t *testing.T, e *hookEnv) {
		ses := e.session(t)
		secret := "verify-secret-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		hook, token := e.hook(t, map[string]any{"sessionId": ses, "verify": map[string]any{"scheme": "github", "secret": secret}})
		body := `{"payload":"body-marker-` + strconv.FormatInt(time.Now().UnixNano(), 36) + `"}`
		sig := "sha256=" + hmacHex(secret, body)
		e.must(t, 202, e.post(t, token, body, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", "del-1"))
		e.must(t, 202, e.post(t, token, body, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", "del-1"))
		wantError(t, e.post(t, token, body+"tampered", "X-Hub-Signature-256", sig), 401, "signature_invalid")
		wantError(t, e.post(t, token[:len(token)-2]+"xx", body), 404, "not_found")
		r := e.read(t, hook, "consumer=a")
		e.must(t, 200, e.do(t, "POST", "/v1/hooks/"+hook+"/ack", e.alice, map[string]any{"eventIds": []string{r.str("events", "0", "eventId")}}))
		e.logOf(t, hook)
		e.must(t, 200, e.do(t, "POST", "/v1/hooks/"+hook+"/close", e.alice, nil))
		wantError(t, e.post(t, token, body, "X-Hub-Signature-256", sig), 410, "hook_closed")
		sesLog := e.must(t, 200, e.do(t, "GET", "/v1/sessions/"+ses+"/events", e.alice, nil))
		metrics := scrape(t, e)

		logs := e.srv.Logs.String()
		if !strings.Contains(logs, `"route":"/v1/callback/{token}"`) {
			t.Fatalf("the callback requests were not logged:\n%s", logs)
		}
		for what, s := range map[string]string{
			"token": token, "token hash part": token[6:30], "secret": secret, "body": "body-marker", "signature": sig[7:],
		} {
			if strings.Contains(logs, s) {
				t.Errorf("the logs hold the %s", what)
			}
			if strings.Contains(metrics, s) {
				t.Errorf("the metrics hold the %s", what)
			}
			if what != "body" && strings.Contains(string(sesLog.raw), s) {
				t.Errorf("the session log holds the %s", what)
			}
		}
		if strings.Contains(string(sesLog.raw), "body-marker") {
			t.Error("the session log holds the body")
		}
	})
}

func TestHookInfoListsTheCapability(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	info := e.must(t, 200, e.do(t, "GET", "/v1/info", e.alice, nil))
	if !strings.Contains(fmt.Sprint(info.get("capabilities")), "hooks") {
		t.Errorf("info: %s", info.raw)
	}
}

// roundTrips is the Redis round trips requests made so far (the handshakes
// of new pool connections are counted apart, under "connect").
func roundTrips(s *apptest.Server) float64 {
	return testutil.ToFloat64(s.App.Metrics.RedisRoundTrips.WithLabelValues("requests"))
}

// Steady-state ingest is one Redis round trip, a read one, an ack one, a
// log read one; the first callback a replica sees for a hook pays two more
// to find it, and its first read one more to find the hook's task and
// session. A waiting read costs nothing while it waits.
func TestHookRoundTrips(t *testing.T) {
	t.Parallel()
	sc := storetest.Standalone(t)
	a := startEnv(t, sc, app.Config{})
	b := startEnv(t, sc, app.Config{})
	hook, token := a.hook(t, map[string]any{"sessionId": a.session(t)})
	measure := func(name string, e *hookEnv, want float64, call func()) {
		t.Helper()
		before := roundTrips(e.srv)
		call()
		if got := roundTrips(e.srv) - before; got != want {
			t.Errorf("%s took %v Redis round trips, want %v", name, got, want)
		}
	}
	measure("callback on the creating replica", a, 1, func() { a.must(t, 202, a.post(t, token, "1")) })
	measure("first callback on another replica", b, 3, func() { b.must(t, 202, b.post(t, token, "2")) })
	measure("next callback on it", b, 1, func() { b.must(t, 202, b.post(t, token, "3")) })
	measure("duplicate", b, 1, func() { b.must(t, 202, b.post(t, token, "3", "Webhook-Id", "w")) })
	measure("read", a, 1, func() { a.read(t, hook, "consumer=c") })
	measure("first read on another replica", b, 2, func() { b.read(t, hook, "consumer=c") })
	measure("next read on it", b, 1, func() { b.read(t, hook, "consumer=c") })
	measure("ack", a, 1, func() {
		a.must(t, 200, a.do(t, "POST", "/v1/hooks/"+hook+"/ack", a.alice, map[string]any{"eventIds": []string{"1-0"}}))
	})
	measure("log", a, 1, func() { a.logOf(t, hook) })
	measure("empty read waiting 300ms", a, 1, func() { a.read(t, hook, "consumer=c&wait=0.3") })
}

// A read waiting on one replica is woken by a callback taken by another.
func TestHookWakeAcrossReplicas(t *testing.T) {
	storetest.EachSharedBackend(t, func(t *testing.T, sc store.Config) {
		a := startEnv(t, sc, noRecheck)
		b := startEnv(t, sc, noRecheck)
		hook, token := a.hook(t, map[string]any{"sessionId": a.session(t)})
		a.read(t, hook, "consumer=c")
		before := roundTrips(a.srv)
		done := make(chan string, 1)
		go func() {
			req, _ := http.NewRequest("GET", a.srv.URL+"/v1/hooks/"+hook+"/events?consumer=c&wait=30s", nil)
			req.Header.Set("Authorization", "Bearer "+a.alice)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- err.Error()
				return
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			done <- string(body)
		}()
		storetest.WaitFor(t, "the reader to wait", func() bool { return strings.Contains(scrape(t, a), "taskhook_waiters 1") })
		b.must(t, 202, b.post(t, token, "from b"))
		// With no re-check within the wait, a read that was not woken sits
		// it out and answers with no event.
		if got := <-done; !strings.Contains(got, `"body":"from b"`) {
			t.Fatalf("woken read: %s", got)
		}
		if got := roundTrips(a.srv) - before; got != 2 {
			t.Errorf("the waiting read took %v round trips, want 2: one as it began, one when woken", got)
		}
	})
}

func TestHookClosesWhenItsSessionIsCancelled(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		ses := e.session(t)
		sesHook, sesToken := e.hook(t, map[string]any{"sessionId": ses})
		taskHook, taskToken := e.hook(t, map[string]any{"taskId": e.task(t, ses)})
		e.must(t, 200, e.do(t, "POST", "/v1/sessions/"+ses+"/cancel", e.alice, map[string]any{"reason": "done"}))
		for hook, c := range map[string]struct{ token, reason string }{
			sesHook:  {sesToken, "session_cancelled"},
			taskHook: {taskToken, "task_terminal"}, // its task was cancelled with the session
		} {
			g := e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+hook, e.alice, nil))
			if g.str("status") != "closed" || g.str("closeReason") != c.reason {
				t.Errorf("after cancel: %s, want closed (%s)", g.raw, c.reason)
			}
			late := e.post(t, c.token, "late")
			wantError(t, late, 410, "hook_closed")
			if late.str("error", "reason") != c.reason {
				t.Errorf("410 reason: %s, want %s", late.raw, c.reason)
			}
			if n := len(e.logOf(t, hook).list("events")); n != 0 {
				t.Errorf("%d events stored after the session was cancelled", n)
			}
		}
		// No new hook in a cancelled session.
		wantError(t, e.do(t, "POST", "/v1/hooks", e.alice, map[string]any{"sessionId": ses}), 409, "session_not_active")
	})
}

// noRecheck keeps a waiting read from re-reading on its own within its
// wait: only a wake-up (or its answer at once) ends it early.
var noRecheck = app.Config{RecheckInterval: time.Minute}

// readAtOnce reads a hook with a long wait through a client that gives up
// well before that wait: an answer means the read did not sit out its wait.
func (e *hookEnv) readAtOnce(t testing.TB, hook, query string) answer {
	t.Helper()
	a, err := e.readWaiting(hook, query)
	if err != nil {
		t.Fatalf("the read with wait=30s did not answer before its wait ran out: %v", err)
	}
	return e.must(t, 200, a)
}

// readWaiting is readAtOnce for another goroutine than the test's: it
// reports instead of failing the test.
func (e *hookEnv) readWaiting(hook, query string) (answer, error) {
	req, err := http.NewRequest("GET", e.srv.URL+"/v1/hooks/"+hook+"/events?wait=30s&"+query, nil)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+e.alice)
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: res.StatusCode, header: res.Header, raw: raw}
	_ = json.Unmarshal(raw, &a.body)
	return a, nil
}

// A closed hook's queue is drained as usual; once the group has nothing
// left, a read with a wait answers at once, saying the hook is closed.
func TestHookReadOfAClosedHookAnswersAtOnce(t *testing.T) {
	eachStore(t, noRecheck, func(t *testing.T, e *hookEnv) {
		task := e.task(t, e.session(t))
		hook, token := e.hook(t, map[string]any{"taskId": task})
		id := e.must(t, 202, e.post(t, token, "queued")).str("eventId")
		e.must(t, 200, e.do(t, "POST", "/v1/tasks/"+task+"/complete", e.alice, map[string]any{"result": "done"}))

		b := e.readAtOnce(t, hook, "consumer=a")
		if b.str("events", "0", "eventId") != id || b.get("pending") != float64(1) ||
			b.str("hookStatus") != "closed" || b.str("closeReason") != "task_terminal" {
			t.Fatalf("read of the closed hook: %s, want %s delivered", b.raw, id)
		}
		e.must(t, 200, e.do(t, "POST", "/v1/hooks/"+hook+"/ack", e.alice, map[string]any{"eventIds": []string{id}}))
		b = e.readAtOnce(t, hook, "consumer=a")
		if len(b.list("events")) != 0 || b.get("pending") != float64(0) ||
			b.str("hookStatus") != "closed" || b.str("closeReason") != "task_terminal" {
			t.Fatalf("drained read: %s", b.raw)
		}
		// Another group still gets everything the hook took.
		if b := e.readAtOnce(t, hook, "group=late"); b.str("events", "0", "eventId") != id || b.str("hookStatus") != "closed" {
			t.Fatalf("another group: %s", b.raw)
		}
	})
}

// A read waiting on an open hook that nobody posts to answers as soon as
// the hook closes: its task ends, its session is cancelled, its owner
// closes it.
func TestHookWaitingReadEndsWhenTheHookCloses(t *testing.T) {
	eachStore(t, noRecheck, func(t *testing.T, e *hookEnv) {
		for _, c := range []struct {
			name, reason string
			make         func(ses string) (hook string, close func())
		}{
			{"task completes", "task_terminal", func(ses string) (string, func()) {
				task := e.task(t, ses)
				hook, _ := e.hook(t, map[string]any{"taskId": task})
				return hook, func() {
					e.must(t, 200, e.do(t, "POST", "/v1/tasks/"+task+"/complete", e.alice, map[string]any{"result": "done"}))
				}
			}},
			{"session cancelled", "session_cancelled", func(ses string) (string, func()) {
				hook, _ := e.hook(t, map[string]any{"sessionId": ses})
				return hook, func() { e.must(t, 200, e.do(t, "POST", "/v1/sessions/"+ses+"/cancel", e.alice, map[string]any{})) }
			}},
			{"closed by its owner", "closed", func(ses string) (string, func()) {
				hook, _ := e.hook(t, map[string]any{"sessionId": ses})
				return hook, func() { e.must(t, 200, e.do(t, "POST", "/v1/hooks/"+hook+"/close", e.alice, nil)) }
			}},
		} {
			hook, closeIt := c.make(e.session(t))
			if b := e.read(t, hook, "consumer=a"); b.str("hookStatus") != "open" {
				t.Fatalf("%s: before: %s", c.name, b.raw)
			}
			got, failed := make(chan answer, 1), make(chan error, 1)
			go func() {
				if a, err := e.readWaiting(hook, "consumer=a"); err != nil {
					failed <- err
				} else {
					got <- a
				}
			}()
			storetest.WaitFor(t, "the reader to wait", func() bool {
				return strings.Contains(scrape(t, e), "taskhook_waiters 1")
			})
			closeIt()
			select {
			case b := <-got:
				if b.status != 200 || len(b.list("events")) != 0 || b.get("pending") != float64(0) ||
					b.str("hookStatus") != "closed" || b.str("closeReason") != c.reason {
					t.Fatalf("%s: the waiting read answered %d %s, want closed (%s)", c.name, b.status, b.raw, c.reason)
				}
			case err := <-failed:
				t.Fatalf("%s: the waiting read did not answer before its wait ran out: %v", c.name, err)
			}
		}
	})
}

// A read waiting on one replica hears of a close taken by another.
func TestHookCloseWakesReadsAcrossReplicas(t *testing.T) {
	storetest.EachSharedBackend(t, func(t *testing.T, sc store.Config) {
		a := startEnv(t, sc, noRecheck)
		b := startEnv(t, sc, noRecheck)
		hook, _ := a.hook(t, map[string]any{"sessionId": a.session(t)})
		a.read(t, hook, "consumer=c")
		got, failed := make(chan answer, 1), make(chan error, 1)
		go func() {
			if r, err := a.readWaiting(hook, "consumer=c"); err != nil {
				failed <- err
			} else {
				got <- r
			}
		}()
		storetest.WaitFor(t, "the reader to wait", func() bool { return strings.Contains(scrape(t, a), "taskhook_waiters 1") })
		b.must(t, 200, b.do(t, "POST", "/v1/hooks/"+hook+"/close", b.alice, nil))
		select {
		case r := <-got:
			if r.str("hookStatus") != "closed" || r.str("closeReason") != "closed" || len(r.list("events")) != 0 {
				t.Fatalf("woken read: %s", r.raw)
			}
		case err := <-failed:
			t.Fatalf("the waiting read was not woken before its wait ran out: %v", err)
		}
	})
}
