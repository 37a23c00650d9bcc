package client_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// Black-box tests of the hook calls and of Hook(id).Events, against real
// servers on the standalone Redis.

// hookOnStandalone starts a server on a standalone store and makes a hook
// on a task of alice's: it returns the env, a test context, an outside
// system, and the hook with its callback URL on the server.
func hookOnStandalone(t *testing.T) (e *env, ctx context.Context, out *client.Client, h *client.CreatedHook, cb string) {
	t.Helper()
	e = newEnv(t, apptest.Standalone(t, withTestDefaults(app.Config{})))
	ctx, out = testContext(t), outsider(t)
	_, h = newHook(t, ctx, e.alice)
	return e, ctx, out, h, callbackOn(t, e.url, h.URL)
}

// outsider is an outside system: no token, no checks on the exchange (its
// answers need not be JSON).
func outsider(t *testing.T) *client.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return client.New("", "", client.WithHTTPClient(&http.Client{Timeout: 20 * time.Second, Transport: tr}))
}

// callbackOn is the hook's callback URL on the given server: a test server
// listens on a port of its own, not at the public URL it advertises.
func callbackOn(t *testing.T, serverURL, hookURL string) string {
	t.Helper()
	u, err := url.Parse(hookURL)
	if err != nil || !strings.HasPrefix(u.Path, "/v1/callback/whk_") {
		t.Fatalf("callback URL %q does not look like one", hookURL)
	}
	return serverURL + u.Path
}

// newHook makes a hook on a new task.
func newHook(t *testing.T, ctx context.Context, c *client.Client) (*client.Task, *client.CreatedHook) {
	t.Helper()
	task := newTask(t, ctx, c)
	h, err := c.CreateHook(ctx, client.CreateHookInput{TaskID: task.TaskID})
	if err != nil {
		t.Fatalf("CreateHook: %v", err)
	}
	return task, h
}

// postJSON posts a JSON body through the client, as an outside system does.
func postJSON(t *testing.T, ctx context.Context, out *client.Client, cb, body string) *client.PostResult {
	t.Helper()
	res, err := out.Post(ctx, cb, []byte(body), http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		t.Fatalf("Post %s: %v", body, err)
	}
	if res.Status != http.StatusAccepted || res.EventID == "" || res.Duplicate {
		t.Fatalf("Post %s: %+v", body, res)
	}
	return res
}

// postNumbered posts {"n":1} to {"n":count}, in order.
func postNumbered(t *testing.T, ctx context.Context, out *client.Client, cb string, count int) {
	t.Helper()
	for i := 1; i <= count; i++ {
		postJSON(t, ctx, out, cb, fmt.Sprintf(`{"n":%d}`, i))
	}
}

// postRaw posts with net/http alone: what a provider with no Go client does.
func postRaw(t *testing.T, cb, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, cb, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("raw post: %v", err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// recv takes the next value of ch, or fails the test after 20 s.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// waitUntil polls cond until it holds, or fails the test after 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not ordering events
	}
}

// wantDrained checks that the group has nothing left: no event pending and
// nothing for another consumer, even with a visibility of 1 ms.
func wantDrained(t *testing.T, ctx context.Context, c *client.Client, hookID string) {
	t.Helper()
	b, err := c.ReadHook(ctx, hookID, client.HookReadParams{Consumer: "inspector", Visibility: time.Millisecond})
	if err != nil {
		t.Fatalf("ReadHook: %v", err)
	}
	if len(b.Events) != 0 || b.Pending != 0 {
		t.Fatalf("the group still has events: %d read, %d pending (first: %+v)", len(b.Events), b.Pending, b.Events)
	}
}

