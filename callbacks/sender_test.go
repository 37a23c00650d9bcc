package callbacks

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskhook/taskhook/netguard"
	"github.com/taskhook/taskhook/stdwebhooks"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var testBody = []byte(`{"id":"1700000000000-0","type":"task.status","sessionId":"ses_1","data":{"note":"body-marker"}}`)

// received is what a test endpoint saw of one request.
type received struct {
	method string
	header http.Header
	body   []byte
}

// endpoint is a real HTTP server on loopback that records what it receives
// and answers with respond.
type endpoint struct {
	*httptest.Server
	mu   sync.Mutex
	got  []received
	hits atomic.Int64
}

func newEndpoint(t *testing.T, respond http.HandlerFunc) *endpoint {
	t.Helper()
	e := &endpoint{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.got = append(e.got, received{method: r.Method, header: r.Header.Clone(), body: body})
		e.mu.Unlock()
		respond(w, r)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *endpoint) requests() []received {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]received(nil), e.got...)
}

func answer(status int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
	}
}

// newTestSender returns a Sender that may reach loopback, the address of
// every test endpoint, unless cfg says otherwise through a Guard of its own.
func newTestSender(t *testing.T, cfg SenderConfig) *Sender {
	t.Helper()
	s := NewSender(cfg)
	t.Cleanup(s.CloseIdleConnections)
	return s
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func delivery(url string) Delivery {
	return Delivery{URL: url, Secret: testSecret, MessageID: "1700000000000-0", Body: testBody, At: testNow}
}

func TestSendOutcomeOfEachAnswer(t *testing.T) {
	type sendCase struct {
		name       string
		respond    http.HandlerFunc
		kind       OutcomeKind
		status     int
		retryAfter time.Duration
	}
	cases := []sendCase{
		{"503 with Retry-After", answer(503, "Retry-After", "7"), Retry, 503, 7 * time.Second},
		{"429 with Retry-After seconds", answer(429, "Retry-After", "120"), Retry, 429, 120 * time.Second},
		{"429 with Retry-After date", answer(429, "Retry-After", testNow.Add(90*time.Second).Format(http.TimeFormat)), Retry, 429, 90 * time.Second},
		{"429 with Retry-After in the past", answer(429, "Retry-After", testNow.Add(-time.Hour).Format(http.TimeFormat)), Retry, 429, 0},
		{"429 with Retry-After of a week", answer(429, "Retry-After", "604800"), Retry, 429, time.Hour},
		{"429 with Retry-After garbage", answer(429, "Retry-After", "soon"), Retry, 429, 0},
	}
	// A plain answer of each status, with no header.
	for _, plain := range []struct {
		kind     OutcomeKind
		statuses []int
	}{
		{Delivered, []int{200, 201, 204}},
		{Retry, []int{500, 502, 503, 429, 408}},
		{Dead, []int{404, 410}},
		{Dropped, []int{400, 401, 403, 413, 422, 304}},
	} {
		for _, status := range plain.statuses {
			cases = append(cases, sendCase{strconv.Itoa(status), answer(status), plain.kind, status, 0})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEndpoint(t, tc.respond)
			s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}})
			s.now = func() time.Time { return testNow }
			got := s.Send(context.Background(), delivery(e.URL+"/notify"))
			if got.Kind != tc.kind || got.Status != tc.status || got.RetryAfter != tc.retryAfter {
				t.Errorf("Send = %+v, want kind %v, status %d, RetryAfter %v", got, tc.kind, tc.status, tc.retryAfter)
			}
			assertSafeReason(t, got)
			if n := e.hits.Load(); n != 1 {
				t.Errorf("endpoint called %d times, want 1", n)
			}
		})
	}
}

