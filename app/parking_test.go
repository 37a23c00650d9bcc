package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// These tests drive parked long-polls over connections of their own, with
// requests written by hand: a connection holds no goroutine of the test's,
// and the bytes of an answer are the bytes the server wrote.

// rawConn is a client connection to a test server.
type rawConn struct {
	net.Conn
	read bytes.Buffer // every byte read from the server
	br   *bufio.Reader
}

func dial(t *testing.T, srv *apptest.Server) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawConn{Conn: c}
	rc.br = bufio.NewReader(io.TeeReader(c, &rc.read))
	return rc
}

// send writes a request: a GET of path with the bearer token and the
// headers given (each "Name: value"), in HTTP/1.1 unless proto says.
func (c *rawConn) send(t *testing.T, path, token string, headers ...string) {
	t.Helper()
	c.sendProto(t, "HTTP/1.1", path, token, headers...)
}

func (c *rawConn) sendProto(t *testing.T, proto, path, token string, headers ...string) {
	t.Helper()
	if _, err := c.Write([]byte(getRequest(proto, path, token, headers...))); err != nil {
		t.Fatal(err)
	}
}

func getRequest(proto, path, token string, headers ...string) string {
	req := "GET " + path + " " + proto + "\r\nHost: taskhook\r\nAuthorization: Bearer " + token + "\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	return req + "\r\n"
}

// answer reads the next response: its head, its body, and every byte of it
// as the server wrote them.
func (c *rawConn) answer(t *testing.T) (*http.Response, []byte, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a test that fails does not hang
	from := c.read.Len() - c.br.Buffered()
	res, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read the answer's body: %v", err)
	}
	raw := c.read.Bytes()[from : c.read.Len()-c.br.Buffered()]
	return res, body, bytes.Clone(raw)
}

func revisionOf(t *testing.T, body []byte) int64 {
	t.Helper()
	var task client.Task
	if err := json.Unmarshal(body, &task); err != nil {
		t.Fatalf("not a task: %s", body)
	}
	return task.Revision
}

func gauges(srv *apptest.Server) (waiters, parked, idle float64) {
	m := srv.App.Metrics
	return testutil.ToFloat64(m.Waiters), testutil.ToFloat64(m.ParkedPolls), testutil.ToFloat64(m.ParkedIdle)
}

// parkingServer is a server whose waits see no re-check, with a task to
// poll, a client of its owner and the owner's token.
func parkingServer(t *testing.T) (*apptest.Server, *client.Client, string, *client.Task) {
	t.Helper()
	srv := apptest.Standalone(t, app.Config{RecheckInterval: time.Hour})
	token := apptest.Token(t, "parker")
	cl := client.New(srv.URL, token)
	_, task := apptest.SessionWithTask(t, context.Background(), cl, client.CreateTaskInput{})
	return srv, cl, token, task
}

func progress(t *testing.T, cl *client.Client, id string) {
	t.Helper()
	if _, err := cl.Progress(context.Background(), id, client.ProgressInput{StatusMessage: client.String("on it")}); err != nil {
		t.Fatalf("Progress: %v", err)
	}
}

// Parked long-polls hold no goroutine each: many of them cost the server
// fewer goroutines than half their number, where waiting in their handlers
// they would hold two each (net/http's, and its reader's). Every one of
// them answers the change.
//
// Not parallel: it counts the process's goroutines.
func TestParkedPollsHoldNoGoroutine(t *testing.T) {
	const n = 200
	srv, cl, token, task := parkingServer(t)
	conns := parkPolls(t, srv, token, "/v1/tasks/"+task.TaskID+"?afterRevision=1&wait=30s", n)
	progress(t, cl, task.TaskID)
	for i, c := range conns {
		res, body, _ := c.answer(t)
		if res.StatusCode != http.StatusOK || revisionOf(t, body) != 2 {
			t.Fatalf("poll %d answered %d %s, want 200 and revision 2", i, res.StatusCode, body)
		}
	}
}

// parkPolls sends n long-polls of path, each on a connection of its own,
// and waits until every one is parked and the server holds fewer goroutines
// than half their number more than before: waiting in their handlers they
// would hold two each (net/http's, and its reader's).
func parkPolls(t *testing.T, srv *apptest.Server, token, path string, n int) []*rawConn {
	t.Helper()
	before := runtime.NumGoroutine()
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dial(t, srv)
		conns[i].send(t, path, token)
	}
	storetest.WaitFor(t, "every poll to park", func() bool {
		waiters, parked, _ := gauges(srv)
		return waiters == float64(n) && parked == float64(n)
	})
	storetest.WaitFor(t, "fewer goroutines than half the polls", func() bool {
		return runtime.NumGoroutine()-before < n/2
	})
	return conns
}

