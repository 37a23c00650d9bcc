package parking_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/parking"
	"github.com/taskhook/taskhook/store/storetest"
)

// parkingServe serves handler through a started Lot with cfg, and returns
// the address and the metrics; both stop when the test ends.
func parkingServe(t *testing.T, cfg parking.Config, handler http.Handler) (string, *metrics.Metrics) {
	t.Helper()
	m := metrics.New()
	return serveLot(t, parking.New(cfg, m), handler), m
}

// serveLot starts lot and serves handler through it, and returns the
// address; both stop when the test ends.
func serveLot(t *testing.T, lot *parking.Lot, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := lot.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lot.Listener(ln)) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
		if err := lot.Stop(ctx); err != nil {
			t.Errorf("Lot.Stop: %v", err)
		}
	})
	return ln.Addr().String()
}

func dialParking(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second)) // a test that fails does not hang
	return c
}

// A new connection costs the server no goroutine until its client sends a
// request: many silent ones cost fewer goroutines than half their number,
// where net/http would give each its own. Then each request is served.
//
// Not parallel: it counts the process's goroutines.
func TestParkingHoldsNewConnectionsUntilTheyAsk(t *testing.T) {
	const n = 200
	addr, m := parkingServe(t, parking.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "served "+r.URL.Path)
	}))
	before := runtime.NumGoroutine()
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dialParking(t, addr)
	}
	storetest.WaitFor(t, "every connection to be held", func() bool { return testutil.ToFloat64(m.ParkedIdle) == n })
	storetest.WaitFor(t, "fewer goroutines than half the connections", func() bool {
		return runtime.NumGoroutine()-before < n/2
	})
	for i, c := range conns {
		if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: parking\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || string(body) != "served /x" {
			t.Fatalf("connection %d: %d %q", i, res.StatusCode, body)
		}
	}
	if held := testutil.ToFloat64(m.ParkedIdle); held != 0 {
		t.Fatalf("%v connections still held after their requests, want 0", held)
	}
}

// A new connection whose client stays silent is closed after the header
// timeout, as net/http closes one that sends no request.
func TestParkingClosesASilentConnection(t *testing.T) {
	t.Parallel()
	addr, m := parkingServe(t, parking.Config{HeaderTimeout: 10 * time.Millisecond}, http.NotFoundHandler())
	c := dialParking(t, addr)
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("read %d bytes, %v; want the connection closed", n, err)
	}
	if held := testutil.ToFloat64(m.ParkedIdle); held != 0 {
		t.Fatalf("%v connections held after the close, want 0", held)
	}
}

// A request whose handler has read its body to the end may be held: its
// answer comes later, and the client's next request, sent on its heels in
// the same write, is served after it. One whose body is not read is not
// held.
func TestParkingHoldsARequestWhoseBodyWasRead(t *testing.T) {
	t.Parallel()
	lot := parking.New(parking.Config{}, metrics.New())
	answers := make(chan func(), 1)
	addr := serveLot(t, lot, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/read" {
			if _, ok := lot.TakeRead(w, r); ok {
				t.Error("a request whose body was not read was held")
			}
			_, _ = io.WriteString(w, "served "+r.URL.Path)
			return
		}
		body, _ := io.ReadAll(r.Body)
		held, ok := lot.TakeRead(w, r)
		if !ok {
			_, _ = io.WriteString(w, "not held")
			return
		}
		answers <- func() {
			held.Answer(func(w http.ResponseWriter) bool {
				_, _ = io.WriteString(w, "held "+string(body))
				return true
			})
		}
	}))
	c := dialParking(t, addr)
	if _, err := io.WriteString(c, "POST /read HTTP/1.1\r\nHost: parking\r\nContent-Length: 5\r\n\r\nhello"+
		"POST /unread HTTP/1.1\r\nHost: parking\r\nContent-Length: 3\r\n\r\nabc"); err != nil {
		t.Fatal(err)
	}
	(<-answers)()
	br := bufio.NewReader(c)
	for _, want := range []string{"held hello", "served /unread"} {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || string(body) != want {
			t.Fatalf("answered %d %q, want %q", res.StatusCode, body, want)
		}
	}
}