func TestSendSignsTheStandardWebhooksWay(t *testing.T) {
	e := newEndpoint(t, answer(204))
	s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}, UserAgent: "taskhook-test/1"})
	first, second := delivery(e.URL+"/notify?k=v"), delivery(e.URL+"/notify?k=v")
	second.At = testNow.Add(2 * time.Minute) // a retry: fresh timestamp, same id
	for _, d := range []Delivery{first, second} {
		if o := s.Send(context.Background(), d); o.Kind != Delivered {
			t.Fatalf("Send = %+v", o)
		}
	}

	reqs := e.requests()
	if len(reqs) != 2 {
		t.Fatalf("endpoint got %d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		at := []time.Time{first.At, second.At}[i]
		if r.method != http.MethodPost {
			t.Errorf("method %s, want POST", r.method)
		}
		if !bytes.Equal(r.body, testBody) {
			t.Errorf("body %q, want %q", r.body, testBody)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		if ua := r.header.Get("User-Agent"); ua != "taskhook-test/1" {
			t.Errorf("User-Agent %q", ua)
		}
		if id := r.header.Get("webhook-id"); id != first.MessageID {
			t.Errorf("webhook-id %q, want the message id %q", id, first.MessageID)
		}
		if err := stdwebhooks.Verify(testSecret, r.header, r.body, at, 0); err != nil {
			t.Errorf("request %d does not verify: %v", i, err)
		}
	}
	if reqs[0].header.Get("webhook-timestamp") == reqs[1].header.Get("webhook-timestamp") {
		t.Error("a retry carries the first attempt's timestamp")
	}
}

func TestSendZeroAtSignsWithTheClock(t *testing.T) {
	e := newEndpoint(t, answer(200))
	s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}})
	s.now = func() time.Time { return testNow }
	d := delivery(e.URL)
	d.At = time.Time{}
	if o := s.Send(context.Background(), d); o.Kind != Delivered {
		t.Fatalf("Send = %+v", o)
	}
	r := e.requests()[0]
	if err := stdwebhooks.Verify(testSecret, r.header, r.body, testNow, time.Second); err != nil {
		t.Errorf("not signed at the Sender's clock: %v", err)
	}
}

func TestSendDoesNotFollowRedirects(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		elsewhere := newEndpoint(t, answer(200))
		e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+"/stolen", status)
		})
		s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}})
		got := s.Send(context.Background(), delivery(e.URL))
		if got.Kind != Dropped || got.Status != status {
			t.Errorf("%d: Send = %+v, want Dropped with status %d", status, got, status)
		}
		if n := elsewhere.hits.Load(); n != 0 {
			t.Errorf("%d: the redirect target was called %d times", status, n)
		}
	}
}

func TestSendTimesOutOnAnEndpointThatNeverAnswers(t *testing.T) {
	release := make(chan struct{})
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release) // before e.Close, which waits for the handler
	s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}, Timeout: 200 * time.Millisecond})
	got := s.Send(context.Background(), delivery(e.URL))
	if got.Kind != Retry || got.Status != 0 || got.Reason != "timeout" {
		t.Errorf("Send = %+v, want Retry for a timeout", got)
	}
}

func TestSendRetriesAClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}})
	got := s.Send(context.Background(), delivery("http://"+addr+"/notify"))
	if got.Kind != Retry || got.Status != 0 || got.Reason != "connection refused" {
		t.Errorf("Send = %+v, want Retry for a refused connection", got)
	}
}

func TestSendRetriesAnAnswerCutShort(t *testing.T) {
	e := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}})
	if got := s.Send(context.Background(), delivery(e.URL)); got.Kind != Retry || got.Status != 0 {
		t.Errorf("Send = %+v, want Retry", got)
	}
}

func TestSendRetriesAnUntrustedCertificate(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	srv.Config.ErrorLog = quietLog()
	s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}})
	got := s.Send(context.Background(), delivery(srv.URL))
	if got.Kind != Retry || got.Reason != "TLS handshake failed" {
		t.Errorf("Send = %+v, want Retry for a TLS failure", got)
	}
	if hits.Load() != 0 {
		t.Error("the request reached a server whose certificate is not trusted")
	}
}

func TestSendRetriesWhenTheCallerGivesUp(t *testing.T) {
	e := newEndpoint(t, answer(200))
	s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := s.Send(ctx, delivery(e.URL)); got.Kind != Retry {
		t.Errorf("Send = %+v, want Retry", got)
	}
}

// The guard refuses loopback at connect time: the endpoint is dead, and the
// server never sees a byte.
func TestSendRefusedByTheGuardAtConnect(t *testing.T) {
	e := newEndpoint(t, answer(200))
	_, port, _ := net.SplitHostPort(e.Listener.Addr().String())
	s := newTestSender(t, SenderConfig{})
	for _, url := range []string{e.URL, "http://localhost:" + port + "/notify"} {
		got := s.Send(context.Background(), delivery(url))
		if got.Kind != Dead || got.Reason != "target address not allowed" || got.Status != 0 {
			t.Errorf("%s: Send = %+v, want Dead, target address not allowed", url, got)
		}
	}
	if n := e.hits.Load(); n != 0 {
		t.Errorf("endpoint called %d times through the guard", n)
	}
}

