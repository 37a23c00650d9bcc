package handlers_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/jsonpath"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// Black-box tests of the hook routes: a real server per store backend,
// driven through the Go client as an executor and an outside system would.
// Raw HTTP is kept where a test is about the wire itself: malformed bodies
// and queries, signature headers, the exact body of a refusal, and what the
// client does not show (the reason a 410 gives, the JSON a stored body
// reads as, the fields an answer must not carry).

type hookEnv struct {
	srv    *apptest.Server
	alice  string // bearer tokens, for raw requests
	bob    string
	api    *client.Client // alice's
	bobAPI *client.Client
	sender *client.Client // an outside system: no token, posts to callback URLs
}

func eachStore(t *testing.T, cfg app.Config, fn func(t *testing.T, e *hookEnv)) {
	t.Helper()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) { fn(t, startEnv(t, sc, cfg)) })
}

// eachReplicaPair runs fn with two replicas of each shared store, neither
// re-checking within a wait: a waiting read on one answers early only when
// the other wakes it.
func eachReplicaPair(t *testing.T, fn func(t *testing.T, a, b *hookEnv)) {
	t.Helper()
	storetest.EachSharedBackend(t, func(t *testing.T, sc store.Config) {
		fn(t, startEnv(t, sc, noRecheck), startEnv(t, sc, noRecheck))
	})
}

func startEnv(t testing.TB, sc store.Config, cfg app.Config) *hookEnv {
	if cfg.WakeBlock == 0 {
		cfg.WakeBlock = 500 * time.Millisecond // Stop waits for the fan-in readers' blocking read
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "https://hooks.example.test"
	}
	return envOf(t, apptest.Start(t, sc, cfg))
}

// envOf drives a running server: one started here, or a process a test
// runs (a Server with a URL alone).
func envOf(t testing.TB, srv *apptest.Server) *hookEnv {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	e := &hookEnv{srv: srv, alice: apptest.Token(t, "alice"), bob: apptest.Token(t, "bob")}
	e.api = client.New(srv.URL, e.alice, client.WithHTTPClient(hc))
	e.bobAPI = e.api.WithToken(e.bob)
	e.sender = client.New("", "", client.WithHTTPClient(hc))
	return e
}

// Raw HTTP.

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
	return jsonpath.At(a.body, strings.Join(path, "."))
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
	res, raw := apptest.Fetch(t, http.DefaultClient, req)
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

// wantClosed posts to a closed hook and checks the 410 says why; the
// reason is in the error body, which the client does not show.
func (e *hookEnv) wantClosed(t testing.TB, token, reason string, headers ...string) {
	t.Helper()
	late := e.post(t, token, `{"state":"late"}`, headers...)
	wantError(t, late, 410, "hook_closed")
	if late.str("error", "reason") != reason {
		t.Errorf("410 reason: %s, want %s", late.raw, reason)
	}
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

// Through the client.

func (e *hookEnv) session(t testing.TB) string {
	t.Helper()
	ses, err := e.api.CreateSession(t.Context(), client.CreateSessionInput{})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	return ses.SessionID
}

func (e *hookEnv) task(t testing.TB, session string) string {
	t.Helper()
	task, err := e.api.CreateTask(t.Context(), client.CreateTaskInput{SessionID: session})
	if err != nil {
		t.Fatalf("create task: %v", err)
	}
	return task.TaskID
}

// hook creates a hook and returns its id and token.
func (e *hookEnv) hook(t testing.TB, in client.CreateHookInput) (string, string) {
	t.Helper()
	h, err := e.api.CreateHook(t.Context(), in)
	if err != nil {
		t.Fatalf("create hook: %v", err)
	}
	return h.HookID, h.Token
}

func (e *hookEnv) getHook(t testing.TB, hook string) *client.Hook {
	t.Helper()
	h, err := e.api.GetHook(t.Context(), hook)
	if err != nil {
		t.Fatalf("get hook: %v", err)
	}
	return h
}

// callback is a token's callback URL on the test server: the URL a hook
// shows starts with the public URL, where nothing listens.
func (e *hookEnv) callback(token string) string { return e.srv.URL + "/v1/callback/" + token }

// trySend posts body to the hook as an outside system does, with the given
// header pairs (a JSON Content-Type when none are given).
func (e *hookEnv) trySend(t testing.TB, token, body string, headers ...string) (*client.PostResult, error) {
	t.Helper()
	if len(headers) == 0 {
		headers = []string{"Content-Type", "application/json"}
	}
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	return e.sender.Post(t.Context(), e.callback(token), []byte(body), h)
}

// send is trySend of a post the hook must store: a 202 with a new event.
func (e *hookEnv) send(t testing.TB, token, body string, headers ...string) *client.PostResult {
	t.Helper()
	res, err := e.trySend(t, token, body, headers...)
	if err != nil {
		t.Fatalf("post %q: %v", body, err)
	}
	if res.Status != http.StatusAccepted || res.EventID == "" || res.Duplicate {
		t.Fatalf("post %q: %d %s", body, res.Status, res.Body)
	}
	return res
}

func (e *hookEnv) readHook(t testing.TB, hook string, p client.HookReadParams) *client.HookBatch {
	t.Helper()
	b, err := e.api.ReadHook(t.Context(), hook, p)
	if err != nil {
		t.Fatalf("read hook: %v", err)
	}
	return b
}

func (e *hookEnv) hookLog(t testing.TB, hook string) *client.HookLogPage {
	t.Helper()
	page, err := e.api.HookLog(t.Context(), hook, "", 0)
	if err != nil {
		t.Fatalf("hook log: %v", err)
	}
	return page
}

func (e *hookEnv) ack(t testing.TB, hook string, ids ...string) int {
	t.Helper()
	n, err := e.api.AckHook(t.Context(), hook, "", ids)
	if err != nil {
		t.Fatalf("ack: %v", err)
	}
	return n
}

// wantCode checks err is an answer of the server with the status and code.
func wantCode(t testing.TB, err error, status int, code string) *client.Error {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != status || ce.Code != code {
		t.Fatalf("got %v, want %d %s", err, status, code)
	}
	return ce
}

// only is the one event of a batch.
func only(t testing.TB, what string, b *client.HookBatch) client.HookEvent {
	t.Helper()
	if len(b.Events) != 1 {
		t.Fatalf("%s: %d events, want 1: %+v", what, len(b.Events), b)
	}
	return b.Events[0]
}

// awaitWaiting waits until the server holds one waiting read: a post made
// after that reaches the read only by waking it.
func (e *hookEnv) awaitWaiting(t testing.TB) {
	t.Helper()
	storetest.WaitFor(t, "the read to wait", func() bool { return testutil.ToFloat64(e.srv.App.Metrics.Waiters) == 1 })
}

// longWait is the wait of reads that something must end early.
const longWait = 30 * time.Second

type readAnswer struct {
	b   *client.HookBatch
	err error
}

// readWokenBy starts a read with a wait of longWait and, once the server
// holds it waiting, calls wake; it returns the read's answer. What wake does
// comes after the read waits: done before, the read would find it at once,
// and the test would not see a wake-up.
func (e *hookEnv) readWokenBy(t testing.TB, hook string, p client.HookReadParams, wake func()) readAnswer {
	t.Helper()
	got := make(chan readAnswer, 1)
	p.Wait = longWait
	go func() {
		b, err := e.api.ReadHook(t.Context(), hook, p)
		got <- readAnswer{b, err}
	}()
	e.awaitWaiting(t)
	wake()
	return <-got
}

// wantWokenWith checks a woken read answered with one event, of the body.
func wantWokenWith(t testing.TB, what string, r readAnswer, body string) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: %v", what, r.err)
	}
	if ev := only(t, what, r.b); ev.Body != body {
		t.Fatalf("%s: %+v", what, ev)
	}
}