func hmacHex(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

// TestHookRoutes drives every hook route through its typed call.
func TestHookRoutes(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, withTestDefaults(app.Config{}))
	ctx := testContext(t)
	e := newEnv(t, srv)
	c, out := e.alice, outsider(t)

	task := newTask(t, ctx, c)
	var meta client.Response
	h, err := c.CreateHook(ctx, client.CreateHookInput{
		TaskID: task.TaskID, Label: "ci", DedupeHeader: "X-Event-Id",
		Verify: &client.HookVerify{Scheme: client.VerifyHMACSHA256, Secret: "s3cret", Header: "X-Signature"},
	}, client.WithResponse(&meta))
	if err != nil {
		t.Fatalf("CreateHook: %v", err)
	}
	if meta.Status != http.StatusCreated || meta.Header.Get("Location") != "/v1/hooks/"+h.HookID {
		t.Errorf("create answer %+v", meta)
	}
	if !strings.HasPrefix(h.HookID, "hook_") || h.Status != client.HookOpen || h.Owner != "alice" ||
		h.TaskID != task.TaskID || h.SessionID != task.SessionID || h.Label != "ci" || h.DedupeHeader != "X-Event-Id" ||
		!strings.HasPrefix(h.Token, "whk_") || !strings.HasSuffix(h.URL, "/v1/callback/"+h.Token) ||
		h.TTLMs <= 0 || !h.ExpiresAt.After(h.CreatedAt) || h.ClosedAt != nil {
		t.Fatalf("created hook %+v", h)
	}
	if h.Verify == nil || h.Verify.Scheme != client.VerifyHMACSHA256 || h.Verify.Header != "X-Signature" || h.Verify.Secret != "" {
		t.Errorf("verify as shown: %+v", h.Verify)
	}
	cb := callbackOn(t, srv.URL, h.URL)

	got, err := c.GetHook(ctx, h.HookID)
	if err != nil || got.HookID != h.HookID || got.Status != client.HookOpen || !got.CreatedAt.Equal(h.CreatedAt) {
		t.Fatalf("GetHook: %+v, %v", got, err)
	}
	for _, p := range []client.ListHooksParams{{TaskID: task.TaskID}, {SessionID: task.SessionID}, {}} {
		page, err := c.ListHooks(ctx, p)
		if err != nil || len(page.Items) != 1 || page.Items[0].HookID != h.HookID || page.NextCursor != "" {
			t.Fatalf("ListHooks(%+v): %+v, %v", p, page, err)
		}
	}
	_, err = e.bob.GetHook(ctx, h.HookID)
	wantCode(t, err, http.StatusNotFound, client.CodeNotFound)

	// Post, then the same delivery again: stored once.
	body := `{"state":"running"}`
	sig := http.Header{"Content-Type": {"application/json"}, "X-Signature": {hmacHex("s3cret", body)}, "X-Event-Id": {"job-1"}}
	first, err := out.Post(ctx, cb, []byte(body), sig)
	if err != nil || first.Status != http.StatusAccepted || first.EventID == "" || first.Duplicate {
		t.Fatalf("Post: %+v, %v", first, err)
	}
	again, err := out.Post(ctx, cb, []byte(body), sig)
	if err != nil || !again.Duplicate || again.EventID != first.EventID {
		t.Fatalf("Post again: %+v, %v", again, err)
	}
	_, err = out.Post(ctx, cb, []byte(body), http.Header{"X-Signature": {hmacHex("wrong", body)}})
	wantCode(t, err, http.StatusUnauthorized, client.CodeSignatureInvalid)

	// A body that is not UTF-8, posted with net/http alone.
	bin := "\xff\x00\xfe binary"
	if res := postRaw(t, cb, bin, "Content-Type", "application/octet-stream", "X-Signature", hmacHex("s3cret", bin)); res.StatusCode != http.StatusAccepted {
		t.Fatalf("raw post: %d", res.StatusCode)
	}

	log, err := c.HookLog(ctx, h.HookID, "", 10)
	if err != nil || len(log.Events) != 2 || log.DeadLetterCount != 0 || len(log.DeadLetters) != 0 {
		t.Fatalf("HookLog: %+v, %v", log, err)
	}
	ev1, ev2 := log.Events[0], log.Events[1]
	if ev1.EventID != first.EventID || ev1.Seq != 1 || ev1.HookID != h.HookID || ev1.Method != http.MethodPost ||
		ev1.Body != body || ev1.BodyBase64 != "" || ev1.ContentType != "application/json" ||
		ev1.Headers["x-event-id"] != "job-1" || ev1.ReceivedAt.IsZero() || ev1.DeliveryCount != 0 {
		t.Errorf("logged event 1: %+v", ev1)
	}
	if _, ok := ev1.Headers["x-signature"]; ok {
		t.Errorf("the signature header was stored: %v", ev1.Headers)
	}
	if b, err := ev2.Bytes(); err != nil || string(b) != bin || ev2.Seq != 2 || ev2.Body != "" || ev2.BodyBase64 == "" {
		t.Errorf("logged event 2: %+v: bytes %q, %v", ev2, b, err)
	}
	if log.Cursor != ev2.EventID {
		t.Errorf("log cursor %q, want %q", log.Cursor, ev2.EventID)
	}
	if rest, err := c.HookLog(ctx, h.HookID, ev1.EventID, 10); err != nil || len(rest.Events) != 1 || rest.Events[0].Seq != 2 {
		t.Errorf("HookLog after event 1: %+v, %v", rest, err)
	}

	// A consuming read, then the ack.
	b, err := c.ReadHook(ctx, h.HookID, client.HookReadParams{Group: "g", Consumer: "c1", Count: 5, Visibility: time.Minute})
	if err != nil || len(b.Events) != 2 || b.Group != "g" || b.Consumer != "c1" || b.Pending != 2 ||
		b.Events[0].DeliveryCount != 1 || b.Events[1].Seq != 2 {
		t.Fatalf("ReadHook: %+v, %v", b, err)
	}
	if n, err := c.AckHook(ctx, h.HookID, "g", []string{b.Events[0].EventID, b.Events[1].EventID}); err != nil || n != 2 {
		t.Fatalf("AckHook: %d, %v", n, err)
	}
	if n, err := c.AckHook(ctx, h.HookID, "g", []string{b.Events[0].EventID}); err != nil || n != 0 {
		t.Fatalf("AckHook again: %d, %v", n, err)
	}
	if b, err := c.ReadHook(ctx, h.HookID, client.HookReadParams{Group: "g", Consumer: "c2", Visibility: time.Millisecond}); err != nil || len(b.Events) != 0 || b.Pending != 0 {
		t.Fatalf("ReadHook after the ack: %+v, %v", b, err)
	}

	closed, err := c.CloseHook(ctx, h.HookID)
	if err != nil || closed.Status != client.HookClosed || closed.CloseReason != client.CloseReasonClosed || closed.ClosedAt == nil {
		t.Fatalf("CloseHook: %+v, %v", closed, err)
	}
	_, err = out.Post(ctx, cb, []byte(body), sig)
	wantCode(t, err, http.StatusGone, client.CodeHookClosed)
	if res := postRaw(t, cb, body, "X-Signature", hmacHex("s3cret", body)); res.StatusCode != http.StatusGone {
		t.Errorf("raw post after close: %d", res.StatusCode)
	}
	_, err = out.Post(ctx, srv.URL+"/v1/callback/whk_unknown", []byte(body), nil)
	wantCode(t, err, http.StatusNotFound, client.CodeNotFound)

	// A session's hook with a static answer.
	s, err := c.CreateHook(ctx, client.CreateHookInput{SessionID: task.SessionID,
		Response: &client.HookResponse{Body: "thanks", ContentType: "text/plain"}})
	if err != nil || s.TaskID != "" || s.SessionID != task.SessionID || s.Response == nil || s.Response.Status != 200 {
		t.Fatalf("CreateHook on a session: %+v, %v", s, err)
	}
	res, err := out.Post(ctx, callbackOn(t, srv.URL, s.URL), []byte("x=1"), nil)
	if err != nil || res.Status != http.StatusOK || string(res.Body) != "thanks" || res.EventID != "" ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("Post to a hook with a static answer: %+v, %v", res, err)
	}
}

