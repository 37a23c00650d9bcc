package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
)

type hook struct {
	HookID      string `json:"hookId"`
	Status      string `json:"status"`
	CloseReason string `json:"closeReason"`
	TaskID      string `json:"taskId"`
	Token       string `json:"token"`
	URL         string `json:"url"`
}

type accepted struct {
	EventID   string `json:"eventId"`
	Duplicate bool   `json:"duplicate"`
}

type hookEvent struct {
	EventID       string            `json:"eventId"`
	Seq           int64             `json:"seq"`
	Body          *string           `json:"body"`
	BodyBase64    *string           `json:"bodyBase64"`
	Headers       map[string]string `json:"headers"`
	DeliveryCount int64             `json:"deliveryCount"`
	Group         string            `json:"group"`
}

type hookBatch struct {
	Events      []hookEvent `json:"events"`
	Pending     int64       `json:"pending"`
	HookStatus  string      `json:"hookStatus"`
	CloseReason string      `json:"closeReason"`
}

type hookLog struct {
	Events          []hookEvent `json:"events"`
	Cursor          string      `json:"cursor"`
	DeadLetters     []hookEvent `json:"deadLetters"`
	DeadLetterCount int64       `json:"deadLetterCount"`
}

type hookPage struct {
	Items      []hook  `json:"items"`
	NextCursor *string `json:"nextCursor"`
}