// readAtOnce reads with a wait of longWait through a context that ends well
// before it: an answer means the read did not sit out its wait.
func (e *hookEnv) readAtOnce(t testing.TB, hook string, p client.HookReadParams) *client.HookBatch {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), longWait*2/3)
	defer cancel()
	p.Wait = longWait
	b, err := e.api.ReadHook(ctx, hook, p)
	if err != nil {
		t.Fatalf("the read with a wait of %v did not answer before its wait ran out: %v", longWait, err)
	}
	return b
}

// noRecheck keeps a waiting read from re-reading on its own within its
// wait: only a wake-up, a visibility or TTL running out (or its answer at
// once) ends it early. A read that sits its wait out answers with what its
// last read found.
var noRecheck = app.Config{RecheckInterval: time.Minute}

func TestHookLifecycle(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		ctx := t.Context()
		ses := e.session(t)
		task := e.task(t, ses)

		var meta client.Response
		created, err := e.api.CreateHook(ctx, client.CreateHookInput{TaskID: task, Label: "ci"}, client.WithResponse(&meta))
		if err != nil {
			t.Fatal(err)
		}
		hook, token := created.HookID, created.Token
		if !strings.HasPrefix(hook, "hook_") || !strings.HasPrefix(token, "whk_") || len(token) != 49 {
			t.Fatalf("create: %+v", created)
		}
		if created.URL != "https://hooks.example.test/v1/callback/"+token || created.Status != client.HookOpen ||
			created.SessionID != ses || created.TaskID != task || meta.Status != 201 || meta.Header.Get("Location") != "/v1/hooks/"+hook {
			t.Fatalf("create: %+v %d %v", created, meta.Status, meta.Header)
		}
		if created.ExpiresAt.IsZero() || created.TTLMs <= 0 {
			t.Errorf("create without expiry: %+v", created)
		}

		got := e.getHook(t, hook)
		if got.Status != client.HookOpen || got.Label != "ci" || got.HookID != hook || got.TaskID != task {
			t.Fatalf("get: %+v", got)
		}
		// The wire: a read of the hook never carries its token or URL.
		if raw := e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+hook, e.alice, nil)); raw.get("token") != nil || raw.get("url") != nil ||
			strings.Contains(string(raw.raw), token) {
			t.Fatalf("get shows the token: %s", raw.raw)
		}
		for _, p := range []client.ListHooksParams{{}, {TaskID: task}, {SessionID: ses}} {
			l, err := e.api.ListHooks(ctx, p)
			if err != nil || len(l.Items) != 1 || l.Items[0].HookID != hook {
				t.Errorf("list %+v: %+v %v", p, l, err)
			}
		}

		acc := e.send(t, token, `{"state":"running"}`, "Content-Type", "application/json", "X-GitHub-Event", "push",
			"Authorization", "Bearer sender-credential", "Cookie", "c=1")
		var ack map[string]any
		if err := json.Unmarshal(acc.Body, &ack); err != nil || ack["ok"] != true || ack["duplicate"] != false || ack["eventId"] != acc.EventID {
			t.Fatalf("callback: %s", acc.Body)
		}
		batch := e.readHook(t, hook, client.HookReadParams{Consumer: "c1"})
		ev := only(t, "read", batch)
		if batch.Group != "default" || batch.Consumer != "c1" || batch.Pending != 1 || batch.HookStatus != client.HookOpen || batch.CloseReason != "" {
			t.Fatalf("read: %+v", batch)
		}
		if ev.EventID != acc.EventID || ev.Seq != 1 || ev.Body != `{"state":"running"}` || ev.DeliveryCount != 1 ||
			ev.Method != "POST" || ev.ContentType != "application/json" || ev.HookID != hook || ev.ReceivedAt.IsZero() {
			t.Fatalf("event: %+v", ev)
		}
		if ev.Headers["x-github-event"] != "push" {
			t.Errorf("headers: %v", ev.Headers)
		}
		for _, h := range []string{"authorization", "cookie"} {
			if _, ok := ev.Headers[h]; ok {
				t.Errorf("the event keeps the %s header: %v", h, ev.Headers)
			}
		}
		if n := e.ack(t, hook, acc.EventID); n != 1 {
			t.Fatalf("ack: %d", n)
		}
		if again := e.readHook(t, hook, client.HookReadParams{Consumer: "c1", Visibility: time.Millisecond}); len(again.Events) != 0 || again.Pending != 0 {
			t.Fatalf("read after ack: %+v", again)
		}

		// The session hears of it, without the body.
		sesLog, err := e.api.SessionEvents(ctx, ses, client.EventsParams{})
		if err != nil {
			t.Fatal(err)
		}
		var received *client.Event
		for i, x := range sesLog.Events {
			if x.Type == "hook.received" {
				received = &sesLog.Events[i]
			}
		}
		if received == nil || received.TaskID != task {
			t.Fatalf("no hook.received of the task in %+v", sesLog.Events)
		}
		var data map[string]any
		if err := json.Unmarshal(received.Data, &data); err != nil {
			t.Fatal(err)
		}
		if data["hookId"] != hook || data["eventId"] != acc.EventID || data["seq"] != float64(1) || data["method"] != "POST" ||
			data["contentType"] != "application/json" || len(data) != 5 {
			t.Errorf("hook.received data: %v", data)
		}

		closed, err := e.api.CloseHook(ctx, hook)
		if err != nil || closed.Status != client.HookClosed || closed.CloseReason != client.CloseReasonClosed || closed.ClosedAt == nil {
			t.Fatalf("close: %+v %v", closed, err)
		}
		again, err := e.api.CloseHook(ctx, hook)
		if err != nil || !reflect.DeepEqual(again, closed) {
			t.Errorf("second close %+v %v, first %+v", again, err, closed)
		}
		e.wantClosed(t, token, "closed")
		log := e.hookLog(t, hook)
		if len(log.Events) != 1 || log.Cursor != acc.EventID || len(log.DeadLetters) != 0 || log.DeadLetterCount != 0 {
			t.Fatalf("log: %+v", log)
		}
	})
}