func TestSendRefusesWhatCannotBeSent(t *testing.T) {
	e := newEndpoint(t, answer(200))
	s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}})
	cases := []struct {
		name   string
		spoil  func(d *Delivery)
		kind   OutcomeKind
		reason string
	}{
		{"URL not http", func(d *Delivery) { d.URL = "ftp://example.com/" }, Dead, "target URL not allowed"},
		{"URL with user info", func(d *Delivery) { d.URL = strings.Replace(d.URL, "http://", "http://u:p@", 1) }, Dead, "target URL not allowed"},
		{"secret not base64", func(d *Delivery) { d.Secret = "whsec_***" }, Dead, "endpoint secret not usable"},
		{"no secret", func(d *Delivery) { d.Secret = "" }, Dead, "endpoint secret not usable"},
		{"no message id", func(d *Delivery) { d.MessageID = "" }, Dropped, "message id not usable"},
		{"message id with a newline", func(d *Delivery) { d.MessageID = "evt_1\r\nX-Injected: 1" }, Dropped, "message id not usable"},
		{"message id too long", func(d *Delivery) { d.MessageID = strings.Repeat("a", 1025) }, Dropped, "message id not usable"},
	}
	for _, tc := range cases {
		d := delivery(e.URL)
		tc.spoil(&d)
		got := s.Send(context.Background(), d)
		if got.Kind != tc.kind || got.Reason != tc.reason {
			t.Errorf("%s: Send = %+v, want %v, %q", tc.name, got, tc.kind, tc.reason)
		}
	}
	if n := e.hits.Load(); n != 0 {
		t.Errorf("endpoint called %d times", n)
	}
}

// countingBody counts what is read of a response body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

type countingTransport struct {
	base http.RoundTripper
	read *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, c.read}
	}
	return resp, err
}

func TestSendReadsNoMoreThanMaxResponseBytes(t *testing.T) {
	// The endpoint answers 200 and then streams without end, until the
	// client goes away.
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	const maxBytes = 1000
	s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}, MaxResponseBytes: maxBytes})
	var read atomic.Int64
	s.client.Transport = countingTransport{base: s.client.Transport, read: &read}
	got := s.Send(context.Background(), delivery(e.URL))
	if got.Kind != Delivered {
		t.Fatalf("Send = %+v, want Delivered", got)
	}
	if n := read.Load(); n > maxBytes {
		t.Errorf("read %d bytes of the answer, want at most %d", n, maxBytes)
	}
}

func TestParseRetryAfter(t *testing.T) {
	cases := []struct {
		value string
		want  time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"1", time.Second},
		{"3600", time.Hour},
		{"3601", time.Hour},
		{"99999999999999999999", time.Hour},
		{"-5", 0},
		{"1.5", 0},
		{" 5", 0},
		{testNow.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{testNow.Add(48 * time.Hour).Format(http.TimeFormat), time.Hour},
		{testNow.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"Sunday, 01-Mar-26 12:00:10 GMT", 10 * time.Second}, // RFC 850, still accepted
		{"tomorrow", 0},
	}
	for _, tc := range cases {
		if got := parseRetryAfter(tc.value, testNow); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.value, got, tc.want)
		}
	}
}

func TestOutcomeKindString(t *testing.T) {
	for k, want := range map[OutcomeKind]string{Delivered: "delivered", Retry: "retry", Dead: "dead", Dropped: "dropped", 0: "unknown"} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", k, got, want)
		}
	}
}

// assertSafeReason checks that a reason says something short and quotes
// neither the secret nor the body.
func assertSafeReason(t *testing.T, o Outcome) {
	t.Helper()
	switch {
	case o.Reason == "" || len(o.Reason) > 64:
		t.Errorf("reason %q: want a short one", o.Reason)
	case strings.Contains(o.Reason, strings.TrimPrefix(testSecret, "whsec_")), strings.Contains(o.Reason, "body-marker"):
		t.Errorf("reason %q quotes the secret or the body", o.Reason)
	}
}

// quietLog keeps a test server's expected complaints (a TLS handshake the
// client abandoned) out of the test output.
func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }
