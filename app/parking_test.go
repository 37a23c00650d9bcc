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
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/callbacks/receivertest"
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

// sameAnswer fails unless parked, an answer of a parked poll, is byte for
// byte but its date what waited, the same poll's answer waiting in its
// handler over HTTP/1.0, is.
func sameAnswer(t *testing.T, what string, parked, waited []byte) {
	t.Helper()
	p := datePattern.ReplaceAll(parked, nil)
	w := datePattern.ReplaceAll(bytes.Replace(waited, []byte("HTTP/1.0 "), []byte("HTTP/1.1 "), 1), nil)
	if !bytes.Equal(p, w) {
		t.Fatalf("%s: parked answered\n%s\nwaiting in the handler\n%s", what, parked, waited)
	}
}

// sendTwice sends a poll of path on two connections: one to be parked, and
// one in HTTP/1.0 (which is never parked) to wait in its handler.
func sendTwice(t *testing.T, srv *apptest.Server, path, token, requestID string) (parked, waiting *rawConn) {
	t.Helper()
	parked, waiting = dial(t, srv), dial(t, srv)
	parked.send(t, path, token, "X-Request-Id: "+requestID)
	waiting.sendProto(t, "HTTP/1.0", path, token, "X-Request-Id: "+requestID)
	return parked, waiting
}

// A parked poll's answer is, byte for byte but its date, what the same
// poll waiting in its handler answers (HTTP/1.0, which is never parked):
// woken by the same change, and for a task that is not there.
func TestParkedPollAnswersAsWaitingInTheHandler(t *testing.T) {
	t.Parallel()
	srv, cl, token, task := parkingServer(t)
	parked, waiting := sendTwice(t, srv, "/v1/tasks/"+task.TaskID+"?afterRevision=1&wait=30s", token, "rq_same")
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
	sameAnswer(t, "woken", parkedRaw, waitedRaw)

	parked, waiting = sendTwice(t, srv, "/v1/tasks/task_0000000000000000000000000000?afterRevision=1&wait=30s", token, "rq_missing")
	res, _, parkedRaw = parked.answer(t)
	_, _, waitedRaw = waiting.answer(t)
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("a missing task: %d, want 404", res.StatusCode)
	}
	sameAnswer(t, "a missing task", parkedRaw, waitedRaw)
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

// Parked JSON long-polls of event logs, as of tasks above.

// eventPage decodes the JSON answer of GET .../events.
func eventPage(t *testing.T, body []byte) client.EventPage {
	t.Helper()
	var page client.EventPage
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("not a page of events: %s", body)
	}
	return page
}

// cursors are where the task's log and its session's log end now.
func cursors(t *testing.T, cl *client.Client, sessionID, taskID string) (session, task string) {
	t.Helper()
	ctx := context.Background()
	sp, err := cl.SessionEvents(ctx, sessionID, client.EventsParams{Limit: 1000})
	if err != nil {
		t.Fatalf("SessionEvents: %v", err)
	}
	tp, err := cl.TaskEvents(ctx, taskID, client.EventsParams{Limit: 1000})
	if err != nil {
		t.Fatalf("TaskEvents: %v", err)
	}
	return sp.Cursor, tp.Cursor
}

// Parked long-polls of a session's events hold no goroutine each: many of
// them cost the server fewer goroutines than half their number, and every
// one of them answers the event that comes.
//
// Not parallel: it counts the process's goroutines.
func TestParkedEventPollsHoldNoGoroutine(t *testing.T) {
	const n = 200
	srv, cl, token, task := parkingServer(t)
	after, _ := cursors(t, cl, task.SessionID, task.TaskID)
	conns := parkPolls(t, srv, token, "/v1/sessions/"+task.SessionID+"/events?after="+after+"&wait=30s", n)
	progress(t, cl, task.TaskID)
	for i, c := range conns {
		res, body, _ := c.answer(t)
		page := eventPage(t, body)
		if res.StatusCode != http.StatusOK || len(page.Events) != 1 || page.Events[0].Type != "task.progress" ||
			page.Cursor != page.Events[0].ID {
			t.Fatalf("poll %d answered %d %s, want 200 and the progress", i, res.StatusCode, body)
		}
	}
}

