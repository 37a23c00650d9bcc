package handlers_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// rawAnswer is one answer read off a raw connection, and whether the
// server closed the connection after it.
type rawAnswer struct {
	status int
	header http.Header
	body   []byte
	closed bool
	err    error
}

func (a rawAnswer) code() string {
	var e struct{ Error struct{ Code string } }
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Code
}

func (a rawAnswer) String() string {
	return fmt.Sprintf("%d %s (closed %v, err %v)", a.status, a.body, a.closed, a.err)
}

// rawBound bounds every raw exchange: reaching it means the server kept a
// connection it should have answered or closed.
const rawBound = 30 * time.Second

// rawExchange sends a request head over a new connection, then has send
// (if any) write the body while the answer is read; send returns when stop
// is closed. It reads one answer and then waits for the server to close the
// connection.
func rawExchange(addr, head string, send func(c net.Conn, stop <-chan struct{})) rawAnswer {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return rawAnswer{err: err}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(rawBound))
	if _, err := io.WriteString(c, head+"\r\n\r\n"); err != nil {
		return rawAnswer{err: err}
	}
	stop, sent := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sent)
		if send != nil {
			send(c, stop)
		}
	}()
	a := readRawAnswer(bufio.NewReader(c))
	close(stop)
	c.Close() // ends a write the server no longer reads
	<-sent
	return a
}

func readRawAnswer(br *bufio.Reader) rawAnswer {
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return rawAnswer{err: err}
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	a := rawAnswer{status: res.StatusCode, header: res.Header, body: body, err: err}
	if err != nil {
		return a
	}
	_, err = br.ReadByte()
	if a.closed = errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET); !a.closed {
		a.err = fmt.Errorf("the connection stayed open: %v", err)
	}
	return a
}

// gauge is the value of an unlabelled metric of the server.
func gauge(t *testing.T, e *hookEnv, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(scrape(t, e), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in the metrics", name)
	return 0
}

// Bodies of unknown length (chunked) are read as they come, up to the
// limit; a body declared above the limit is refused before it is sent; and
// every reservation of the body budget is given back.
func TestBodiesOfEveryLength(t *testing.T) {
	t.Parallel()
	e := startEnv(t, storetest.Embedded(t), app.Config{MaxBodyBytes: 64 << 10, MaxInflightBodyBytes: 64 << 10})
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	post := func(body io.Reader) answer {
		t.Helper()
		req, err := http.NewRequest("POST", e.srv.URL+"/v1/sessions", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.alice)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		a := answer{status: res.StatusCode, header: res.Header}
		a.raw, _ = io.ReadAll(res.Body)
		_ = json.Unmarshal(a.raw, &a.body)
		return a
	}
	// io.MultiReader hides the length: the client sends the body chunked.
	metadata := `{"metadata":{"x":"` + strings.Repeat("a", 60<<10) + `"}}`
	created := e.must(t, 201, post(io.MultiReader(strings.NewReader(metadata))))
	if len(created.str("metadata", "x")) != 60<<10 {
		t.Fatalf("the chunked body did not arrive whole: %d bytes of metadata", len(created.str("metadata", "x")))
	}
	wantError(t, post(io.MultiReader(strings.NewReader(metadata+strings.Repeat(" ", 8<<10)))), 413, "payload_too_large")
	a := rawExchange(addr, "POST /v1/sessions HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer "+e.alice+
		"\r\nContent-Length: 65537", nil)
	if a.status != 413 || a.code() != "payload_too_large" || !a.closed {
		t.Fatalf("a body declared above the limit: %v", a)
	}
	storetest.WaitFor(t, "every body reservation to be released", func() bool {
		return gauge(t, e, "taskhook_http_body_bytes_reserved") == 0
	})
}

// A replica that took posts for a hook closed through another replica learns
// it from the first refused post; from then on it refuses the hook's posts
// before their bodies are read.
func TestClosedHookLearnedOnAWarmReplica(t *testing.T) {
	t.Parallel()
	sc := storetest.Standalone(t)
	a := startEnv(t, sc, app.Config{BodyTimeout: time.Minute})
	b := startEnv(t, sc, app.Config{})
	hook, token := a.hook(t, client.CreateHookInput{SessionID: a.session(t)})
	a.must(t, 202, a.post(t, token, "warm"))
	b.must(t, 200, b.do(t, "POST", "/v1/hooks/"+hook+"/close", b.alice, nil))
	wantError(t, a.post(t, token, "late"), 410, "hook_closed")
	addr := strings.TrimPrefix(a.srv.URL, "http://")
	late := rawExchange(addr, "POST /v1/callback/"+token+" HTTP/1.1\r\nHost: "+addr+"\r\nContent-Length: 1000", nil)
	if late.status != 410 || late.code() != "hook_closed" || !late.closed {
		t.Fatalf("a post to the hook now known closed: %v", late)
	}
}
