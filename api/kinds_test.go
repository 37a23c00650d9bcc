package api_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
)

// TestContractKindsAndRelease drives kinds on long-polls, event reads and
// streams, release, and cancels with a wait over real HTTP, on the embedded
// store, through apitest.Transport.
func TestContractKindsAndRelease(t *testing.T) {
	srv := apptest.Embedded(t, app.Config{})
	alice := newCaller(t, srv.URL, apptest.Token(t, "alice"))
	bob := alice.as(apptest.Token(t, "bob"))

	var ses session
	alice.want(alice.do("POST", "/v1/sessions", nil), 201, "", &ses)
	var tk task
	alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 201, "", &tk)
	path := "/v1/tasks/" + tk.TaskID
	alice.want(alice.do("POST", path+"/messages", map[string]any{"text": "hi"}), 200, "", nil)
	alice.want(alice.do("POST", path+"/progress", map[string]any{"statusMessage": "busy"}), 200, "", nil)

	t.Run("kinds", func(t *testing.T) {
		var got task
		alice.want(alice.do("GET", path+"?afterRevision=1&wait=30s&kinds=task.message,task.terminal", nil), 200, "", &got)
		if got.Revision != 3 {
			t.Errorf("long-poll with kinds: revision %d, want 3 at once", got.Revision)
		}
		alice.want(alice.do("GET", path+"?afterRevision=2&wait=100ms&kinds=task.message", nil), 200, "", &got)
		alice.want(alice.do("GET", path+"?kinds=task.message", nil), 200, "", nil)
		var page eventPage
		alice.want(alice.do("GET", path+"/events?kinds=task.message", nil), 200, "", &page)
		if len(page.Events) != 1 || page.Events[0].Type != "task.message" || page.Cursor == page.Events[0].ID {
			t.Errorf("events with kinds: %+v, want the message and a cursor past the progress", page)
		}
		alice.want(alice.do("GET", "/v1/sessions/"+ses.SessionID+"/events?kinds=session.created,%20task.created", nil), 200, "", &page)
		if len(page.Events) != 2 {
			t.Errorf("session events with kinds: %+v", page)
		}
		for _, bad := range []string{"task.nope", "task.message,", "TASK.MESSAGE"} {
			alice.want(alice.do("GET", path+"/events?kinds="+bad, nil), 400, "invalid_request", nil)
		}
		alice.want(alice.do("GET", path+"?afterRevision=1&kinds=progress", nil), 400, "invalid_request", nil)
		alice.want(alice.do("GET", path+"/events?kinds=x", nil, "Accept", "text/event-stream"), 400, "invalid_request", nil)

		s := alice.stream(path + "/events?kinds=task.message")
		if f := s.event(); f.Event != "task.message" {
			t.Errorf("stream with kinds: %+v", f)
		}
		if f, err := s.next(); err != nil || f.Comment != "heartbeat" {
			t.Errorf("after the message, the stream is caught up: %+v %v", f, err)
		}
		s.close()
	})

	t.Run("release", func(t *testing.T) {
		alice.want(alice.do("POST", path+"/release", nil), 409, "task_not_terminal", nil)
		alice.want(alice.do("POST", path+"/release", map[string]any{"why": 1}), 400, "invalid_request", nil)
		var cancelled task
		alice.want(alice.do("POST", path+"/cancel?wait=50ms", map[string]any{"reason": "enough"}), 200, "", &cancelled)
		bob.want(bob.do("POST", path+"/release", nil), 404, "not_found", nil)
		var rel struct {
			task
			ReleasedAt string `json:"releasedAt"`
		}
		alice.want(alice.do("POST", path+"/release", "{}", "Idempotency-Key", "r1"), 200, "", &rel)
		if rel.ReleasedAt == "" || rel.Revision != cancelled.Revision+1 || rel.Status != "cancelled" {
			t.Errorf("released: %+v", rel)
		}
		alice.want(alice.do("POST", path+"/release", nil), 200, "", nil)
		alice.want(alice.do("POST", path+"/cancel?wait=1s", nil), 200, "", &rel)
		if rel.ReleasedAt == "" {
			t.Errorf("cancel with a wait of a released task: %+v", rel)
		}
		alice.want(alice.do("POST", path+"/cancel?wait=forever", nil), 400, "invalid_request", nil)
		var page eventPage
		alice.want(alice.do("GET", "/v1/sessions/"+ses.SessionID+"/events?kinds=task.released", nil), 200, "", &page)
		if len(page.Events) != 1 {
			t.Errorf("task.released in the session's log: %+v", page)
		}
	})

	t.Run("session cancel with a wait", func(t *testing.T) {
		var live task
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 201, "", &live)
		var got struct {
			CancelledTaskIDs  []string        `json:"cancelledTaskIds"`
			UnreleasedTaskIDs json.RawMessage `json:"unreleasedTaskIds"`
		}
		alice.want(alice.do("POST", "/v1/sessions/"+ses.SessionID+"/cancel?wait=100ms", nil), 200, "", &got)
		if !slices.Equal(got.CancelledTaskIDs, []string{live.TaskID}) || string(got.UnreleasedTaskIDs) != `["`+live.TaskID+`"]` {
			t.Errorf("session cancel with a wait: %+v %s", got, got.UnreleasedTaskIDs)
		}
		alice.want(alice.do("POST", "/v1/sessions/"+ses.SessionID+"/cancel?wait=0", nil), 200, "", &got)
		if len(got.CancelledTaskIDs) != 0 || string(got.UnreleasedTaskIDs) != `[]` {
			t.Errorf("a repeat with a wait: %+v %s", got, got.UnreleasedTaskIDs)
		}
		var plain map[string]json.RawMessage
		alice.want(alice.do("POST", "/v1/sessions/"+ses.SessionID+"/cancel", nil), 200, "", &plain)
		if _, ok := plain["unreleasedTaskIds"]; ok {
			t.Errorf("a cancel without a wait lists unreleased tasks: %v", plain)
		}
		alice.want(alice.do("POST", "/v1/sessions/"+ses.SessionID+"/cancel?wait=-1s", nil), 400, "invalid_request", nil)
	})
}
