package handlers_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/store/storetest"
)

// The answers net/http gives by itself, before any handler runs, carry an
// X-Request-Id like every other answer, and the id is in the server's log.
func TestServerOwnAnswersCarryARequestID(t *testing.T) {
	t.Parallel()
	e := startEnv(t, storetest.Embedded(t), app.Config{})
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	rqID := regexp.MustCompile(`^rq_[0-9a-f]{24}$`)
	for _, c := range []struct {
		name    string
		request string
		status  int
	}{
		{"malformed request line", "GARBAGE\r\n\r\n", http.StatusBadRequest},
		{"malformed header", "GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n", http.StatusBadRequest},
		{"bad Host header", "GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", http.StatusBadRequest},
		{"oversized header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20+8<<10) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge},
		{"unknown transfer coding", "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: zip\r\n\r\n",
			http.StatusNotImplemented},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, c.request); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			id := res.Header.Get("X-Request-Id")
			if res.StatusCode != c.status || !rqID.MatchString(id) {
				t.Fatalf("%d, X-Request-Id %q; want %d with an id", res.StatusCode, id, c.status)
			}
			storetest.WaitFor(t, "the id in the log", func() bool { return strings.Contains(e.srv.Logs.String(), id) })
		})
	}
	// A well-formed request keeps the id it sent, and only that one.
	a := e.do(t, "GET", "/healthz", "", nil, "X-Request-Id", "trace-1")
	if got := a.header.Values("X-Request-Id"); len(got) != 1 || got[0] != "trace-1" {
		t.Errorf("X-Request-Id of a good request: %q", got)
	}
}