// A parked poll of events answers, byte for byte but its date, what the same
// poll waiting in its handler answers (HTTP/1.0, which is never parked), on
// every store backend: of a session's log and of a task's, with kinds that
// leave an event aside, when the wait runs out (the empty page, its cursor
// where the poll began), and for a log that is not there.
func TestParkedEventPollAnswersAsWaitingInTheHandler(t *testing.T) {
	t.Parallel()
	apptest.EachBackend(t, app.Config{RecheckInterval: time.Hour}, func(t *testing.T, srv *apptest.Server) {
		token := apptest.Token(t, "parker")
		cl := client.New(srv.URL, token)
		_, task := apptest.SessionWithTask(t, context.Background(), cl, client.CreateTaskInput{})
		sessionAfter, taskAfter := cursors(t, cl, task.SessionID, task.TaskID)
		// both sends path as sendTwice does, and waits until both polls wait.
		both := func(path, requestID string) (parked, waiting *rawConn) {
			t.Helper()
			parked, waiting = sendTwice(t, srv, path, token, requestID)
			storetest.WaitFor(t, "one poll parked and one waiting in its handler", func() bool {
				waiters, parkedPolls, _ := gauges(srv)
				return waiters == 2 && parkedPolls == 1
			})
			return parked, waiting
		}
		// answers reads the two answers, fails unless they are alike, and
		// returns the parked one's.
		answers := func(what string, parked, waiting *rawConn) (*http.Response, client.EventPage) {
			t.Helper()
			res, body, parkedRaw := parked.answer(t)
			_, _, waitedRaw := waiting.answer(t)
			sameAnswer(t, what, parkedRaw, waitedRaw)
			if res.StatusCode != http.StatusOK {
				return res, client.EventPage{}
			}
			return res, eventPage(t, body)
		}

		parked, waiting := both("/v1/sessions/"+task.SessionID+"/events?after="+sessionAfter+"&wait=30s", "rq_session")
		progress(t, cl, task.TaskID)
		res, page := answers("the session's log", parked, waiting)
		if res.StatusCode != http.StatusOK || len(page.Events) != 1 || page.Events[0].Type != "task.progress" {
			t.Fatalf("the session's log answered %d %+v, want 200 and the progress", res.StatusCode, page)
		}

		ignored := testutil.ToFloat64(srv.App.Metrics.WakeupsIgnored)
		parked, waiting = both("/v1/tasks/"+task.TaskID+"/events?after="+taskAfter+"&kinds=task.message&wait=30s", "rq_kinds")
		progress(t, cl, task.TaskID)
		storetest.WaitFor(t, "both polls to leave the progress aside", func() bool {
			return testutil.ToFloat64(srv.App.Metrics.WakeupsIgnored) >= ignored+2
		})
		if _, err := cl.Message(context.Background(), task.TaskID, "need a decision", nil); err != nil {
			t.Fatalf("Message: %v", err)
		}
		res, page = answers("the task's messages", parked, waiting)
		if res.StatusCode != http.StatusOK || len(page.Events) != 1 || page.Events[0].Type != "task.message" ||
			page.Cursor != page.Events[0].ID {
			t.Fatalf("the task's messages answered %d %+v, want 200 and the message alone", res.StatusCode, page)
		}

		after := page.Cursor
		parked, waiting = sendTwice(t, srv, "/v1/tasks/"+task.TaskID+"/events?after="+after+"&wait=1s", token, "rq_empty")
		res, page = answers("a wait that runs out", parked, waiting)
		if res.StatusCode != http.StatusOK || len(page.Events) != 0 || page.Cursor != after {
			t.Fatalf("a wait that runs out answered %d %+v, want 200, no event and the cursor %s", res.StatusCode, page, after)
		}

		parked, waiting = sendTwice(t, srv, "/v1/sessions/ses_0000000000000000000000000000/events?wait=30s", token, "rq_missing")
		res, _ = answers("a missing session", parked, waiting)
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("a missing session: %d, want 404", res.StatusCode)
		}
	})
}

// What long-polls and task commands cost Redis, in round trips.