// TestHookPostKeepsTheTokenOutOfErrors: the callback URL is a credential.
func TestHookPostKeepsTheTokenOutOfErrors(t *testing.T) {
	t.Parallel()
	const token = "whk_aaSECRETtokenDoNotPrint"
	for _, u := range []string{"http://127.0.0.1:1/v1/callback/" + token, "http://[::1]:namedport/v1/callback/" + token} {
		_, err := client.New("", "").Post(testContext(t), u, []byte("{}"), nil)
		if err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("Post to %s: error %v", u, err)
		}
	}
	// A proxy's error page that echoes the path.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway for "+r.URL.Path, http.StatusBadGateway)
	}))
	t.Cleanup(proxy.Close)
	_, err := client.New("", "").Post(testContext(t), proxy.URL+"/v1/callback/"+token, []byte("{}"), nil)
	if e := asError(t, err); e.Status != http.StatusBadGateway || strings.Contains(e.Error(), "SECRET") || !strings.Contains(e.Message, "bad gateway") {
		t.Errorf("Post through a proxy: %v", err)
	}
	// A longer page, whose excerpt is cut in the middle of the token: no part
	// of it shows either.
	long := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, strings.Repeat("x", 170)+" "+r.URL.Path+" is not reachable", http.StatusBadGateway)
	}))
	t.Cleanup(long.Close)
	_, err = client.New("", "").Post(testContext(t), long.URL+"/v1/callback/"+token, []byte("{}"), nil)
	if e := asError(t, err); e.Status != http.StatusBadGateway || strings.Contains(e.Error(), "SECRET") {
		t.Errorf("Post through a proxy with a long page: %v", err)
	}
}