func TestHookCreateReplayLeavesTheTokenOut(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	ctx := t.Context()
	in := client.CreateHookInput{SessionID: e.session(t)}
	var firstMeta, againMeta client.Response
	first, err := e.api.CreateHook(ctx, in, client.WithIdempotencyKey("k1"), client.WithResponse(&firstMeta))
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.api.CreateHook(ctx, in, client.WithIdempotencyKey("k1"), client.WithResponse(&againMeta))
	if err != nil || firstMeta.Status != 201 || againMeta.Status != 201 || firstMeta.Replayed || !againMeta.Replayed || again.HookID != first.HookID {
		t.Fatalf("replay: %+v %+v %v", again, againMeta, err)
	}
	if first.Token == "" || first.URL == "" || again.Token != "" || again.URL != "" {
		t.Fatalf("the token is shown once: first %+v, replay %+v", first, again)
	}
	in.Label = "x"
	_, err = e.api.CreateHook(ctx, in, client.WithIdempotencyKey("k1"))
	wantCode(t, err, 409, client.CodeIdempotencyConflict)
}

// Bodies no client sends: malformed or with fields the contract refuses.
func TestHookCreateRefusals(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	ctx := t.Context()
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
		"unknown task":      {`{"taskId":"` + ids.New(ids.TaskPrefix, 0) + `"}`, 404, "not_found", ""},
	} {
		a := e.do(t, "POST", "/v1/hooks", e.alice, c.body)
		if a.status != c.status || a.str("error", "code") != c.code || (c.field != "" && a.str("error", "details", "0", "field") != c.field) {
			t.Errorf("%s: %d %s, want %d %s on %s", name, a.status, a.raw, c.status, c.code, c.field)
		}
	}
	// Somebody else's session and task do not exist.
	_, err := e.bobAPI.CreateHook(ctx, client.CreateHookInput{SessionID: ses})
	wantCode(t, err, 404, client.CodeNotFound)
	_, err = e.bobAPI.CreateHook(ctx, client.CreateHookInput{TaskID: task})
	wantCode(t, err, 404, client.CodeNotFound)
	// A finished task takes no hook.
	if _, err := e.api.Complete(ctx, task, 1); err != nil {
		t.Fatal(err)
	}
	_, err = e.api.CreateHook(ctx, client.CreateHookInput{TaskID: task})
	wantCode(t, err, 409, client.CodeTaskTerminal)
}

// A ttlMs above the maximum is capped, however large: a value whose
// nanoseconds overflow an int64 once made a hook that was closed (and its
// keys gone) the moment it was created.
func TestHookTTLAboveTheMaximumIsCapped(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	ctx := t.Context()
	ses := e.session(t)
	tk, err := e.api.CreateTask(ctx, client.CreateTaskInput{SessionID: ses})
	if err != nil || tk.TTLMs == nil {
		t.Fatalf("task: %+v %v", tk, err)
	}
	for name, c := range map[string]struct {
		in  client.CreateHookInput
		max int64
	}{
		"session hook": {client.CreateHookInput{SessionID: ses, TTLMs: client.Int64(1e13)}, (30 * 24 * time.Hour).Milliseconds()},
		"task hook":    {client.CreateHookInput{TaskID: tk.TaskID, TTLMs: client.Int64(1e13)}, *tk.TTLMs},
	} {
		h, err := e.api.CreateHook(ctx, c.in)
		if err != nil || h.Status != client.HookOpen || h.TTLMs <= 0 || h.TTLMs > c.max {
			t.Errorf("%s: %+v %v, want an open hook with ttlMs in (0, %v]", name, h, err, c.max)
			continue
		}
		e.send(t, h.Token, "x")
		if g := e.getHook(t, h.HookID); g.Status != client.HookOpen {
			t.Errorf("%s: %+v", name, g)
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
	for _, in := range []client.CreateHookInput{
		{SessionID: ses, DedupeHeader: "authorization"},
		{SessionID: ses, DedupeHeader: "Cookie"},
		{SessionID: ses, DedupeHeader: "X-Hub-Signature-256"},
		{SessionID: ses, DedupeHeader: "X-My-Sig", Verify: &client.HookVerify{Scheme: client.VerifyHMACSHA256, Secret: "s", Header: "x-my-sig"}},
	} {
		h, err := e.api.CreateHook(t.Context(), in)
		if err == nil && in.Verify == nil {
			e.send(t, h.Token, "x", "Content-Type", "text/plain", in.DedupeHeader, credential)
			if l, _ := json.Marshal(e.hookLog(t, h.HookID)); strings.Contains(string(l), "sender-credential") {
				t.Errorf("dedupeHeader %s: the credential is stored: %s", in.DedupeHeader, l)
			}
		}
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != 400 || len(ce.Details) == 0 || ce.Details[0].Field != "dedupeHeader" {
			t.Errorf("dedupeHeader %s: %v, want 400 on dedupeHeader", in.DedupeHeader, err)
		}
	}
}

// Somebody else's hook does not exist for them: the same 404 body as a hook
// that does not exist at all.
func TestHookOwnership(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	ctx := t.Context()
	hook, token := e.hook(t, client.CreateHookInput{SessionID: e.session(t)})
	e.send(t, token, "x")
	missing := e.do(t, "GET", "/v1/hooks/"+ids.New(ids.HookPrefix, 1), e.alice, nil)
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
	_, err := e.bobAPI.AckHook(ctx, hook, "", []string{"1-0"})
	wantCode(t, err, 404, client.CodeNotFound)
	if l, err := e.bobAPI.ListHooks(ctx, client.ListHooksParams{}); err != nil || len(l.Items) != 0 {
		t.Errorf("bob's list: %+v %v", l, err)
	}
	// No JWT on the hook routes is a 401; the callback route needs none.
	wantError(t, e.do(t, "GET", "/v1/hooks/"+hook, "", nil), 401, "unauthorized")
	// The hook is still open and its event unread.
	if g := e.getHook(t, hook); g.Status != client.HookOpen {
		t.Errorf("after bob: %+v", g)
	}
	if b := e.readHook(t, hook, client.HookReadParams{}); len(b.Events) != 1 || b.Events[0].DeliveryCount != 1 {
		t.Errorf("after bob, the event: %+v", b)
	}
	if _, err := e.api.WithToken(apptest.Token(t, "root", "admin")).GetHook(ctx, hook); err != nil {
		t.Errorf("an admin's get: %v", err)
	}
}

// signer signs a request body for one verify scheme.
type signer struct {
	verify client.HookVerify
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
			verify: client.HookVerify{Scheme: client.VerifyStandardWebhooks, Secret: swSecret},
			sign: func(body, secret string) []string {
				key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
				id, ts := "msg_"+strconv.FormatInt(time.Now().UnixNano(), 36), strconv.FormatInt(time.Now().Unix(), 10)
				return []string{"Webhook-Id", id, "Webhook-Timestamp", ts, "Webhook-Signature", "v1," + hmacB64(key, id+"."+ts+"."+body)}
			},
			wrong: "whsec_" + base64.StdEncoding.EncodeToString([]byte("another-key")),
		},
		"github": {
			verify: client.HookVerify{Scheme: client.VerifyGitHub, Secret: "gh-secret"},
			sign: func(body, secret string) []string {
				return []string{"X-Hub-Signature-256", "sha256=" + hmacHex(secret, body), "X-GitHub-Event", "push"}
			},
			wrong: "not-gh-secret",
		},
		"stripe": {
			verify: client.HookVerify{Scheme: client.VerifyStripe, Secret: "whsec_stripe"},
			sign: func(body, secret string) []string {
				ts := strconv.FormatInt(time.Now().Unix(), 10)
				return []string{"Stripe-Signature", "t=" + ts + ",v1=" + hmacHex(secret, ts+"."+body)}
			},
			wrong: "whsec_other",
		},
		"slack": {
			verify: client.HookVerify{Scheme: client.VerifySlack, Secret: "slack-signing"},
			sign: func(body, secret string) []string {
				ts := strconv.FormatInt(time.Now().Unix(), 10)
				return []string{"X-Slack-Request-Timestamp", ts, "X-Slack-Signature", "v0=" + hmacHex(secret, "v0:"+ts+":"+body)}
			},
			wrong: "slack-other",
		},
		"hmac-sha256 hex": {
			verify: client.HookVerify{Scheme: client.VerifyHMACSHA256, Secret: "shared", Header: "X-Signature"},
			sign: func(body, secret string) []string {
				return []string{"X-Signature", hmacHex(secret, body)}
			},
			wrong: "not-shared",
		},
		"hmac-sha256 base64": {
			verify: client.HookVerify{Scheme: client.VerifyHMACSHA256, Secret: "shared", Header: "X-Sig", Encoding: "base64"},
			sign: func(body, secret string) []string {
				return []string{"X-Sig", "sha256=" + hmacB64([]byte(secret), body)}
			},
			wrong: "not-shared",
		},
	}
}