// roundTrips is the Redis round trips that requests made on a server so far
// (the fan-in readers' own reads are counted apart).
func roundTrips(s *apptest.Server, pool string) float64 {
	return testutil.ToFloat64(s.App.Metrics.RedisRoundTrips.WithLabelValues(pool))
}

// polled is what a long-poll answered.
type polled struct {
	task *client.Task
	err  error
}

// stillWaiting fails the test when the long-poll whose answer arrives on
// done has answered already: what it answered is what.
func stillWaiting(t *testing.T, done <-chan polled, what string) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("%s: %+v %v", what, r.task, r.err)
	default:
	}
}

// parkPoll sends cl's long-poll for the change after task's revision in the
// background, and returns once srv holds it waiting after the one read it
// makes when it begins (srv's request round trips were before at the start).
func parkPoll(t *testing.T, ctx context.Context, srv *apptest.Server, cl *client.Client, task *client.Task, before float64, opts ...client.CallOption) <-chan polled {
	t.Helper()
	done := make(chan polled, 1)
	go func() {
		tk, err := cl.WaitTask(ctx, task.TaskID, task.Revision, 30*time.Second, opts...)
		done <- polled{tk, err}
	}()
	storetest.WaitFor(t, "the poll to wait", func() bool { return testutil.ToFloat64(srv.App.Metrics.Waiters) == 1 })
	storetest.WaitFor(t, "the poll's first read", func() bool { return roundTrips(srv, "requests")-before == 1 })
	return done
}

// Each task command is one Redis round trip, with or without notification
// endpoints: the outbox entries are written by the command's own script.
func TestOneRoundTripPerTaskCommand(t *testing.T) {
	t.Parallel()
	t.Run("no endpoints", func(t *testing.T) {
		t.Parallel()
		srv := apptest.Standalone(t, app.Config{})
		measureTaskCommands(t, srv, nil, nil)
	})
	t.Run("endpoints on the session and the task", func(t *testing.T) {
		t.Parallel()
		srv := apptest.Standalone(t, app.Config{AllowPrivateTargets: true})
		sesRecv, taskRecv := receivertest.New(t, nil), receivertest.New(t, nil)
		// Every type a task emits, so that each command routes its events;
		// the session has a second endpoint, of the default types.
		every := []string{
			"task.created", "task.progress", "task.message", "task.status", "task.terminal",
			"input.requested", "input.resolved",
		}
		ses := []client.EndpointRequest{{URL: sesRecv.URL, Kinds: every}, {URL: sesRecv.URL}}
		task := []client.EndpointRequest{{URL: taskRecv.URL, Kinds: every}}
		id := measureTaskCommands(t, srv, ses, task)
		// The commands routed their events, each to every endpoint that
		// takes its type.
		log, err := client.New(srv.URL, apptest.Token(t, "rt")).TaskEvents(context.Background(), id, client.EventsParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		routed, wakeWorthy := 0, 0
		for _, e := range log.Events {
			if slices.Contains(every, e.Type) {
				routed++
			}
			if slices.Contains(client.DefaultNotifyKinds, e.Type) {
				wakeWorthy++
			}
		}
		waitDeliveries(t, taskRecv, routed)
		waitDeliveries(t, sesRecv, routed+wakeWorthy)
	})
}

// measureTaskCommands runs a task's life in a session with the given
// endpoints, checks that each command took one Redis round trip, and
// returns the task's id.
func measureTaskCommands(t *testing.T, srv *apptest.Server, sesEndpoints, taskEndpoints []client.EndpointRequest) string {
	t.Helper()
	ctx := context.Background()
	cl := client.New(srv.URL, apptest.Token(t, "rt"))
	ses, err := cl.CreateSession(ctx, client.CreateSessionInput{Notify: sesEndpoints})
	if err != nil {
		t.Fatal(err)
	}
	measure := func(name string, call func() error) {
		t.Helper()
		before := roundTrips(srv, "requests")
		if err := call(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := roundTrips(srv, "requests") - before; got != 1 {
			t.Errorf("%s took %v Redis round trips, want 1", name, got)
		}
	}
	var task *client.Task
	measure("create", func() (err error) {
		task, err = cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Input: map[string]int{"n": 1}, Notify: taskEndpoints})
		return err
	})
	if len(task.Notify) != len(taskEndpoints) {
		t.Fatalf("the task has %d endpoints, want %d", len(task.Notify), len(taskEndpoints))
	}
	id := task.TaskID
	measure("progress", func() error {
		_, err := cl.Progress(ctx, id, client.ProgressInput{StatusMessage: client.String("half")})
		return err
	})
	measure("message", func() error { _, err := cl.Message(ctx, id, "hello", nil); return err })
	measure("require_input", func() error {
		_, err := cl.RequireInput(ctx, id, []client.InputRequest{{RequestID: "go", Prompt: "Go?", Display: "confirmation"}})
		return err
	})
	measure("respond", func() error {
		_, err := cl.Respond(ctx, id, []client.Answer{{RequestID: "go", OptionID: "yes"}})
		return err
	})
	measure("complete (with an idempotency key)", func() error {
		_, err := cl.Complete(ctx, id, "done", client.WithIdempotencyKey("c1"))
		return err
	})
	measure("get", func() error { _, err := cl.GetTask(ctx, id); return err })
	return id
}