// TestHookEventsDeliversInOrder reads posts made before and during the
// iteration, and acks each one whose loop body returned.
func TestHookEventsDeliversInOrder(t *testing.T) {
	t.Parallel()
	e, ctx, out, h, cb := hookOnStandalone(t)
	c := e.alice
	postNumbered(t, ctx, out, cb, 3)

	iterCtx, stop := context.WithTimeout(ctx, 20*time.Second) // a broken iterator fails the test, not hangs it
	defer stop()
	var got []client.HookEvent
	for ev, err := range c.Hook(h.HookID).Events(iterCtx, client.HookEventsOptions{Consumer: "w1", Wait: 10 * time.Second}) {
		if err != nil {
			t.Fatalf("Events yielded %v", err)
		}
		got = append(got, ev)
		switch ev.Seq {
		case 3: // the iterator is between batches: the next read waits for these
			postRaw(t, cb, `{"n":4}`)
			postJSON(t, ctx, out, cb, `{"n":5}`)
		case 5:
			stop() // the body still returns, so event 5 is acked as the iterator ends
		}
	}
	if len(got) != 5 {
		t.Fatalf("got %d events, want 5: %+v", len(got), got)
	}
	for i, ev := range got {
		n := i + 1
		if ev.Seq != int64(n) || ev.Body != fmt.Sprintf(`{"n":%d}`, n) || ev.DeliveryCount != 1 ||
			ev.HookID != h.HookID || ev.ContentType != "application/json" {
			t.Errorf("event %d: %+v", n, ev)
		}
	}
	wantDrained(t, ctx, c, h.HookID)
	if log, err := c.HookLog(ctx, h.HookID, "", 0); err != nil || len(log.Events) != 5 {
		t.Fatalf("HookLog: %+v, %v", log, err)
	}
}

// unackedAgain opens a hook that holds two events, and the options of a
// consumer whose events not acked come back after 200ms.
func unackedAgain(t *testing.T) (context.Context, *client.Client, *client.CreatedHook, client.HookEventsOptions) {
	t.Helper()
	e, ctx, out, h, cb := hookOnStandalone(t)
	postNumbered(t, ctx, out, cb, 2)
	return ctx, e.alice, h, client.HookEventsOptions{Consumer: "w", Visibility: 200 * time.Millisecond, Wait: 10 * time.Second}
}

// TestHookEventsBreakDoesNotAck: an event whose body broke out of the loop
// is delivered again.
func TestHookEventsBreakDoesNotAck(t *testing.T) {
	t.Parallel()
	ctx, c, h, opts := unackedAgain(t)

	for ev, err := range c.Hook(h.HookID).Events(ctx, opts) {
		if err != nil || ev.Seq != 1 || ev.DeliveryCount != 1 {
			t.Fatalf("first read: %+v, %v", ev, err)
		}
		break
	}

	// Both come back once their visibility runs out: event 1 because the
	// body broke, event 2 because it was read with it and never handed out.
	iterCtx, stop := context.WithTimeout(ctx, 20*time.Second) // a broken iterator fails the test, not hangs it
	defer stop()
	var got []client.HookEvent
	for ev, err := range c.Hook(h.HookID).Events(iterCtx, opts) {
		if err != nil {
			t.Fatalf("Events yielded %v", err)
		}
		got = append(got, ev)
		if len(got) == 2 {
			stop()
		}
	}
	if len(got) != 2 || got[0].Seq != 1 || got[0].DeliveryCount != 2 || got[1].Seq != 2 || got[1].DeliveryCount != 2 {
		t.Fatalf("redelivered: %+v", got)
	}
	wantDrained(t, ctx, c, h.HookID)
}