// The posts here are raw HTTP: the test is about the signature headers.
func TestHookVerifiesSignatures(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		ses := e.session(t)
		for name, s := range signers() {
			secret := s.verify.Secret
			hook, token := e.hook(t, client.CreateHookInput{SessionID: ses, Verify: &s.verify})
			if got := e.getHook(t, hook); got.Verify == nil || got.Verify.Scheme != s.verify.Scheme || got.Verify.Secret != "" {
				t.Errorf("%s: the hook shows its verify as %+v", name, got.Verify)
			}
			if raw := e.must(t, 200, e.do(t, "GET", "/v1/hooks/"+hook, e.alice, nil)); strings.Contains(string(raw.raw), secret) {
				t.Errorf("%s: a read of the hook shows its secret: %s", name, raw.raw)
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
			if n := len(e.hookLog(t, hook).Events); n != 0 {
				t.Fatalf("%s: %d events stored after bad signatures", name, n)
			}
			// Accepted.
			e.must(t, 202, e.post(t, token, body, s.sign(body, secret)...))
			log := e.hookLog(t, hook)
			if len(log.Events) != 1 || log.Events[0].Body != body {
				t.Fatalf("%s: log %+v", name, log)
			}
			for _, h := range []string{"webhook-signature", "x-hub-signature-256", "stripe-signature", "x-slack-signature", "x-signature", "x-sig"} {
				if _, ok := log.Events[0].Headers[h]; ok {
					t.Errorf("%s: stored the signature header %s", name, h)
				}
			}
		}
	})
}

func TestHookStaleTimestampIsRefused(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	hook, token := e.hook(t, client.CreateHookInput{SessionID: e.session(t), Verify: &client.HookVerify{Scheme: client.VerifySlack, Secret: "s"}})
	ts := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)
	wantError(t, e.post(t, token, "b", "X-Slack-Request-Timestamp", ts, "X-Slack-Signature", "v0="+hmacHex("s", "v0:"+ts+":b")), 401, "signature_invalid")
	if n := len(e.hookLog(t, hook).Events); n != 0 {
		t.Fatalf("%d events stored", n)
	}
}

func TestHookDedupes(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		ses := e.session(t)
		for name, c := range map[string]struct {
			dedupeHeader string
			headers      func(id string) []string
		}{
			"webhook-id":        {"", func(id string) []string { return []string{"Webhook-Id", id} }},
			"X-GitHub-Delivery": {"", func(id string) []string { return []string{"X-GitHub-Delivery", id} }},
			"dedupeHeader":      {"X-Job-Event", func(id string) []string { return []string{"X-Job-Event", id} }},
			"Idempotency-Key":   {"", func(id string) []string { return []string{"Idempotency-Key", id} }},
		} {
			hook, token := e.hook(t, client.CreateHookInput{SessionID: ses, DedupeHeader: c.dedupeHeader})
			first := e.send(t, token, `{"n":1}`, c.headers("d-1")...)
			again, err := e.trySend(t, token, `{"n":1,"resent":true}`, c.headers("d-1")...)
			if err != nil || again.Status != 202 || !again.Duplicate || again.EventID != first.EventID {
				t.Errorf("%s: first %+v, repeat %+v %v", name, first, again, err)
			}
			next := e.send(t, token, `{"n":2}`, c.headers("d-2")...)
			if next.EventID == first.EventID {
				t.Errorf("%s: another id: %+v", name, next)
			}
			if log := e.hookLog(t, hook); len(log.Events) != 2 || log.Events[1].Seq != 2 || log.Events[0].Body != `{"n":1}` {
				t.Errorf("%s: log %+v", name, log)
			}
		}
	})
}