// datePattern is a response's Date line, the one part of two answers to the
// same request that may differ.
var datePattern = regexp.MustCompile(`\r\nDate: [^\r]*`)

// A parked poll's answer is, byte for byte but its date, what the same
// poll waiting in its handler answers (HTTP/1.0, which is never parked):
// woken by the same change, and for a task that is not there.
func TestParkedPollAnswersAsWaitingInTheHandler(t *testing.T) {
	t.Parallel()
	srv, cl, token, task := parkingServer(t)
	same := func(what string, parked, waited []byte) {
		t.Helper()
		p := datePattern.ReplaceAll(parked, nil)
		w := datePattern.ReplaceAll(bytes.Replace(waited, []byte("HTTP/1.0 "), []byte("HTTP/1.1 "), 1), nil)
		if !bytes.Equal(p, w) {
			t.Fatalf("%s: parked answered\n%s\nwaiting in the handler\n%s", what, parked, waited)
		}
	}
	poll := "/v1/tasks/" + task.TaskID + "?afterRevision=1&wait=30s"
	parked, waiting := dial(t, srv), dial(t, srv)
	parked.send(t, poll, token, "X-Request-Id: rq_same")
	waiting.sendProto(t, "HTTP/1.0", poll, token, "X-Request-Id: rq_same")
	storetest.WaitFor(t, "one poll parked and one waiting in its handler", func() bool {
		waiters, parkedPolls, _ := gauges(srv)
		return waiters == 2 && parkedPolls == 1
	})
	progress(t, cl, task.TaskID)
	res, body, parkedRaw := parked.answer(t)
	_, _, waitedRaw := waiting.answer(t)
	if res.StatusCode != http.StatusOK || revisionOf(t, body) != 2 {
		t.Fatalf("answered %d %s, want 200 and revision 2", res.StatusCode, body)
	}
	same("woken", parkedRaw, waitedRaw)

	missing := "/v1/tasks/task_0000000000000000000000000000?afterRevision=1&wait=30s"
	parked, waiting = dial(t, srv), dial(t, srv)
	parked.send(t, missing, token, "X-Request-Id: rq_missing")
	waiting.sendProto(t, "HTTP/1.0", missing, token, "X-Request-Id: rq_missing")
	res, _, parkedRaw = parked.answer(t)
	_, _, waitedRaw = waiting.answer(t)
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("a missing task: %d, want 404", res.StatusCode)
	}
	same("a missing task", parkedRaw, waitedRaw)
}

// The connection of a parked poll serves its client's next requests: a
// read, and another poll parked on it in turn. In between it is kept with
// no goroutine (taskhook_parked_idle_connections).
func TestParkedPollKeepsItsConnection(t *testing.T) {
	t.Parallel()
	srv, cl, token, task := parkingServer(t)
	hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer hc.CloseIdleConnections()
	// get GETs path, reporting whether it went on a connection used before.
	get := func(path string) (reused bool, body []byte, err error) {
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hc.Do(req)
		if err != nil {
			return false, nil, err
		}
		defer res.Body.Close()
		body, _ = io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			return reused, body, fmt.Errorf("GET %s: %d %s", path, res.StatusCode, body)
		}
		return reused, body, nil
	}
	// poll parks a poll after revision, has the task change, and returns
	// what the poll answered.
	poll := func(revision int64) (bool, []byte) {
		t.Helper()
		type answer struct {
			reused bool
			body   []byte
			err    error
		}
		done := make(chan answer, 1)
		go func() {
			reused, body, err := get("/v1/tasks/" + task.TaskID + "?afterRevision=" + strconv.FormatInt(revision, 10) + "&wait=30s")
			done <- answer{reused, body, err}
		}()
		storetest.WaitFor(t, "the poll to park", func() bool {
			_, parked, _ := gauges(srv)
			return parked == 1
		})
		progress(t, cl, task.TaskID)
		a := <-done
		if a.err != nil {
			t.Fatal(a.err)
		}
		return a.reused, a.body
	}

	if _, body := poll(1); revisionOf(t, body) != 2 {
		t.Fatalf("the first poll answered %s, want revision 2", body)
	}
	storetest.WaitFor(t, "the answered connection to be kept", func() bool {
		_, _, idle := gauges(srv)
		return idle == 1
	})
	if reused, _, err := get("/v1/tasks/" + task.TaskID); err != nil || !reused {
		t.Fatalf("the read after a parked poll: %v, reused %v; want the same connection", err, reused)
	}
	reused, body := poll(2)
	if !reused || revisionOf(t, body) != 3 {
		t.Fatalf("the second poll: reused %v, revision %d; want the same connection, revision 3", reused, revisionOf(t, body))
	}
	hc.CloseIdleConnections()
	storetest.WaitFor(t, "the kept connection to go when its client closes it", func() bool {
		_, parked, idle := gauges(srv)
		return parked == 0 && idle == 0
	})
}