// TestHookEventsPanicDoesNotAck: an event whose body panicked is delivered
// again; the ones before it, whose bodies returned, are not.
func TestHookEventsPanicDoesNotAck(t *testing.T) {
	t.Parallel()
	ctx, c, h, opts := unackedAgain(t)

	recovered := func() (r any) {
		defer func() { r = recover() }()
		for ev, err := range c.Hook(h.HookID).Events(ctx, opts) {
			if err != nil {
				t.Errorf("Events yielded %v", err)
				return nil
			}
			if ev.Seq == 2 {
				panic("handler bug")
			}
		}
		return nil
	}()
	if recovered != "handler bug" {
		t.Fatalf("recovered %v, want the body's panic", recovered)
	}

	iterCtx, stop := context.WithTimeout(ctx, 20*time.Second) // a broken iterator fails the test, not hangs it
	defer stop()
	for ev, err := range c.Hook(h.HookID).Events(iterCtx, opts) {
		if err != nil || ev.Seq != 2 || ev.DeliveryCount != 2 {
			t.Fatalf("after the panic: %+v, %v (event 1 was handled and must not come back)", ev, err)
		}
		stop()
	}
	wantDrained(t, ctx, c, h.HookID)
}

// failingTransport fails or answers some calls itself, by the last segment
// of their path ("events", "ack", ...), then passes the rest on.
type failingTransport struct {
	next http.RoundTripper

	mu     sync.Mutex
	script map[string][]func() (*http.Response, error)
	calls  map[string][]time.Time
}

func (f *failingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	route := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]
	f.mu.Lock()
	f.calls[route] = append(f.calls[route], time.Now())
	var fail func() (*http.Response, error)
	if s := f.script[route]; len(s) > 0 {
		fail, f.script[route] = s[0], s[1:]
	}
	f.mu.Unlock()
	if fail != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return fail()
	}
	return f.next.RoundTrip(req)
}

func (f *failingTransport) callTimes(route string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.calls[route]...)
}

func networkError() (*http.Response, error) {
	return nil, errors.New("simulated: connection reset by peer")
}

// answer is a taskhook error answer made up by the transport.
func answer(status int, code, retryAfter string) func() (*http.Response, error) {
	return func() (*http.Response, error) {
		h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"simulated"}}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		body := `{"error":{"code":"` + code + `","message":"simulated"}}`
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
	}
}

// TestHookEventsRetriesTransientFailures: network errors, 503, 429 and 502
// on reads and acks are retried, after Retry-After when there is one, and
// never reach the loop.
func TestHookEventsRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	e, ctx, out, h, cb := hookOnStandalone(t)
	postNumbered(t, ctx, out, cb, 2)

	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	flaky := &failingTransport{
		next: &checkingTransport{t: t, next: tr},
		script: map[string][]func() (*http.Response, error){
			"events": {networkError, answer(503, client.CodeStoreUnavailable, "0"), answer(429, client.CodeRateLimited, "1")},
			"ack":    {networkError, answer(502, "", "")},
		},
		calls: map[string][]time.Time{},
	}
	c := client.New(e.url, apptest.Token(t, "alice"),
		client.WithHTTPClient(&http.Client{Timeout: 20 * time.Second, Transport: flaky}))

	iterCtx, stop := context.WithTimeout(ctx, 20*time.Second) // a broken iterator fails the test, not hangs it
	defer stop()
	var got []int64
	opts := client.HookEventsOptions{Consumer: "w", Wait: 10 * time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond}
	for ev, err := range c.Hook(h.HookID).Events(iterCtx, opts) {
		if err != nil {
			t.Fatalf("Events yielded %v", err)
		}
		got = append(got, ev.Seq)
		if len(got) == 2 {
			stop()
		}
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("got events %v, want [1 2]", got)
	}
	reads := flaky.callTimes("events")
	if len(reads) < 4 {
		t.Fatalf("%d reads, want the 3 that failed and one that worked", len(reads))
	}
	if wait := reads[3].Sub(reads[2]); wait < time.Second {
		t.Errorf("the read after a 429 with Retry-After: 1 came %v later", wait)
	}
	if acks := flaky.callTimes("ack"); len(acks) != 3 {
		t.Errorf("%d ack calls, want 2 that failed and one that worked", len(acks))
	}
	wantDrained(t, ctx, e.alice, h.HookID)
}