func TestHookClosesWhenItsTaskEnds(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		ctx := t.Context()
		ses := e.session(t)
		task := e.task(t, ses)
		hook, token := e.hook(t, client.CreateHookInput{TaskID: task})
		if _, err := e.api.Complete(ctx, task, "done"); err != nil {
			t.Fatal(err)
		}
		if got := e.getHook(t, hook); got.Status != client.HookClosed || got.CloseReason != client.CloseReasonTaskTerminal {
			t.Fatalf("after complete: %+v", got)
		}
		logLen := func() int {
			t.Helper()
			page, err := e.api.SessionEvents(ctx, ses, client.EventsParams{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			return len(page.Events)
		}
		before := logLen()
		e.wantClosed(t, token, "task_terminal", "Content-Type", "application/json", "Webhook-Id", "late-1")
		if n := len(e.hookLog(t, hook).Events); n != 0 {
			t.Errorf("%d events stored after the task ended", n)
		}
		if n := logLen(); n != before {
			t.Errorf("the session log grew from %d to %d", before, n)
		}
	})
}

func TestHookClosesAfterItsTTL(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		hook, token := e.hook(t, client.CreateHookInput{SessionID: e.session(t), TTLMs: client.Int64(1000)})
		var g *client.Hook
		storetest.WaitFor(t, "the hook to expire", func() bool {
			g = e.getHook(t, hook)
			return g.Status == client.HookClosed
		})
		if g.CloseReason != client.CloseReasonExpired {
			t.Fatalf("closed for %+v", g)
		}
		e.wantClosed(t, token, "expired")
		if n := len(e.hookLog(t, hook).Events); n != 0 {
			t.Errorf("%d events stored after expiry", n)
		}
	})
}

// The posts here are raw HTTP: every 404 must have the same body.
func TestHookUnknownTokens(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	hook, token := e.hook(t, client.CreateHookInput{SessionID: e.session(t)})
	missing := e.do(t, "GET", "/v1/hooks/"+ids.New(ids.HookPrefix, 0), e.alice, nil)
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
	if n := len(e.hookLog(t, hook).Events); n != 0 {
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
		hook, token := e.hook(t, client.CreateHookInput{SessionID: e.session(t)})
		id := e.send(t, token, "work item").EventID

		// Consumer a takes it and never acks.
		if ev := only(t, "a", e.readHook(t, hook, client.HookReadParams{Consumer: "a", Visibility: 300 * time.Millisecond})); ev.EventID != id || ev.DeliveryCount != 1 {
			t.Fatalf("a: %+v", ev)
		}
		// Consumer b long-polls: it is answered once a's visibility runs out,
		// with the same event on its second delivery. Nothing else ends its
		// wait early (no re-check within it): had it sat the wait out, it
		// would answer with no event.
		b := e.readHook(t, hook, client.HookReadParams{Consumer: "b", Visibility: 300 * time.Millisecond, Wait: 20 * time.Second})
		if ev := only(t, "b", b); ev.EventID != id || ev.DeliveryCount != 2 {
			t.Fatalf("b: %+v", ev)
		}
		if n := e.ack(t, hook, id); n != 1 {
			t.Fatalf("ack: %d", n)
		}
		// Acked, it never comes back, to anyone.
		for _, c := range []string{"a", "b", "c"} {
			if r := e.readHook(t, hook, client.HookReadParams{Consumer: c, Visibility: time.Millisecond, Wait: 200 * time.Millisecond}); len(r.Events) != 0 {
				t.Fatalf("%s after ack: %+v", c, r)
			}
		}
		// Another group reads the same event independently.
		if ev := only(t, "group audit", e.readHook(t, hook, client.HookReadParams{Group: "audit", Consumer: "x"})); ev.EventID != id || ev.DeliveryCount != 1 {
			t.Fatalf("group audit: %+v", ev)
		}
	})
}

// A waiting read is answered by the post that wakes it: with no re-check
// within its wait, a read that was not woken sits the wait out and answers
// with no event.
func TestHookLongPollWakesOnPost(t *testing.T) {
	eachStore(t, noRecheck, func(t *testing.T, e *hookEnv) {
		hook, token := e.hook(t, client.CreateHookInput{SessionID: e.session(t)})
		e.readHook(t, hook, client.HookReadParams{Consumer: "a"}) // makes the group
		r := e.readWokenBy(t, hook, client.HookReadParams{Consumer: "a"}, func() { e.send(t, token, "wake up") })
		wantWokenWith(t, "long poll", r, "wake up")
	})
}

func TestHookDeadLetters(t *testing.T) {
	eachStore(t, app.Config{HookMaxDeliveries: 2}, func(t *testing.T, e *hookEnv) {
		hook, token := e.hook(t, client.CreateHookInput{SessionID: e.session(t)})
		id := e.send(t, token, "poison").EventID
		if ev := only(t, "first", e.readHook(t, hook, client.HookReadParams{Consumer: "a", Visibility: 50 * time.Millisecond})); ev.DeliveryCount != 1 {
			t.Fatalf("first: %+v", ev)
		}
		if ev := only(t, "second", e.readHook(t, hook, client.HookReadParams{Consumer: "a", Visibility: 50 * time.Millisecond, Wait: 10 * time.Second})); ev.DeliveryCount != 2 {
			t.Fatalf("second: %+v", ev)
		}
		// The next attempt would be the third: it moves to the dead letters.
		storetest.WaitFor(t, "the dead letter", func() bool {
			r := e.readHook(t, hook, client.HookReadParams{Consumer: "b", Visibility: 50 * time.Millisecond, Wait: 200 * time.Millisecond})
			if len(r.Events) != 0 {
				t.Fatalf("delivered past the maximum: %+v", r)
			}
			return len(e.hookLog(t, hook).DeadLetters) == 1
		})
		log := e.hookLog(t, hook)
		dl := log.DeadLetters[0]
		if dl.DeadAt.IsZero() || dl.DeadAt.Before(dl.ReceivedAt) {
			t.Errorf("dead letter without a deadAt time: %+v", dl)
		}
		if dl.EventID != id || dl.DeliveryCount != 2 || dl.Group != "default" || dl.Body != "poison" || log.DeadLetterCount != 1 {
			t.Fatalf("dead letter: %+v", dl)
		}
		if len(log.Events) != 1 {
			t.Errorf("the log no longer shows the event: %+v", log)
		}
		if !strings.Contains(scrape(t, e), "taskhook_hook_dead_letters_total 1") {
			t.Error("dead letter not counted")
		}
	})
}