// A parked poll whose wait runs out answers 200 with the task as it is,
// like one waiting in its handler.
func TestParkedPollAnswersWhenTheWaitRunsOut(t *testing.T) {
	t.Parallel()
	srv, _, token, task := parkingServer(t)
	c := dial(t, srv)
	c.send(t, "/v1/tasks/"+task.TaskID+"?afterRevision=1&wait=1s", token)
	res, body, _ := c.answer(t)
	if res.StatusCode != http.StatusOK || revisionOf(t, body) != 1 {
		t.Fatalf("answered %d %s, want 200 and the task at revision 1", res.StatusCode, body)
	}
	// Only a parked poll's connection is kept by the parking.
	storetest.WaitFor(t, "the connection of the parked poll to be kept", func() bool {
		_, _, idle := gauges(srv)
		return idle == 1
	})
}

// A parked poll whose client hangs up leaves at once, not when its wait
// runs out.
func TestParkedPollLeavesWhenItsClientHangsUp(t *testing.T) {
	t.Parallel()
	srv, _, token, task := parkingServer(t)
	c := dial(t, srv)
	c.send(t, "/v1/tasks/"+task.TaskID+"?afterRevision=1&wait=60s", token)
	storetest.WaitFor(t, "the poll to park", func() bool {
		waiters, parked, _ := gauges(srv)
		return waiters == 1 && parked == 1
	})
	c.Close()
	storetest.WaitFor(t, "the poll to leave", func() bool {
		waiters, parked, idle := gauges(srv)
		return waiters == 0 && parked == 0 && idle == 0
	})
}

// A request the client sent behind a parked poll, before its answer, is
// answered after it, on the same connection.
func TestParkedPollThenAPipelinedRequest(t *testing.T) {
	t.Parallel()
	srv, cl, token, task := parkingServer(t)
	c := dial(t, srv)
	pipelined := getRequest("HTTP/1.1", "/v1/tasks/"+task.TaskID+"?afterRevision=1&wait=30s", token) +
		getRequest("HTTP/1.1", "/v1/tasks/"+task.TaskID, token)
	if _, err := c.Write([]byte(pipelined)); err != nil {
		t.Fatal(err)
	}
	storetest.WaitFor(t, "the poll to park", func() bool {
		_, parked, _ := gauges(srv)
		return parked == 1
	})
	progress(t, cl, task.TaskID)
	for i, want := range []int64{2, 2} {
		res, body, _ := c.answer(t)
		if res.StatusCode != http.StatusOK || revisionOf(t, body) != want {
			t.Fatalf("answer %d: %d %s, want 200 and revision %d", i, res.StatusCode, body, want)
		}
	}
}

// The server's shutdown answers parked polls with the task as it is, says
// their connections close, and closes them.
func TestShutdownAnswersParkedPolls(t *testing.T) {
	t.Parallel()
	srv, _, token, task := parkingServer(t)
	conns := make([]*rawConn, 3)
	for i := range conns {
		conns[i] = dial(t, srv)
		conns[i].send(t, "/v1/tasks/"+task.TaskID+"?afterRevision=1&wait=60s", token)
	}
	storetest.WaitFor(t, "the polls to park", func() bool {
		_, parked, _ := gauges(srv)
		return parked == float64(len(conns))
	})
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		stopped <- srv.App.Stop(ctx)
	}()
	for i, c := range conns {
		res, body, _ := c.answer(t)
		if res.StatusCode != http.StatusOK || revisionOf(t, body) != 1 || !res.Close {
			t.Fatalf("poll %d answered %d (close %v) %s, want 200, revision 1 and the connection closing", i, res.StatusCode, res.Close, body)
		}
		if n, err := c.br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Fatalf("poll %d: after the answer read %d bytes, %v; want the connection closed", i, n, err)
		}
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
}
