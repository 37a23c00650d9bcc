package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// These tests drive parked JSON long-polls of event logs, as parking_test.go
// drives those of tasks.

// eventPage decodes the JSON answer of GET .../events.
func eventPage(t *testing.T, body []byte) client.EventPage {
	t.Helper()
	var page client.EventPage
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("not a page of events: %s", body)
	}
	return page
}

// eventTypes are the types of the page's events, in order.
func eventTypes(page client.EventPage) []string {
	types := make([]string, len(page.Events))
	for i, e := range page.Events {
		types[i] = e.Type
	}
	return types
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

// Parked long-polls of a session's events hold no goroutine each: many of
// them cost the server fewer goroutines than half their number, and every
// one of them answers the event that comes.
//
// Not parallel: it counts the process's goroutines.
func TestParkedEventPollsHoldNoGoroutine(t *testing.T) {
	const n = 200
	srv, cl, token, task := parkingServer(t)
	after, _ := cursors(t, cl, task.SessionID, task.TaskID)
	before := runtime.NumGoroutine()
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dial(t, srv)
		conns[i].send(t, "/v1/sessions/"+task.SessionID+"/events?after="+after+"&wait=30s", token)
	}
	storetest.WaitFor(t, "every poll to park", func() bool {
		waiters, parked, _ := gauges(srv)
		return waiters == n && parked == n
	})
	storetest.WaitFor(t, "fewer goroutines than half the polls", func() bool {
		return runtime.NumGoroutine()-before < n/2
	})
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
// poll waiting in its handler answers (HTTP/1.0, which is never parked): of
// a session's log and of a task's, with kinds that leave an event aside,
// and for a log that is not there.
func TestParkedEventPollAnswersAsWaitingInTheHandler(t *testing.T) {
	t.Parallel()
	srv, cl, token, task := parkingServer(t)
	sessionAfter, taskAfter := cursors(t, cl, task.SessionID, task.TaskID)
	// both sends path parked and waiting in the handler, and waits until
	// both wait.
	both := func(path, requestID string) (parked, waiting *rawConn) {
		t.Helper()
		parked, waiting = dial(t, srv), dial(t, srv)
		parked.send(t, path, token, "X-Request-Id: "+requestID)
		waiting.sendProto(t, "HTTP/1.0", path, token, "X-Request-Id: "+requestID)
		storetest.WaitFor(t, "one poll parked and one waiting in its handler", func() bool {
			waiters, parkedPolls, _ := gauges(srv)
			return waiters == 2 && parkedPolls == 1
		})
		return parked, waiting
	}

	parked, waiting := both("/v1/sessions/"+task.SessionID+"/events?after="+sessionAfter+"&wait=30s", "rq_session")
	progress(t, cl, task.TaskID)
	res, body, parkedRaw := parked.answer(t)
	_, _, waitedRaw := waiting.answer(t)
	if page := eventPage(t, body); res.StatusCode != http.StatusOK || len(page.Events) != 1 || page.Events[0].Type != "task.progress" {
		t.Fatalf("the session's log answered %d %s, want 200 and the progress", res.StatusCode, body)
	}
	sameAnswer(t, "the session's log", parkedRaw, waitedRaw)

	ignored := testutil.ToFloat64(srv.App.Metrics.WakeupsIgnored)
	parked, waiting = both("/v1/tasks/"+task.TaskID+"/events?after="+taskAfter+"&kinds=task.message&wait=30s", "rq_kinds")
	progress(t, cl, task.TaskID)
	storetest.WaitFor(t, "both polls to leave the progress aside", func() bool {
		return testutil.ToFloat64(srv.App.Metrics.WakeupsIgnored) >= ignored+2
	})
	if _, err := cl.Message(context.Background(), task.TaskID, "need a decision", nil); err != nil {
		t.Fatalf("Message: %v", err)
	}
	res, body, parkedRaw = parked.answer(t)
	_, _, waitedRaw = waiting.answer(t)
	page := eventPage(t, body)
	if res.StatusCode != http.StatusOK || len(page.Events) != 1 || page.Events[0].Type != "task.message" ||
		page.Cursor != page.Events[0].ID {
		t.Fatalf("the task's messages answered %d %s, want 200 and the message alone", res.StatusCode, body)
	}
	sameAnswer(t, "the task's messages", parkedRaw, waitedRaw)

	missing := "/v1/sessions/ses_0000000000000000000000000000/events?wait=30s"
	parked, waiting = dial(t, srv), dial(t, srv)
	parked.send(t, missing, token, "X-Request-Id: rq_missing")
	waiting.sendProto(t, "HTTP/1.0", missing, token, "X-Request-Id: rq_missing")
	res, _, parkedRaw = parked.answer(t)
	_, _, waitedRaw = waiting.answer(t)
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("a missing session: %d, want 404", res.StatusCode)
	}
	sameAnswer(t, "a missing session", parkedRaw, waitedRaw)
}

// A parked poll of events whose wait runs out answers the empty page, its
// cursor where the poll began, as one waiting in its handler does.
func TestParkedEventPollAnswersWhenTheWaitRunsOut(t *testing.T) {
	t.Parallel()
	srv, cl, token, task := parkingServer(t)
	after, _ := cursors(t, cl, task.SessionID, task.TaskID)
	path := "/v1/sessions/" + task.SessionID + "/events?after=" + after + "&wait=1s"
	parked, waiting := dial(t, srv), dial(t, srv)
	parked.send(t, path, token, "X-Request-Id: rq_empty")
	waiting.sendProto(t, "HTTP/1.0", path, token, "X-Request-Id: rq_empty")
	res, body, parkedRaw := parked.answer(t)
	_, _, waitedRaw := waiting.answer(t)
	if page := eventPage(t, body); res.StatusCode != http.StatusOK || len(page.Events) != 0 || page.Cursor != after {
		t.Fatalf("answered %d %s, want 200, no event and the cursor %s", res.StatusCode, body, after)
	}
	sameAnswer(t, "an empty wait", parkedRaw, waitedRaw)
	storetest.WaitFor(t, "the connection of the parked poll to be kept", func() bool {
		_, _, idle := gauges(srv)
		return idle == 1
	})
}