func TestHookRateLimit(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{HookRateLimit: 0.1, HookBurst: 2})
	hook, token := e.hook(t, client.CreateHookInput{SessionID: e.session(t)})
	e.send(t, token, "1")
	e.send(t, token, "2")
	_, err := e.trySend(t, token, "3")
	if ce := wantCode(t, err, 429, client.CodeRateLimited); ce.RetryAfter < time.Second || ce.RetryAfter > 10*time.Second {
		t.Errorf("Retry-After %v", ce.RetryAfter)
	}
	// Retry-After in whole seconds, on the wire.
	a := e.post(t, token, "4")
	wantError(t, a, 429, "rate_limited")
	if ra, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || ra < 1 || ra > 10 {
		t.Errorf("Retry-After %q", a.header.Get("Retry-After"))
	}
	if n := len(e.hookLog(t, hook).Events); n != 2 {
		t.Errorf("%d events stored", n)
	}
	if !strings.Contains(scrape(t, e), `taskhook_hook_posts_total{outcome="rate_limited"} 2`) {
		t.Error("rate limit not counted")
	}
}

// Raw HTTP: the test is about the JSON a stored body reads as (body for
// UTF-8, even empty; bodyBase64 for anything else), which the client's
// fields do not tell apart.
func TestHookBodies(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{MaxBodyBytes: 1024})
	hook, token := e.hook(t, client.CreateHookInput{SessionID: e.session(t)})
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

// A static response is sent, to a new post and to a duplicate, with its
// content type in the form it was checked in.
func TestHookStaticResponse(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	hook, token := e.hook(t, client.CreateHookInput{SessionID: e.session(t),
		Response: &client.HookResponse{Status: 200, Body: `{"ok":true}`, ContentType: "Application/JSON; Charset=UTF-8"}})
	const kept = "application/json; charset=utf-8"
	if got := e.getHook(t, hook).Response; got == nil || got.ContentType != kept {
		t.Errorf("stored response %+v, want content type %q", got, kept)
	}
	for range 2 {
		res, err := e.trySend(t, token, "x", "Webhook-Id", "same")
		if err != nil || res.Status != 200 || string(res.Body) != `{"ok":true}` || res.Header.Get("Content-Type") != kept {
			t.Fatalf("static response: %+v %v", res, err)
		}
	}
}

// A static response of a type a browser may run as a page (HTML, XML, SVG,
// script, whatever is not on the allowlist, in any spelling) is refused at
// creation, naming response.contentType, and no hook is made.
func TestHookStaticResponseRefusesActiveTypes(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	ses := e.session(t)
	for _, ct := range []string{
		"text/html", "Text/HTML; charset=utf-8", "text/html;charset=UTF-8", "image/svg+xml", "text/xml",
		"application/xml", "application/xhtml+xml", "text/javascript", "application/javascript",
		"multipart/x-mixed-replace; boundary=b", "application/octet-stream", "text/plain; charset=utf-7",
		"application/json; boundary=b",
	} {
		body, _ := json.Marshal(map[string]any{"sessionId": ses,
			"response": map[string]any{"status": 200, "body": "<script>alert(1)</script>", "contentType": ct}})
		a := e.do(t, "POST", "/v1/hooks", e.alice, body)
		if a.status != 400 || a.str("error", "code") != "invalid_request" || a.str("error", "details", "0", "field") != "response.contentType" {
			t.Errorf("%q: %d %s, want 400 invalid_request naming response.contentType", ct, a.status, a.raw)
		}
	}
	list, err := e.api.ListHooks(t.Context(), client.ListHooksParams{SessionID: ses})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("hooks made: %+v %v", list, err)
	}
}

// Raw HTTP: queries and bodies the client does not send.
func TestHookValidatesReads(t *testing.T) {
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	hook, _ := e.hook(t, client.CreateHookInput{SessionID: e.session(t)})
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
	_, err := e.trySend(t, "whk_00"+base64.RawURLEncoding.EncodeToString(make([]byte, 32)), "x")
	if ce := wantCode(t, err, 503, client.CodeStoreUnavailable); ce.RetryAfter <= 0 {
		t.Error("503 without Retry-After")
	}
}