// switchboard sends every request to the current replica, like a load
// balancer, and counts what happens.
type switchboard struct {
	next     http.RoundTripper
	target   atomic.Pointer[string] // host:port
	failures atomic.Int64           // network errors
	polls    atomic.Int64           // reads with a wait, started
}

func (s *switchboard) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = *s.target.Load(), ""
	if strings.HasSuffix(req.URL.Path, "/events") && req.URL.Query().Get("wait") != "" {
		s.polls.Add(1)
	}
	resp, err := s.next.RoundTrip(req)
	if err != nil {
		s.failures.Add(1)
	}
	return resp, err
}

func (s *switchboard) route(serverURL string) {
	host := strings.TrimPrefix(serverURL, "http://")
	s.target.Store(&host)
}

// TestHookEventsResumesOnAnotherReplica: the replica serving the iterator
// goes away during a long-poll; the iterator rides out the network errors
// and carries on through another replica on the same Redis, with nothing
// lost and nothing delivered twice.
func TestHookEventsResumesOnAnotherReplica(t *testing.T) {
	t.Parallel()
	replicas := apptest.Replicas(t, 2, withTestDefaults(app.Config{}))
	a, b := replicas[0], replicas[1]
	ctx := testContext(t)
	out := outsider(t)

	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	sw := &switchboard{next: &checkingTransport{t: t, next: tr}}
	sw.route(a.URL)
	c := client.New(a.URL, apptest.Token(t, "alice"), client.WithHTTPClient(&http.Client{Timeout: 20 * time.Second, Transport: sw}))
	_, h := newHook(t, ctx, c)
	postJSON(t, ctx, out, callbackOn(t, a.URL, h.URL), `{"n":1}`)

	iterCtx, stop := context.WithTimeout(ctx, 20*time.Second) // a broken iterator fails the test, not hangs it
	defer stop()
	events, errs, ended := make(chan client.HookEvent), make(chan error, 1), make(chan struct{})
	go func() {
		defer close(ended)
		opts := client.HookEventsOptions{Consumer: "w", Wait: 10 * time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
		for ev, err := range c.Hook(h.HookID).Events(iterCtx, opts) {
			if err != nil {
				errs <- err
				return
			}
			select {
			case events <- ev:
			case <-iterCtx.Done():
			}
		}
	}()

	if ev := recv(t, events, "event 1"); ev.Seq != 1 || ev.DeliveryCount != 1 {
		t.Fatalf("event 1: %+v", ev)
	}
	waitUntil(t, "the iterator to long-poll replica a", func() bool { return sw.polls.Load() >= 2 })
	a.Stop(t)
	waitUntil(t, "the iterator to fail to reach replica a", func() bool { return sw.failures.Load() >= 1 })
	sw.route(b.URL)
	postJSON(t, ctx, out, callbackOn(t, b.URL, h.URL), `{"n":2}`)

	select {
	case ev := <-events:
		if ev.Seq != 2 || ev.DeliveryCount != 1 || ev.Body != `{"n":2}` {
			t.Fatalf("event 2: %+v", ev)
		}
	case err := <-errs:
		t.Fatalf("Events yielded %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for event 2 through replica b")
	}
	stop()
	recv(t, ended, "the iterator to end")
	wantDrained(t, ctx, c, h.HookID) // event 1 was acked through a, event 2 through b
}

// TestHookEventsEndsOnPermanentErrors: a hook that is gone or not the
// caller's, a refused token, or a closed hook with nothing left end the
// loop with that error, yielded once.
func TestHookEventsEndsOnPermanentErrors(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, withTestDefaults(app.Config{}))
	e := newEnv(t, srv)
	out := outsider(t)
	opts := client.HookEventsOptions{Consumer: "w", Wait: 200 * time.Millisecond, MinBackoff: 10 * time.Millisecond}

	// drainTo runs the loop to its end, letting every body return; it checks
	// that the loop yielded one error, with status and code, and gives back
	// the events it yielded.
	drainTo := func(t *testing.T, ctx context.Context, c *client.Client, id string, status int, code string) []client.HookEvent {
		t.Helper()
		var evs []client.HookEvent
		var errs []error
		for ev, err := range c.Hook(id).Events(ctx, opts) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			evs = append(evs, ev)
		}
		if len(errs) != 1 {
			t.Fatalf("yielded errors %v, want one", errs)
		}
		wantCode(t, errs[0], status, code)
		return evs
	}

	t.Run("unknown hook", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t) // its own minute: a parallel subtest may wait long for its turn
		if evs := drainTo(t, ctx, e.alice, "hook_doesnotexist", http.StatusNotFound, client.CodeNotFound); len(evs) != 0 {
			t.Errorf("events %+v", evs)
		}
	})
	t.Run("somebody else's hook", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t) // its own minute: a parallel subtest may wait long for its turn
		_, h := newHook(t, ctx, e.alice)
		drainTo(t, ctx, e.bob, h.HookID, http.StatusNotFound, client.CodeNotFound)
	})
	t.Run("refused token", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t) // its own minute: a parallel subtest may wait long for its turn
		_, h := newHook(t, ctx, e.alice)
		drainTo(t, ctx, e.alice.WithToken("not-a-jwt"), h.HookID, http.StatusUnauthorized, client.CodeUnauthorized)
	})
	t.Run("closed", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t) // its own minute: a parallel subtest may wait long for its turn
		_, h := newHook(t, ctx, e.alice)
		postJSON(t, ctx, out, callbackOn(t, srv.URL, h.URL), `{"n":1}`)
		if _, err := e.alice.CloseHook(ctx, h.HookID); err != nil {
			t.Fatal(err)
		}
		if evs := drainTo(t, ctx, e.alice, h.HookID, http.StatusGone, client.CodeHookClosed); len(evs) != 1 || evs[0].Seq != 1 {
			t.Errorf("a closed hook's events are still read: got %+v", evs)
		}
		wantDrained(t, ctx, e.alice, h.HookID)
	})
	t.Run("task ended", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t) // its own minute: a parallel subtest may wait long for its turn
		task, h := newHook(t, ctx, e.alice)
		postJSON(t, ctx, out, callbackOn(t, srv.URL, h.URL), `{"n":1}`)
		if _, err := e.alice.Complete(ctx, task.TaskID, "done"); err != nil {
			t.Fatal(err)
		}
		if evs := drainTo(t, ctx, e.alice, h.HookID, http.StatusGone, client.CodeHookClosed); len(evs) != 1 {
			t.Errorf("events %+v", evs)
		}
	})
	t.Run("context ends", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t) // its own minute: a parallel subtest may wait long for its turn
		_, h := newHook(t, ctx, e.alice)
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		for ev, err := range e.alice.Hook(h.HookID).Events(short, client.HookEventsOptions{Wait: 30 * time.Second}) {
			t.Fatalf("yielded %+v, %v from an empty hook", ev, err)
		}
		if short.Err() == nil {
			t.Fatal("the loop ended before its context")
		}
	})
}

