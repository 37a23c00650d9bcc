package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
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
		// send sends path twice: to be parked, and to wait in the handler.
		send := func(path, requestID string) (parked, waiting *rawConn) {
			parked, waiting = dial(t, srv), dial(t, srv)
			parked.send(t, path, token, "X-Request-Id: "+requestID)
			waiting.sendProto(t, "HTTP/1.0", path, token, "X-Request-Id: "+requestID)
			return parked, waiting
		}
		// both sends path as send does, and waits until both polls wait.
		both := func(path, requestID string) (parked, waiting *rawConn) {
			t.Helper()
			parked, waiting = send(path, requestID)
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
		parked, waiting = send("/v1/tasks/"+task.TaskID+"/events?after="+after+"&wait=1s", "rq_empty")
		res, page = answers("a wait that runs out", parked, waiting)
		if res.StatusCode != http.StatusOK || len(page.Events) != 0 || page.Cursor != after {
			t.Fatalf("a wait that runs out answered %d %+v, want 200, no event and the cursor %s", res.StatusCode, page, after)
		}

		parked, waiting = send("/v1/sessions/ses_0000000000000000000000000000/events?wait=30s", "rq_missing")
		res, _ = answers("a missing session", parked, waiting)
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("a missing session: %d, want 404", res.StatusCode)
		}
	})
}