// TestContractHooks drives the hook routes and the capability callback route
// over real HTTP, on the embedded store, through apitest.Transport.
func TestContractHooks(t *testing.T) {
	// A low rate with a burst of 10: a hook takes 10 posts at once, then 429.
	srv := apptest.Embedded(t, app.Config{HookMaxDeliveries: 2, HookRateLimit: 0.01, HookBurst: 10})
	alice := newCaller(t, srv.URL, apptest.Token(t, "alice"))
	bob := alice.as(apptest.Token(t, "bob"))
	anon := alice.as("")

	var ses struct{ SessionID string }
	alice.want(alice.do("POST", "/v1/sessions", nil), 201, "", &ses)
	var tk task
	alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 201, "", &tk)

	const secret = "s3cret"
	sign := func(body string) string {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(body))
		return hex.EncodeToString(mac.Sum(nil))
	}
	create := func(body map[string]any) hook {
		t.Helper()
		var h hook
		alice.want(alice.do("POST", "/v1/hooks", body), 201, "", &h)
		return h
	}
	callback := func(h hook) string { return "/v1/callback/" + h.Token }

	// The task's hook checks signatures and dedupes on X-Event-Id.
	var main hook
	t.Run("create", func(t *testing.T) {
		body := map[string]any{"taskId": tk.TaskID, "label": "ci", "dedupeHeader": "X-Event-Id",
			"verify": map[string]any{"scheme": "hmac-sha256", "secret": secret, "header": "X-Signature"}}
		r := alice.want(alice.do("POST", "/v1/hooks", body, "Idempotency-Key", "hook-1"), 201, "", &main)
		if loc := r.header.Get("Location"); loc != "/v1/hooks/"+main.HookID {
			t.Errorf("Location = %q", loc)
		}
		if main.Status != "open" || main.TaskID != tk.TaskID || !strings.HasPrefix(main.Token, "whk_") ||
			!strings.HasSuffix(main.URL, "/v1/callback/"+main.Token) {
			t.Fatalf("created: %+v", main)
		}
		var again hook
		r = alice.want(alice.do("POST", "/v1/hooks", body, "Idempotency-Key", "hook-1"), 201, "", &again)
		if r.header.Get("Idempotent-Replayed") != "true" || again.HookID != main.HookID || again.Token != "" || again.URL != "" {
			t.Errorf("replay: %s", r.body)
		}
		alice.want(alice.do("POST", "/v1/hooks", map[string]any{"taskId": tk.TaskID}, "Idempotency-Key", "hook-1"),
			409, "idempotency_conflict", nil)

		alice.want(alice.do("POST", "/v1/hooks", map[string]any{}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/hooks", `{"sessionId":`), 400, "invalid_json", nil)
		alice.want(alice.do("POST", "/v1/hooks", map[string]any{"sessionId": ses.SessionID, "nope": 1}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/hooks", map[string]any{"sessionId": ses.SessionID, "ttlMs": 10}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/hooks", map[string]any{"sessionId": ses.SessionID,
			"verify": map[string]any{"scheme": "md5", "secret": "x"}}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/hooks", map[string]any{"sessionId": ses.SessionID,
			"response": map[string]any{"status": 500}}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/hooks", map[string]any{"sessionId": ses.SessionID,
			"response": map[string]any{"status": 200, "body": "<p>hi</p>", "contentType": "text/html"}}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", "/v1/hooks", map[string]any{"sessionId": "ses_nope"}), 404, "not_found", nil)
		bob.want(bob.do("POST", "/v1/hooks", map[string]any{"taskId": tk.TaskID}), 404, "not_found", nil)
		anon.want(anon.do("POST", "/v1/hooks", map[string]any{"taskId": tk.TaskID}), 401, "unauthorized", nil)
		huge := `{"sessionId":"` + ses.SessionID + `","label":"` + strings.Repeat("a", 1<<20) + `"}`
		alice.want(alice.do("POST", "/v1/hooks", huge), 413, "payload_too_large", nil)
	})

	// Session hooks: static answers, a plain one, one to rate-limit, one to
	// dead-letter.
	static := create(map[string]any{"sessionId": ses.SessionID, "label": "static",
		"response": map[string]any{"status": 200, "body": "ok", "contentType": "text/plain"}})
	empty := create(map[string]any{"sessionId": ses.SessionID, "response": map[string]any{"status": 204}})
	plain := create(map[string]any{"sessionId": ses.SessionID, "ttlMs": 3_600_000})
	limited := create(map[string]any{"sessionId": ses.SessionID, "label": "rate"})
	poison := create(map[string]any{"sessionId": ses.SessionID, "label": "dlq",
		"verify": map[string]any{"scheme": "github", "secret": secret}})

	var first, second accepted
	t.Run("callback", func(t *testing.T) {
		body := `{"state":"running"}`
		anon.want(anon.do("POST", callback(main), body, "X-Signature", sign(body), "X-Event-Id", "job-1"), 202, "", &first)
		if first.Duplicate || first.EventID == "" {
			t.Errorf("first post: %+v", first)
		}
		var dup accepted
		anon.want(anon.do("POST", callback(main), body, "X-Signature", sign(body), "X-Event-Id", "job-1"), 202, "", &dup)
		if !dup.Duplicate || dup.EventID != first.EventID {
			t.Errorf("duplicate: %+v, want the first event %s", dup, first.EventID)
		}
		for name, headers := range map[string][]string{
			"wrong signature":   {"X-Signature", sign("other"), "X-Event-Id", "job-x"},
			"garbled signature": {"X-Signature", "zz", "X-Event-Id", "job-x"},
			"no signature":      {"X-Event-Id", "job-x"},
		} {
			r := anon.want(anon.do("POST", callback(main), body, headers...), 401, "signature_invalid", nil)
			if r.header.Get("WWW-Authenticate") != "" {
				t.Errorf("%s: a signature failure carries WWW-Authenticate %q", name, r.header.Get("WWW-Authenticate"))
			}
		}
		// A bearer token changes nothing on a capability route.
		next := `{"state":"done"}`
		alice.want(alice.do("POST", callback(main), next, "X-Signature", sign(next), "X-Event-Id", "job-2"), 202, "", &second)

		// Any body, any type (or none).
		binary := []byte{0xff, 0x00, 0xfe, 'x'}
		anon.want(anon.do("POST", callback(plain), binary, "Content-Type", "application/octet-stream"), 202, "", nil)
		anon.want(anon.do("POST", callback(plain), nil), 202, "", nil)
		var idem, idemAgain accepted
		anon.want(anon.do("POST", callback(plain), "a=1", "Content-Type", "application/x-www-form-urlencoded",
			"Idempotency-Key", "delivery-1"), 202, "", &idem)
		anon.want(anon.do("POST", callback(plain), "a=2", "Content-Type", "application/x-www-form-urlencoded",
			"Idempotency-Key", "delivery-1"), 202, "", &idemAgain)
		if !idemAgain.Duplicate || idemAgain.EventID != idem.EventID {
			t.Errorf("Idempotency-Key as a delivery id: %+v then %+v", idem, idemAgain)
		}

		// Static answers, for a stored post and for a duplicate alike.
		for range 2 {
			r := anon.want(anon.do("POST", callback(static), "x", "Content-Type", "text/plain", "Webhook-Id", "msg-1"), 200, "", nil)
			if string(r.body) != "ok" || r.header.Get("Content-Type") != "text/plain" ||
				r.header.Get("Content-Security-Policy") != "sandbox; default-src 'none'" || r.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("static answer: %q %v", r.body, r.header)
			}
		}
		anon.want(anon.do("POST", callback(empty), "x", "Content-Type", "text/plain"), 204, "", nil)

		// Unknown tokens, and a well-formed one off by a character.
		flipped := main.Token[:len(main.Token)-1] + map[bool]string{true: "B", false: "A"}[strings.HasSuffix(main.Token, "A")]
		for _, tok := range []string{flipped, "whk_nope", main.Token[:20]} {
			anon.want(anon.do("POST", "/v1/callback/"+tok, "x"), 404, "not_found", nil)
		}
		anon.want(anon.do("GET", callback(plain), nil), 405, "method_not_allowed", nil)
		anon.want(anon.do("POST", callback(plain), strings.Repeat("x", 1<<20+1), "Content-Type", "text/plain"),
			413, "payload_too_large", nil)

		for i := range 10 {
			anon.want(anon.do("POST", callback(limited), strconv.Itoa(i)), 202, "", nil)
		}
		r := anon.want(anon.do("POST", callback(limited), "one too many"), 429, "rate_limited", nil)
		if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
		}
	})

	hookPath := "/v1/hooks/" + main.HookID
	t.Run("read and ack", func(t *testing.T) {
		var b hookBatch
		alice.want(alice.do("GET", hookPath+"/events?consumer=w1&count=10&visibilityMs=60000", nil), 200, "", &b)
		if len(b.Events) != 2 || b.Events[0].EventID != first.EventID || b.Events[1].EventID != second.EventID ||
			b.Events[0].DeliveryCount != 1 || b.Pending != 2 || b.HookStatus != "open" || b.CloseReason != "" {
			t.Fatalf("first batch: %+v", b)
		}
		if ev := b.Events[0]; ev.Body == nil || *ev.Body != `{"state":"running"}` || ev.Seq != 1 ||
			ev.Headers["x-event-id"] != "job-1" || ev.Headers["x-signature"] != "" {
			t.Errorf("stored event: %+v", ev)
		}
		// Both are invisible to the group now; another group reads on its own.
		alice.want(alice.do("GET", hookPath+"/events?consumer=w2&wait=50ms", nil), 200, "", &b)
		if len(b.Events) != 0 {
			t.Errorf("delivered twice within the visibility: %+v", b.Events)
		}
		alice.want(alice.do("GET", hookPath+"/events?group=audit&count=1", nil), 200, "", &b)
		if len(b.Events) != 1 || b.Events[0].EventID != first.EventID {
			t.Errorf("a new group starts at the first event: %+v", b.Events)
		}
		for _, q := range []string{"count=0", "count=101", "visibilityMs=0", "visibilityMs=x", "group=a%20b",
			"consumer=" + strings.Repeat("c", 65), "wait=-1s"} {
			alice.want(alice.do("GET", hookPath+"/events?"+q, nil), 400, "invalid_request", nil)
		}
		bob.want(bob.do("GET", hookPath+"/events", nil), 404, "not_found", nil)
		alice.want(alice.do("GET", "/v1/hooks/hook_nope/events", nil), 404, "not_found", nil)

		var acked struct{ Acked int }
		ack := map[string]any{"eventIds": []string{first.EventID}}
		alice.want(alice.do("POST", hookPath+"/ack", ack, "Idempotency-Key", "ack-1"), 200, "", &acked)
		if acked.Acked != 1 {
			t.Errorf("acked %d", acked.Acked)
		}
		r := alice.want(alice.do("POST", hookPath+"/ack", ack, "Idempotency-Key", "ack-1"), 200, "", nil)
		if r.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("ack replay not marked")
		}
		alice.want(alice.do("POST", hookPath+"/ack", map[string]any{"eventIds": []string{second.EventID}}, "Idempotency-Key", "ack-1"),
			409, "idempotency_conflict", nil)
		alice.want(alice.do("POST", hookPath+"/ack", ack), 200, "", &acked)
		if acked.Acked != 0 {
			t.Errorf("a repeated ack acked %d", acked.Acked)
		}
		alice.want(alice.do("POST", hookPath+"/ack", map[string]any{"group": "audit", "eventIds": []string{first.EventID, second.EventID}}),
			200, "", &acked)
		if acked.Acked != 1 {
			t.Errorf("audit acked %d, want the one it read", acked.Acked)
		}
		alice.want(alice.do("POST", hookPath+"/ack", map[string]any{}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", hookPath+"/ack", map[string]any{"eventIds": []string{"x"}}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", hookPath+"/ack", map[string]any{"eventIds": []string{"1-0"}, "group": "!"}), 400, "invalid_request", nil)
		bob.want(bob.do("POST", hookPath+"/ack", ack), 404, "not_found", nil)
	})

	t.Run("dead letters", func(t *testing.T) {
		path := "/v1/hooks/" + poison.HookID
		sig := func(body string) string { return "sha256=" + sign(body) }
		var got accepted
		anon.want(anon.do("POST", callback(poison), "poison", "X-Hub-Signature-256", sig("poison"), "X-GitHub-Delivery", "d-1"), 202, "", &got)
		var b hookBatch
		alice.want(alice.do("GET", path+"/events?consumer=a&visibilityMs=1", nil), 200, "", &b)
		if len(b.Events) != 1 || b.Events[0].DeliveryCount != 1 {
			t.Fatalf("first delivery: %+v", b)
		}
		// Not acked: delivered again once the visibility runs out.
		alice.want(alice.do("GET", path+"/events?consumer=a&visibilityMs=1&wait=10s", nil), 200, "", &b)
		if len(b.Events) != 1 || b.Events[0].DeliveryCount != 2 {
			t.Fatalf("second delivery: %+v", b)
		}
		// A third would pass the maximum (2): it moves to the dead letters.
		alice.want(alice.do("GET", path+"/events?consumer=b&visibilityMs=1&wait=300ms", nil), 200, "", &b)
		if len(b.Events) != 0 {
			t.Fatalf("delivered past the maximum: %+v", b)
		}
		var l hookLog
		alice.want(alice.do("GET", path+"/log", nil), 200, "", &l)
		if l.DeadLetterCount != 1 || len(l.DeadLetters) != 1 || l.DeadLetters[0].EventID != got.EventID ||
			l.DeadLetters[0].DeliveryCount != 2 || l.DeadLetters[0].Group != "default" || len(l.Events) != 1 {
			t.Errorf("log: %+v", l)
		}
	})

	t.Run("log", func(t *testing.T) {
		var l hookLog
		alice.want(alice.do("GET", hookPath+"/log", nil), 200, "", &l)
		if len(l.Events) != 2 || l.Cursor != second.EventID || l.DeadLetterCount != 0 || len(l.DeadLetters) != 0 {
			t.Errorf("log: %+v", l)
		}
		alice.want(alice.do("GET", hookPath+"/log?limit=1", nil), 200, "", &l)
		if len(l.Events) != 1 || l.Cursor != first.EventID {
			t.Errorf("first page: %+v", l)
		}
		alice.want(alice.do("GET", hookPath+"/log?limit=100&after="+l.Cursor, nil), 200, "", &l)
		if len(l.Events) != 1 || l.Events[0].EventID != second.EventID {
			t.Errorf("second page: %+v", l)
		}
		alice.want(alice.do("GET", hookPath+"/log?after="+l.Cursor, nil), 200, "", &l)
		if len(l.Events) != 0 || l.Cursor != second.EventID {
			t.Errorf("past the end: %+v", l)
		}
		var pl hookLog
		alice.want(alice.do("GET", "/v1/hooks/"+plain.HookID+"/log", nil), 200, "", &pl)
		if len(pl.Events) != 3 || pl.Events[0].BodyBase64 == nil ||
			*pl.Events[0].BodyBase64 != base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0xfe, 'x'}) ||
			pl.Events[1].Body == nil || *pl.Events[1].Body != "" {
			t.Errorf("plain hook log: %+v", pl)
		}
		alice.want(alice.do("GET", hookPath+"/log?after=nope", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", hookPath+"/log?limit=101", nil), 400, "invalid_request", nil)
		bob.want(bob.do("GET", hookPath+"/log", nil), 404, "not_found", nil)
	})

	t.Run("list and get", func(t *testing.T) {
		var h hook
		alice.want(alice.do("GET", hookPath, nil), 200, "", &h)
		if h.HookID != main.HookID || h.Status != "open" || h.Token != "" {
			t.Errorf("get: %+v", h)
		}
		bob.want(bob.do("GET", hookPath, nil), 404, "not_found", nil)
		alice.want(alice.do("GET", "/v1/hooks/hook_nope", nil), 404, "not_found", nil)

		var page hookPage
		alice.want(alice.do("GET", "/v1/hooks", nil), 200, "", &page)
		if len(page.Items) != 6 || page.NextCursor != nil {
			t.Errorf("list: %d items, first %+v", len(page.Items), page.Items)
		}
		alice.wantTwoPages("/v1/hooks?limit=4", 4, "/v1/hooks?limit=4&cursor=", 2)
		alice.want(alice.do("GET", "/v1/hooks?taskId="+tk.TaskID, nil), 200, "", &page)
		if len(page.Items) != 1 || page.Items[0].HookID != main.HookID {
			t.Errorf("by task: %+v", page.Items)
		}
		alice.want(alice.do("GET", "/v1/hooks?sessionId="+ses.SessionID, nil), 200, "", &page)
		if len(page.Items) != 6 {
			t.Errorf("by session: %d items", len(page.Items))
		}
		alice.want(alice.do("GET", "/v1/hooks?taskId=task_nope", nil), 200, "", &page)
		if len(page.Items) != 0 {
			t.Errorf("a malformed task id lists %d", len(page.Items))
		}
		bob.want(bob.do("GET", "/v1/hooks?sessionId="+ses.SessionID, nil), 200, "", &page)
		if len(page.Items) != 0 {
			t.Errorf("bob lists %d of alice's hooks", len(page.Items))
		}
		alice.want(alice.do("GET", "/v1/hooks?limit=0", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", "/v1/hooks?cursor=%21%21", nil), 400, "invalid_request", nil)
	})

	t.Run("hook.received", func(t *testing.T) {
		var log struct {
			Events []struct {
				Type   string `json:"type"`
				TaskID string `json:"taskId"`
				Data   struct {
					HookID  string `json:"hookId"`
					EventID string `json:"eventId"`
				} `json:"data"`
			} `json:"events"`
		}
		alice.want(alice.do("GET", "/v1/sessions/"+ses.SessionID+"/events?limit=1000", nil), 200, "", &log)
		byHook := map[string]int{}
		for _, e := range log.Events {
			if e.Type != "hook.received" {
				continue
			}
			byHook[e.Data.HookID]++
			if (e.Data.HookID == main.HookID) != (e.TaskID == tk.TaskID) {
				t.Errorf("hook.received of %s has taskId %q", e.Data.HookID, e.TaskID)
			}
		}
		// One per stored post: duplicates and refusals append nothing.
		for h, want := range map[string]int{main.HookID: 2, plain.HookID: 3, static.HookID: 1, limited.HookID: 10} {
			if byHook[h] != want {
				t.Errorf("%d hook.received for %s, want %d", byHook[h], h, want)
			}
		}
	})

	t.Run("close", func(t *testing.T) {
		path := "/v1/hooks/" + plain.HookID + "/close"
		alice.want(alice.do("POST", path, map[string]any{"now": true}), 400, "invalid_request", nil)
		bob.want(bob.do("POST", path, nil), 404, "not_found", nil)
		var closed hook
		alice.want(alice.do("POST", path, nil, "Idempotency-Key", "close-1"), 200, "", &closed)
		if closed.Status != "closed" || closed.CloseReason != "closed" {
			t.Errorf("closed: %+v", closed)
		}
		r := alice.want(alice.do("POST", path, nil, "Idempotency-Key", "close-1"), 200, "", nil)
		if r.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("close replay not marked")
		}
		alice.want(alice.do("POST", path, `{}`), 200, "", &closed)
		if closed.Status != "closed" {
			t.Errorf("closed twice: %+v", closed)
		}
		r = anon.want(anon.do("POST", callback(plain), "late"), 410, "hook_closed", nil)
		var e struct{ Error struct{ Reason string } }
		if json.Unmarshal(r.body, &e) != nil || e.Error.Reason != "closed" {
			t.Errorf("410: %s", r.body)
		}
		// What it holds stays readable, and the batch says it is closed.
		var b hookBatch
		alice.want(alice.do("GET", "/v1/hooks/"+plain.HookID+"/events", nil), 200, "", &b)
		if len(b.Events) != 3 || b.HookStatus != "closed" || b.CloseReason != "closed" {
			t.Errorf("read of the closed hook: %+v", b)
		}
	})

	t.Run("task ends", func(t *testing.T) {
		alice.want(alice.do("POST", "/v1/tasks/"+tk.TaskID+"/complete", nil), 200, "", nil)
		body := `{"state":"late"}`
		r := anon.want(anon.do("POST", callback(main), body, "X-Signature", sign(body), "X-Event-Id", "job-3"), 410, "hook_closed", nil)
		var e struct{ Error struct{ Reason string } }
		if json.Unmarshal(r.body, &e) != nil || e.Error.Reason != "task_terminal" {
			t.Errorf("410: %s", r.body)
		}
		var h hook
		alice.want(alice.do("GET", hookPath, nil), 200, "", &h)
		if h.Status != "closed" || h.CloseReason != "task_terminal" {
			t.Errorf("after the task ended: %+v", h)
		}
		alice.want(alice.do("POST", "/v1/hooks", map[string]any{"taskId": tk.TaskID}), 409, "task_terminal", nil)

		// A group drains it as usual; then a read with a wait answers at once.
		var b hookBatch
		alice.want(alice.do("GET", hookPath+"/events?group=after", nil), 200, "", &b)
		if len(b.Events) != 2 || b.HookStatus != "closed" || b.CloseReason != "task_terminal" {
			t.Fatalf("read after the task ended: %+v", b)
		}
		alice.want(alice.do("POST", hookPath+"/ack", map[string]any{"group": "after",
			"eventIds": []string{b.Events[0].EventID, b.Events[1].EventID}}), 200, "", nil)
		alice.want(alice.do("GET", hookPath+"/events?group=after&wait=30s", nil), 200, "", &b)
		if len(b.Events) != 0 || b.Pending != 0 || b.HookStatus != "closed" || b.CloseReason != "task_terminal" {
			t.Errorf("drained read: %+v", b)
		}
	})
}
