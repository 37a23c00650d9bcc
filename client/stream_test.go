package client_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// streamFront stands in front of a server like a load balancer. It passes
// every request on, but decides what each event stream connection gets:
// the first is cut after cutAfter events, as a dropped connection would be,
// the next ones answer 503 store_unavailable as the server does while its
// Redis is away, and the rest pass through.
type streamFront struct {
	upstream *url.URL
	next     *http.Transport
	cutAfter int
	outages  int

	mu          sync.Mutex
	connections []string // the Last-Event-ID of each stream connection
}

func (f *streamFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		proxy := httputil.NewSingleHostReverseProxy(f.upstream)
		proxy.Transport = f.next
		proxy.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	f.connections = append(f.connections, r.Header.Get("Last-Event-ID"))
	n := len(f.connections)
	f.mu.Unlock()
	if n > 1 && n <= 1+f.outages {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Retry-After", "1")
		w.Header().Set("X-Request-Id", "front")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"code":"store_unavailable","message":"the store is unavailable; retry shortly"}}`)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, f.upstream.String()+r.URL.RequestURI(), nil)
	if err != nil {
		panic(err)
	}
	req.Header = r.Header.Clone()
	resp, err := f.next.RoundTrip(req)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	events := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		_, _ = io.WriteString(w, line+"\n")
		w.(http.Flusher).Flush()
		if line == "" && n == 1 {
			if events++; events == f.cutAfter {
				panic(http.ErrAbortHandler) // the connection drops mid-stream
			}
		}
	}
}

func (f *streamFront) lastEventIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.connections)
}

// TestStreamResumesAfterOutages: a stream whose connection drops, and whose
// reconnects get 503 for a while, carries on from the last event it
// delivered: every event of the log arrives once, in order, including
// those appended while it was away and after.
func TestStreamResumesAfterOutages(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, withTestDefaults(app.Config{}))
	upstream, _ := url.Parse(srv.URL)
	next := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(next.CloseIdleConnections)
	front := &streamFront{upstream: upstream, next: next, cutAfter: 2, outages: 2}
	lb := httptest.NewServer(front)
	t.Cleanup(lb.Close)
	ctx := testContext(t)
	direct := newClient(t, srv.URL, apptest.Token(t, "alice"))
	task := newTask(t, ctx, direct)
	for i := range 3 {
		if _, err := direct.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String(strings.Repeat("x", i+1))}); err != nil {
			t.Fatal(err)
		}
	}

	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	viaFront := client.New(lb.URL, apptest.Token(t, "alice"), client.WithHTTPClient(&http.Client{Transport: tr}))
	var got []client.Event
	for ev, err := range viaFront.StreamTaskEvents(ctx, task.TaskID, "") {
		if err != nil {
			t.Fatalf("after %d events the stream yielded %v", len(got), err)
		}
		got = append(got, ev)
		switch ev.Revision {
		case 4: // everything written before the stream started has arrived: write more
			if _, err := direct.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("later")}); err != nil {
				t.Fatal(err)
			}
			if _, err := direct.Complete(ctx, task.TaskID, "done"); err != nil {
				t.Fatal(err)
			}
		}
		if ev.Type == client.EventTaskTerminal {
			break
		}
	}

	log, err := direct.TaskEvents(ctx, task.TaskID, client.EventsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var want, ids []string
	for _, ev := range log.Events {
		want = append(want, ev.ID)
	}
	for i, ev := range got {
		ids = append(ids, ev.ID)
		if ev.Revision != int64(i+1) {
			t.Errorf("event %d (%s) has revision %d", i, ev.ID, ev.Revision)
		}
	}
	if len(want) != 6 || !slices.Equal(ids, want) {
		t.Fatalf("streamed %v, want the log %v", ids, want)
	}
	// One cut connection, two 503s and one that lasted, each reconnect
	// resuming after the second event.
	if conns := front.lastEventIDs(); !slices.Equal(conns, []string{"", want[1], want[1], want[1]}) {
		t.Fatalf("stream connections sent Last-Event-ID %q, want none, then %q three times", conns, want[1])
	}
}

// TestStreamEndsOnFinalErrors: an answer that a reconnect cannot mend ends
// the stream with its error, yielded once; 502, 503, 504 and a 429 with
// Retry-After do not.
func TestStreamEndsOnFinalErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		answers []int // the status of each connection; the last one is final
		code    string
	}{
		{"not found", []int{503, 502, 504, 404}, client.CodeNotFound},
		{"unauthorized", []int{401}, client.CodeUnauthorized},
		{"rate limited without Retry-After", []int{429}, client.CodeRateLimited},
		{"internal error", []int{503, 500}, client.CodeInternal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			calls := 0
			lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				status := c.answers[min(calls, len(c.answers)-1)]
				calls++
				mu.Unlock()
				code := map[int]string{404: client.CodeNotFound, 401: client.CodeUnauthorized, 429: client.CodeRateLimited,
					500: client.CodeInternal}[status]
				if code == "" {
					w.Header().Set("Retry-After", "0")
					code = client.CodeStoreUnavailable
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = io.WriteString(w, `{"error":{"code":"`+code+`","message":"simulated"}}`)
			}))
			t.Cleanup(lb.Close)
			tr := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(tr.CloseIdleConnections)
			c2 := client.New(lb.URL, "tok", client.WithHTTPClient(&http.Client{Transport: tr}))
			ctx := testContext(t)
			var errs []error
			for ev, err := range c2.StreamSessionEvents(ctx, "ses_1", "") {
				if err == nil {
					t.Fatalf("yielded event %+v", ev)
				}
				errs = append(errs, err)
			}
			if ctx.Err() != nil || len(errs) != 1 || !client.IsCode(errs[0], c.code) {
				t.Fatalf("yielded %v (context: %v), want one %s", errs, ctx.Err(), c.code)
			}
			mu.Lock()
			defer mu.Unlock()
			if calls != len(c.answers) {
				t.Fatalf("%d connections, want %d", calls, len(c.answers))
			}
		})
	}
}