// TestHookEventsEndsWhenItsTaskCompletes: the iterator delivers what was
// queued, then ends with hook_closed as soon as the task completes, while
// it long-polls with nothing to read: the read that says closed ends it,
// with no wait sat out and no extra call.
func TestHookEventsEndsWhenItsTaskCompletes(t *testing.T) {
	t.Parallel()
	// No safety-net re-read within a wait: only the close can end it early.
	srv := apptest.Standalone(t, withTestDefaults(app.Config{RecheckInterval: time.Minute}))
	ctx := testContext(t)
	e := newEnv(t, srv)
	task, h := newHook(t, ctx, e.alice)
	cb := callbackOn(t, srv.URL, h.URL)
	postNumbered(t, ctx, outsider(t), cb, 2)

	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	calls := &failingTransport{next: &checkingTransport{t: t, next: tr}, calls: map[string][]time.Time{}}
	c := client.New(srv.URL, apptest.Token(t, "alice"), client.WithHTTPClient(&http.Client{Timeout: 60 * time.Second, Transport: calls}))

	// The iteration must end well before its 30 s wait would run out.
	iterCtx, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	events, errs := make(chan client.HookEvent, 10), make(chan error, 10)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for ev, err := range c.Hook(h.HookID).Events(iterCtx, client.HookEventsOptions{Consumer: "w", Wait: 30 * time.Second}) {
			if err != nil {
				errs <- err
				continue
			}
			events <- ev
		}
	}()
	for n := int64(1); n <= 2; n++ {
		if ev := recv(t, events, fmt.Sprintf("event %d", n)); ev.Seq != n || ev.DeliveryCount != 1 {
			t.Fatalf("event %d: %+v", n, ev)
		}
	}
	// The queue is drained: the iterator acks and long-polls again.
	waitUntil(t, "the iterator to read again", func() bool { return len(calls.callTimes("events")) >= 2 })
	if _, err := e.alice.Complete(ctx, task.TaskID, "done"); err != nil {
		t.Fatal(err)
	}
	recv(t, ended, "the iterator to end")
	if len(events) != 0 {
		t.Fatalf("yielded %+v after the task completed", <-events)
	}
	if len(errs) != 1 {
		t.Fatalf("yielded %d errors, want hook_closed (none: its context ran out first)", len(errs))
	}
	closed := wantCode(t, <-errs, http.StatusGone, client.CodeHookClosed)
	if !strings.Contains(closed.Message, client.CloseReasonTaskTerminal) {
		t.Errorf("the error does not say why: %v", closed)
	}
	if n := len(calls.callTimes(h.HookID)); n != 0 {
		t.Errorf("the iterator read the hook itself %d times: the batch says it is closed", n)
	}
	if n := len(calls.callTimes("events")); n != 2 {
		t.Errorf("%d reads, want 2: the batch of both events, then the one that said closed", n)
	}
	wantDrained(t, ctx, e.alice, h.HookID)
}