// The token, the verify secret and the bodies appear in no log line and in
// no metric, through a run that touches every hook route.
func TestHookSecretsStayOutOfLogs(t *testing.T) {
	eachStore(t, app.Config{LogLevel: "debug"}, func(t *testing.T, e *hookEnv) {
		ctx := t.Context()
		ses := e.session(t)
		secret := "verify-secret-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		hook, token := e.hook(t, client.CreateHookInput{SessionID: ses, Verify: &client.HookVerify{Scheme: client.VerifyGitHub, Secret: secret}})
		body := `{"payload":"body-marker-` + strconv.FormatInt(time.Now().UnixNano(), 36) + `"}`
		sig := "sha256=" + hmacHex(secret, body)
		e.send(t, token, body, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", "del-1")
		if res, err := e.trySend(t, token, body, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", "del-1"); err != nil || !res.Duplicate {
			t.Fatalf("repeat: %+v %v", res, err)
		}
		_, err := e.trySend(t, token, body+"tampered", "X-Hub-Signature-256", sig)
		wantCode(t, err, 401, client.CodeSignatureInvalid)
		_, err = e.trySend(t, token[:len(token)-2]+"xx", body)
		wantCode(t, err, 404, client.CodeNotFound)
		r := e.readHook(t, hook, client.HookReadParams{Consumer: "a"})
		e.ack(t, hook, only(t, "read", r).EventID)
		e.hookLog(t, hook)
		if _, err := e.api.CloseHook(ctx, hook); err != nil {
			t.Fatal(err)
		}
		_, err = e.trySend(t, token, body, "X-Hub-Signature-256", sig)
		wantCode(t, err, 410, client.CodeHookClosed)
		// The session log as it is on the wire.
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
	info, err := e.api.Info(t.Context())
	if err != nil || !slices.Contains(info.Capabilities, "hooks") {
		t.Errorf("info: %+v %v", info, err)
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
	hook, token := a.hook(t, client.CreateHookInput{SessionID: a.session(t)})
	measure := func(name string, e *hookEnv, want float64, call func()) {
		t.Helper()
		before := roundTrips(e.srv)
		call()
		if got := roundTrips(e.srv) - before; got != want {
			t.Errorf("%s took %v Redis round trips, want %v", name, got, want)
		}
	}
	measure("callback on the creating replica", a, 1, func() { a.send(t, token, "1") })
	measure("first callback on another replica", b, 3, func() { b.send(t, token, "2") })
	measure("next callback on it", b, 1, func() { b.send(t, token, "3") })
	measure("duplicate", b, 1, func() {
		if res, err := b.trySend(t, token, "3", "Webhook-Id", "w"); err != nil || res.Status != 202 {
			t.Fatalf("post: %+v %v", res, err)
		}
	})
	measure("read", a, 1, func() { a.readHook(t, hook, client.HookReadParams{Consumer: "c"}) })
	measure("first read on another replica", b, 2, func() { b.readHook(t, hook, client.HookReadParams{Consumer: "c"}) })
	measure("next read on it", b, 1, func() { b.readHook(t, hook, client.HookReadParams{Consumer: "c"}) })
	measure("ack", a, 1, func() { a.ack(t, hook, "1-0") })
	measure("log", a, 1, func() { a.hookLog(t, hook) })
	measure("empty read waiting 300ms", a, 1, func() {
		a.readHook(t, hook, client.HookReadParams{Consumer: "c", Wait: 300 * time.Millisecond})
	})
}

// A hook's GET and its lists decide nothing themselves: the store answers
// each hook's status as ingest decides it, in no more round trips than
// reading the records and their parents. A replica that knows what a hook
// belongs to reads it in one.
func TestHookGetAndListRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sc := storetest.Standalone(t)
	a := startEnv(t, sc, app.Config{})
	b := startEnv(t, sc, app.Config{})
	ses := a.session(t)
	taskHook, _ := a.hook(t, client.CreateHookInput{TaskID: a.task(t, ses)})
	closed, _ := a.hook(t, client.CreateHookInput{SessionID: ses})
	if _, err := a.api.CloseHook(ctx, closed); err != nil {
		t.Fatal(err)
	}
	measure := func(name string, e *hookEnv, want float64, call func() error) {
		t.Helper()
		before := roundTrips(e.srv)
		if err := call(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := roundTrips(e.srv) - before; got != want {
			t.Errorf("%s took %v Redis round trips, want %v", name, got, want)
		}
	}
	get := func(e *hookEnv, hook string) func() error {
		return func() error { _, err := e.api.GetHook(ctx, hook); return err }
	}
	list := func(e *hookEnv, session string) func() error {
		return func() error { _, err := e.api.ListHooks(ctx, client.ListHooksParams{SessionID: session}); return err }
	}
	measure("get on the creating replica", a, 1, get(a, taskHook))
	measure("first get on another replica", b, 2, get(b, taskHook))
	measure("next get on it", b, 1, get(b, taskHook))
	measure("first get of a closed hook on another replica", b, 1, get(b, closed))
	// The session's owner, its index, the owners, the hooks, their parents.
	measure("list of a session", a, 5, list(a, ses))
	other := b.session(t)
	gone, _ := b.hook(t, client.CreateHookInput{SessionID: other})
	if _, err := b.api.CloseHook(ctx, gone); err != nil {
		t.Fatal(err)
	}
	measure("list of closed hooks only", b, 4, list(b, other))
}

// A read waiting on one replica is woken by a callback taken by another.
func TestHookWakeAcrossReplicas(t *testing.T) {
	eachReplicaPair(t, func(t *testing.T, a, b *hookEnv) {
		hook, token := a.hook(t, client.CreateHookInput{SessionID: a.session(t)})
		a.readHook(t, hook, client.HookReadParams{Consumer: "c"})
		before := roundTrips(a.srv)
		// With no re-check within the wait, a read that was not woken sits
		// it out and answers with no event.
		r := a.readWokenBy(t, hook, client.HookReadParams{Consumer: "c"}, func() { b.send(t, token, "from b") })
		wantWokenWith(t, "woken read", r, "from b")
		if got := roundTrips(a.srv) - before; got != 2 {
			t.Errorf("the waiting read took %v round trips, want 2: one as it began, one when woken", got)
		}
	})
}

func TestHookClosesWhenItsSessionIsCancelled(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *hookEnv) {
		ctx := t.Context()
		ses := e.session(t)
		sesHook, sesToken := e.hook(t, client.CreateHookInput{SessionID: ses})
		taskHook, taskToken := e.hook(t, client.CreateHookInput{TaskID: e.task(t, ses)})
		if _, err := e.api.CancelSession(ctx, ses, "done"); err != nil {
			t.Fatal(err)
		}
		for hook, c := range map[string]struct{ token, reason string }{
			sesHook:  {sesToken, client.CloseReasonSessionCancelled},
			taskHook: {taskToken, client.CloseReasonTaskTerminal}, // its task was cancelled with the session
		} {
			if g := e.getHook(t, hook); g.Status != client.HookClosed || g.CloseReason != c.reason {
				t.Errorf("after cancel: %+v, want closed (%s)", g, c.reason)
			}
			e.wantClosed(t, c.token, c.reason)
			if n := len(e.hookLog(t, hook).Events); n != 0 {
				t.Errorf("%d events stored after the session was cancelled", n)
			}
		}
		// No new hook in a cancelled session.
		_, err := e.api.CreateHook(ctx, client.CreateHookInput{SessionID: ses})
		wantCode(t, err, 409, client.CodeSessionNotActive)
	})
}

// A closed hook's queue is drained as usual; once the group has nothing
// left, a read with a wait answers at once, saying the hook is closed.
func TestHookReadOfAClosedHookAnswersAtOnce(t *testing.T) {
	eachStore(t, noRecheck, func(t *testing.T, e *hookEnv) {
		task := e.task(t, e.session(t))
		hook, token := e.hook(t, client.CreateHookInput{TaskID: task})
		id := e.send(t, token, "queued").EventID
		if _, err := e.api.Complete(t.Context(), task, "done"); err != nil {
			t.Fatal(err)
		}

		b := e.readAtOnce(t, hook, client.HookReadParams{Consumer: "a"})
		if ev := only(t, "read of the closed hook", b); ev.EventID != id || b.Pending != 1 ||
			b.HookStatus != client.HookClosed || b.CloseReason != client.CloseReasonTaskTerminal {
			t.Fatalf("read of the closed hook: %+v, want %s delivered", b, id)
		}
		e.ack(t, hook, id)
		b = e.readAtOnce(t, hook, client.HookReadParams{Consumer: "a"})
		if len(b.Events) != 0 || b.Pending != 0 || b.HookStatus != client.HookClosed || b.CloseReason != client.CloseReasonTaskTerminal {
			t.Fatalf("drained read: %+v", b)
		}
		// Another group still gets everything the hook took.
		b = e.readAtOnce(t, hook, client.HookReadParams{Group: "late"})
		if ev := only(t, "another group", b); ev.EventID != id || b.HookStatus != client.HookClosed {
			t.Fatalf("another group: %+v", b)
		}
	})
}

// A read waiting on an open hook that nobody posts to answers as soon as
// the hook closes: its task ends, its session is cancelled, its owner
// closes it. Had it not been woken, it would sit out its wait (no re-check
// within it) and answer with the hook open.
func TestHookWaitingReadEndsWhenTheHookCloses(t *testing.T) {
	eachStore(t, noRecheck, func(t *testing.T, e *hookEnv) {
		ctx := t.Context()
		for _, c := range []struct {
			name, reason string
			make         func(ses string) (hook string, close func() error)
		}{
			{"task completes", client.CloseReasonTaskTerminal, func(ses string) (string, func() error) {
				task := e.task(t, ses)
				hook, _ := e.hook(t, client.CreateHookInput{TaskID: task})
				return hook, func() error { _, err := e.api.Complete(ctx, task, "done"); return err }
			}},
			{"session cancelled", client.CloseReasonSessionCancelled, func(ses string) (string, func() error) {
				hook, _ := e.hook(t, client.CreateHookInput{SessionID: ses})
				return hook, func() error { _, err := e.api.CancelSession(ctx, ses, ""); return err }
			}},
			{"closed by its owner", client.CloseReasonClosed, func(ses string) (string, func() error) {
				hook, _ := e.hook(t, client.CreateHookInput{SessionID: ses})
				return hook, func() error { _, err := e.api.CloseHook(ctx, hook); return err }
			}},
		} {
			hook, closeIt := c.make(e.session(t))
			if b := e.readHook(t, hook, client.HookReadParams{Consumer: "a"}); b.HookStatus != client.HookOpen {
				t.Fatalf("%s: before: %+v", c.name, b)
			}
			r := e.readWokenBy(t, hook, client.HookReadParams{Consumer: "a"}, func() {
				if err := closeIt(); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
			})
			if r.err != nil || len(r.b.Events) != 0 || r.b.Pending != 0 || r.b.HookStatus != client.HookClosed || r.b.CloseReason != c.reason {
				t.Fatalf("%s: the waiting read answered %+v %v, want closed (%s)", c.name, r.b, r.err, c.reason)
			}
		}
	})
}

// A read waiting on one replica hears of a close taken by another.
func TestHookCloseWakesReadsAcrossReplicas(t *testing.T) {
	eachReplicaPair(t, func(t *testing.T, a, b *hookEnv) {
		hook, _ := a.hook(t, client.CreateHookInput{SessionID: a.session(t)})
		a.readHook(t, hook, client.HookReadParams{Consumer: "c"})
		r := a.readWokenBy(t, hook, client.HookReadParams{Consumer: "c"}, func() {
			if _, err := b.api.CloseHook(t.Context(), hook); err != nil {
				t.Fatal(err)
			}
		})
		if r.err != nil || r.b.HookStatus != client.HookClosed || r.b.CloseReason != client.CloseReasonClosed || len(r.b.Events) != 0 {
			t.Fatalf("woken read: %+v %v", r.b, r.err)
		}
	})
}

// A replica killed with SIGKILL while a long-poll read is open loses no hook
// event: what it took and never saw acknowledged is delivered again through
// another replica once its visibility runs out.
func TestHookEventsSurviveAKilledReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	t.Parallel()
	sc := storetest.Standalone(t)
	proc, procURL := apptest.StartProcess(t, sc)
	b := startEnv(t, sc, app.Config{})
	a := envOf(t, &apptest.Server{URL: procURL})

	hook, token := b.hook(t, client.CreateHookInput{SessionID: b.session(t)})
	want := map[string]bool{}
	for _, body := range []string{"one", "two", "three"} {
		want[b.must(t, 202, b.post(t, token, body)).str("eventId")] = true
	}
	// The process takes all three for its consumer and never acks them. They
	// stay its own for 10 s: long enough that the long poll below cannot
	// take them back before the kill however slow the machine, short enough
	// for the other replica to take them after it.
	took := a.read(t, hook, "consumer=a&visibilityMs=10000")
	if n := len(took.list("events")); n != 3 {
		t.Fatalf("the process read %d events: %s", n, took.raw)
	}
	// A long poll is open on the process when a fourth event arrives, and
	// the process dies: it may or may not have taken the fourth.
	polled := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("GET", procURL+"/v1/hooks/"+hook+"/events?consumer=a&visibilityMs=10000&wait=60s", nil)
		req.Header.Set("Authorization", "Bearer "+a.alice)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			polled <- err.Error()
			return
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		polled <- res.Status + " " + string(body)
	}()
	storetest.WaitFor(t, "the long poll on the process", func() bool {
		select {
		case answer := <-polled:
			t.Fatalf("the long poll answered before the fourth event: %s", answer)
		default:
		}
		v, ok := metricValue(t, a, "taskhook_waiters")
		return ok && v == 1
	})
	want[b.must(t, 202, b.post(t, token, "four")).str("eventId")] = true
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-polled

	// The other replica delivers every event, the three the dead process
	// took on their second delivery.
	got := map[string]float64{}
	deadline := time.Now().Add(40 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		r := b.read(t, hook, "consumer=b&visibilityMs=500&wait=5s")
		var ids []string
		for _, e := range r.list("events") {
			m := e.(map[string]any)
			got[m["eventId"].(string)] = m["deliveryCount"].(float64)
			ids = append(ids, m["eventId"].(string))
		}
		if len(ids) > 0 {
			b.must(t, 200, b.do(t, "POST", "/v1/hooks/"+hook+"/ack", b.alice, map[string]any{"eventIds": ids}))
		}
	}
	for id := range want {
		if _, ok := got[id]; !ok {
			t.Errorf("event %s was lost with the process", id)
		}
	}
	for _, e := range took.list("events") {
		id := e.(map[string]any)["eventId"].(string)
		if got[id] != 2 {
			t.Errorf("event %s taken by the process came back with deliveryCount %v, want 2", id, got[id])
		}
	}
}
