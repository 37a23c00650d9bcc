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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	p := parking.New(cfg, m)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(p.Listener(ln)) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
		if err := p.Stop(ctx); err != nil {
			t.Errorf("Lot.Stop: %v", err)
		}
	})
	return ln.Addr().String(), m
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