// TestHookEventBytes: the body comes back whichever field carries it.
func TestHookEventBytes(t *testing.T) {
	t.Parallel()
	var ev client.HookEvent
	if err := json.Unmarshal([]byte(`{"eventId":"1-0","seq":1,"bodyBase64":"/wA=","deliveryCount":2,"receivedAt":"2025-01-02T03:04:05.678Z"}`), &ev); err != nil {
		t.Fatal(err)
	}
	if b, err := ev.Bytes(); err != nil || !bytes.Equal(b, []byte{0xff, 0}) || ev.DeliveryCount != 2 || ev.ReceivedAt.Nanosecond() != 678e6 {
		t.Errorf("%+v: %v, %v", ev, b, err)
	}
	ev = client.HookEvent{Body: "héllo"}
	if b, err := ev.Bytes(); err != nil || string(b) != "héllo" {
		t.Errorf("Bytes: %q, %v", b, err)
	}
	ev = client.HookEvent{EventID: "1-0", BodyBase64: "%%%"}
	if _, err := ev.Bytes(); err == nil {
		t.Error("a bad bodyBase64 decoded")
	}
}

// BenchmarkHookIteratorLatency posts b.N events to a hook's callback URL at
// 1,000 a second and measures, for each, from the 202 to its arrival in the
// loop body of Hook(id).Events, which acks it when the body returns.
func BenchmarkHookIteratorLatency(b *testing.B) {
	srv := apptest.Standalone(b, app.Config{HookRateLimit: 1000, HookBurst: 1 << 30, LogLevel: "error"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl := srv.Client(b, "bench")
	ses := apptest.Session(b, ctx, cl)
	hook, err := cl.CreateHook(ctx, client.CreateHookInput{SessionID: ses.SessionID})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	accepted := make(map[int]time.Time, b.N)
	arrived := make(map[int]time.Time, b.N)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range cl.Hook(hook.HookID).Events(ctx, client.HookEventsOptions{Count: 100, Wait: 5 * time.Second}) {
			if err != nil {
				b.Error(err)
				return
			}
			var body struct{ N int }
			_ = json.Unmarshal([]byte(ev.Body), &body)
			mu.Lock()
			arrived[body.N] = time.Now()
			n := len(arrived)
			mu.Unlock()
			if n == b.N {
				return
			}
		}
	}()
	b.ResetTimer()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := range b.N {
		<-tick.C
		payload, _ := json.Marshal(map[string]int{"n": i})
		if _, err := cl.Post(ctx, hook.URL, payload, nil); err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		accepted[i] = time.Now()
		mu.Unlock()
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		b.Fatal("the iterator did not get every event")
	}
	b.StopTimer()
	var ds []time.Duration
	for i, at := range accepted {
		if got, ok := arrived[i]; ok {
			ds = append(ds, max(got.Sub(at), 0)) // the body may see an event before its poster reads the 202
		}
	}
	slices.Sort(ds)
	ms := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