func TestWaitingLongPollCostsNoRoundTrips(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, app.Config{WakeBlock: 20 * time.Millisecond, Partitions: 4})
	ctx := context.Background()
	cl := srv.Client(t, "lp")
	_, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{})
	before := roundTrips(srv, "requests")
	done := parkPoll(t, ctx, srv, cl, task, before)
	// While the poll waits, every fan-in reader of the partition cycles
	// through several of its own blocking reads; the request side stays
	// at the one read the poll made when it began.
	readerLoops := roundTrips(srv, "wakeups")
	storetest.WaitFor(t, "the condition", func() bool { return roundTrips(srv, "wakeups")-readerLoops >= 4*5 })
	if got := roundTrips(srv, "requests") - before; got != 1 {
		t.Fatalf("the waiting poll made %v round trips, want the 1 read at its start", got)
	}
	stillWaiting(t, done, "the poll answered before any change")
	if _, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("moved")}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.task.Revision != task.Revision+1 || r.task.StatusMessage != "moved" {
		t.Fatalf("woken poll answered %+v %v", r.task, r.err)
	}
	// The wake-up carried the new task: answering cost no read.
	if got := roundTrips(srv, "requests") - before; got != 2 {
		t.Fatalf("poll + progress made %v round trips, want 2", got)
	}
}

// A long-poll with kinds costs no Redis round trip for a change of other
// kinds: the wake-up names its event types and is left aside unread. The
// change of its kinds then answers from the wake-up's snapshot, also
// without a read.
func TestKindsPollCostsNoRoundTripsForOtherKinds(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, app.Config{WakeBlock: 20 * time.Millisecond, Partitions: 4,
		RecheckInterval: time.Hour})
	ctx := context.Background()
	cl := client.New(srv.URL, apptest.Token(t, "lp"))
	_, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{})
	before := roundTrips(srv, "requests")
	done := parkPoll(t, ctx, srv, cl, task, before, client.WithKinds(client.EventTaskMessage))

	for i, msg := range []string{"one", "two", "three"} {
		if _, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String(msg)}); err != nil {
			t.Fatal(err)
		}
		storetest.WaitFor(t, "the poll to leave the progress aside", func() bool {
			return testutil.ToFloat64(srv.App.Metrics.WakeupsIgnored) == float64(i+1)
		})
	}
	// Each progress was one round trip; the parked poll made none.
	if got := roundTrips(srv, "requests") - before; got != 1+3 {
		t.Fatalf("the poll and three progress reports made %v round trips, want 4", got)
	}
	stillWaiting(t, done, "the poll answered on progress")
	msg, err := cl.Message(ctx, task.TaskID, "look", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.task.Revision != msg.Revision || r.task.StatusMessage != "three" {
		t.Fatalf("woken poll answered %+v %v", r.task, r.err)
	}
	if got := roundTrips(srv, "requests") - before; got != 1+3+1 {
		t.Fatalf("poll, progress and message made %v round trips, want 5", got)
	}
}
