package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/taskhook/taskhook/api/apitest"
	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
)

// sse is one open server-sent event stream.
type sse struct {
	t      *testing.T
	resp   *http.Response
	events *apitest.EventReader
	cancel context.CancelFunc
}

// frame is one block of a stream up to its blank line: an event, or a
// comment.
type frame = apitest.Event

// stream opens path as server-sent events; headers are name, value pairs.
// It fails the test unless the server answers 200 text/event-stream.
func (c *caller) stream(path string, headers ...string) *sse {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		c.t.Fatalf("GET %s: %v", path, err)
	}
	s := &sse{t: c.t, resp: resp, events: apitest.NewEventReader(c.t, resp.Body), cancel: cancel}
	c.t.Cleanup(s.close)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("GET %s: %d %s: %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return s
}

// close leaves the stream, as a client that goes away.
func (s *sse) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

// next reads the next frame.
func (s *sse) next() (frame, error) { return s.events.Next() }

// event reads the next event, skipping heartbeats, and checks it against
// the document's Event schema: the transport does not read stream bodies.
func (s *sse) event() frame {
	s.t.Helper()
	for {
		f, err := s.next()
		if err != nil {
			s.t.Fatalf("read the stream: %v", err)
		}
		if f.Comment != "" && f.ID == "" && f.Data == "" {
			continue
		}
		var ev struct{ ID, Type string }
		var v any
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil || json.Unmarshal([]byte(f.Data), &v) != nil {
			s.t.Fatalf("data is not JSON: %q", f.Data)
		}
		if ev.ID != f.ID || ev.Type != f.Event {
			s.t.Errorf("frame id %q event %q, data id %q type %q", f.ID, f.Event, ev.ID, ev.Type)
		}
		doc, err := apitest.Document()
		if err != nil {
			s.t.Fatal(err)
		}
		if err := doc.Components.Schemas["Event"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			s.t.Errorf("openapi: a streamed event does not match Event: %v", err)
		}
		return f
	}
}

// TestContractEventStream reads the event logs as server-sent events through
// apitest.Transport, which checks each stream's status and headers.
func TestContractEventStream(t *testing.T) {
	srv := apptest.Embedded(t, app.Config{})
	alice := newCaller(t, srv.URL, apptest.Token(t, "alice"))
	bob := alice.as(apptest.Token(t, "bob"))

	var ses struct{ SessionID string }
	alice.want(alice.do("POST", "/v1/sessions", nil), 201, "", &ses)
	var tk task
	alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 201, "", &tk)
	alice.want(alice.do("POST", "/v1/tasks/"+tk.TaskID+"/progress", map[string]any{"statusMessage": "one"}), 200, "", nil)
	alice.want(alice.do("POST", "/v1/tasks/"+tk.TaskID+"/messages", map[string]any{"text": "two"}), 200, "", nil)
	path := "/v1/tasks/" + tk.TaskID + "/events"

	var ids []string
	t.Run("from the start", func(t *testing.T) {
		s := alice.stream(path)
		if s.resp.Header.Get("X-Request-Id") == "" || s.resp.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("headers: %v", s.resp.Header)
		}
		for _, want := range []string{"task.created", "task.progress", "task.message"} {
			f := s.event()
			if f.Event != want {
				t.Fatalf("event %q, want %q", f.Event, want)
			}
			ids = append(ids, f.ID)
		}
		s.close()
	})

	t.Run("resume", func(t *testing.T) {
		s := alice.stream(path, "Last-Event-ID", ids[0])
		if f := s.event(); f.ID != ids[1] {
			t.Errorf("after Last-Event-ID %s: %s %s, want %s", ids[0], f.ID, f.Event, ids[1])
		}
		s.close()
		s = alice.stream(path + "?after=" + ids[1])
		if f := s.event(); f.ID != ids[2] {
			t.Errorf("after ?after=%s: %s %s, want %s", ids[1], f.ID, f.Event, ids[2])
		}
		s.close()
		// Last-Event-ID wins over after.
		s = alice.stream(path+"?after="+ids[0], "Last-Event-ID", ids[1])
		if f := s.event(); f.ID != ids[2] {
			t.Errorf("Last-Event-ID did not win: %s", f.ID)
		}
		s.close()
	})

	t.Run("live", func(t *testing.T) {
		s := alice.stream(path, "Last-Event-ID", ids[2])
		// Caught up: a heartbeat at once, then each new event as it comes.
		if f, err := s.next(); err != nil || f.Comment != "heartbeat" {
			t.Fatalf("first frame at the tail: %+v %v", f, err)
		}
		alice.want(alice.do("POST", "/v1/tasks/"+tk.TaskID+"/progress", map[string]any{"statusMessage": "three"}), 200, "", nil)
		if f := s.event(); f.Event != "task.progress" || slices.Contains(ids, f.ID) {
			t.Errorf("live event: %+v", f)
		}
		s.close()
	})

	t.Run("session", func(t *testing.T) {
		s := alice.stream("/v1/sessions/" + ses.SessionID + "/events")
		if f := s.event(); f.Event != "session.created" {
			t.Errorf("first session event %q", f.Event)
		}
		if f := s.event(); f.Event != "task.created" || f.ID != ids[0] {
			t.Errorf("second session event %+v, want the task's first, %s", f, ids[0])
		}
		s.close()
	})

	t.Run("refusals", func(t *testing.T) {
		sse := []string{"Accept", "text/event-stream"}
		bob.want(bob.do("GET", path, nil, sse...), 404, "not_found", nil)
		bob.want(bob.do("GET", "/v1/sessions/"+ses.SessionID+"/events", nil, sse...), 404, "not_found", nil)
		alice.want(alice.do("GET", path, nil, append(sse, "Last-Event-ID", "nope")...), 400, "invalid_request", nil)
		alice.want(alice.do("GET", path+"?after=nope", nil, sse...), 400, "invalid_request", nil)
		alice.as("").want(alice.as("").do("GET", path, nil, sse...), 401, "unauthorized", nil)
		// Without the Accept header, Last-Event-ID means nothing.
		alice.want(alice.do("GET", path, nil, "Last-Event-ID", "nope"), 200, "", nil)
	})
}

// TestContractEventStreamEndsOnDrain: a stream ends when the server shuts
// down, so clients reconnect (to another replica) with Last-Event-ID.
func TestContractEventStreamEndsOnDrain(t *testing.T) {
	srv := apptest.Embedded(t, app.Config{})
	alice := newCaller(t, srv.URL, apptest.Token(t, "alice"))
	var ses struct{ SessionID string }
	alice.want(alice.do("POST", "/v1/sessions", nil), 201, "", &ses)
	path := "/v1/sessions/" + ses.SessionID + "/events"
	var page eventPage
	alice.want(alice.do("GET", path, nil), 200, "", &page)
	// Caught up: the stream starts with a heartbeat, then waits.
	s := alice.stream(path, "Last-Event-ID", page.Cursor)
	if f, err := s.next(); err != nil || f.Comment != "heartbeat" {
		t.Fatalf("caught up: %+v %v", f, err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		srv.Stop(t)
	}()
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := s.next(); err != nil {
				ended <- err
				return
			}
		}
	}()
	select {
	case err := <-ended:
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("the stream ended with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stream outlived the drain")
	}
	<-stopped
}
