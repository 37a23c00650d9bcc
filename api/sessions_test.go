package api_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
)

type session struct {
	SessionID string          `json:"sessionId"`
	Status    string          `json:"status"`
	Metadata  json.RawMessage `json:"metadata"`
}

// TestContractSessionEnd drives session cancel and reset over real HTTP, on
// the embedded store, through apitest.Transport.
func TestContractSessionEnd(t *testing.T) {
	srv := apptest.Embedded(t, app.Config{})
	alice := newCaller(t, srv.URL, apptest.Token(t, "alice"))
	bob := alice.as(apptest.Token(t, "bob"))
	admin := alice.as(apptest.Token(t, "root", "admin"))
	anon := alice.as("")

	var ses session
	alice.want(alice.do("POST", "/v1/sessions", map[string]any{"metadata": map[string]any{"agent": "x"}}), 201, "", &ses)
	var live, asking, done task
	alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 201, "", &live)
	alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 201, "", &asking)
	alice.want(alice.do("POST", "/v1/tasks/"+asking.TaskID+"/input-requests", map[string]any{"requests": []any{
		map[string]any{"prompt": "OK?"}}}), 200, "", nil)
	alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 201, "", &done)
	alice.want(alice.do("POST", "/v1/tasks/"+done.TaskID+"/complete", nil), 200, "", nil)
	var h hook
	alice.want(alice.do("POST", "/v1/hooks", map[string]any{"sessionId": ses.SessionID}), 201, "", &h)
	anon.want(anon.do("POST", "/v1/callback/"+h.Token, "before"), 202, "", nil)

	path := "/v1/sessions/" + ses.SessionID
	t.Run("cancel", func(t *testing.T) {
		alice.want(alice.do("POST", path+"/cancel", map[string]any{"reason": strings.Repeat("r", 1001)}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", path+"/cancel", map[string]any{"why": "x"}), 400, "invalid_request", nil)
		alice.want(alice.do("POST", path+"/cancel", `{"reason":`), 400, "invalid_json", nil)
		bob.want(bob.do("POST", path+"/cancel", nil), 404, "not_found", nil)
		alice.want(alice.do("POST", "/v1/sessions/ses_nope/cancel", nil), 404, "not_found", nil)
		anon.want(anon.do("POST", path+"/cancel", nil), 401, "unauthorized", nil)
		alice.want(alice.do("POST", path+"/cancel", `{"reason":"`+strings.Repeat("a", 1<<20)+`"}`), 413, "payload_too_large", nil)

		var got struct {
			Session          session  `json:"session"`
			CancelledTaskIDs []string `json:"cancelledTaskIds"`
		}
		first := alice.want(alice.do("POST", path+"/cancel", map[string]any{"reason": "user left"}, "Idempotency-Key", "end-1"), 200, "", &got)
		want := []string{live.TaskID, asking.TaskID}
		slices.Sort(want)
		if got.Session.Status != "cancelled" || !slices.Equal(got.CancelledTaskIDs, want) {
			t.Fatalf("cancel: %s", first.body)
		}
		alice.wantReplay(first, path+"/cancel", map[string]any{"reason": "user left"}, "end-1")
		alice.want(alice.do("POST", path+"/cancel", map[string]any{"reason": "other"}, "Idempotency-Key", "end-1"),
			409, "idempotency_conflict", nil)
		// A repeat is a no-op, for the owner and for an admin.
		for _, c := range []*caller{alice, admin} {
			r := c.want(c.do("POST", path+"/cancel", nil), 200, "", &got)
			if got.Session.Status != "cancelled" || len(got.CancelledTaskIDs) != 0 || r.header.Get("Idempotent-Replayed") != "" {
				t.Errorf("repeat: %s", r.body)
			}
		}

		var tk task
		alice.want(alice.do("GET", "/v1/tasks/"+live.TaskID, nil), 200, "", &tk)
		if tk.Status != "cancelled" || tk.StatusMessage != "user left" {
			t.Errorf("live task after the cancel: %+v", tk)
		}
		alice.want(alice.do("GET", "/v1/tasks/"+done.TaskID, nil), 200, "", &tk)
		if tk.Status != "completed" {
			t.Errorf("a finished task changed: %+v", tk)
		}
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID}), 409, "session_not_active", nil)
		alice.want(alice.do("POST", "/v1/hooks", map[string]any{"sessionId": ses.SessionID}), 409, "session_not_active", nil)
		r := anon.want(anon.do("POST", "/v1/callback/"+h.Token, "after"), 410, "hook_closed", nil)
		var e struct{ Error struct{ Reason string } }
		if json.Unmarshal(r.body, &e) != nil || e.Error.Reason != "session_cancelled" {
			t.Errorf("410: %s", r.body)
		}
		var hk hook
		alice.want(alice.do("GET", "/v1/hooks/"+h.HookID, nil), 200, "", &hk)
		if hk.Status != "closed" || hk.CloseReason != "session_cancelled" {
			t.Errorf("the session's hook: %+v", hk)
		}

		var log struct {
			Events []struct {
				Type   string `json:"type"`
				TaskID string `json:"taskId"`
			} `json:"events"`
		}
		alice.want(alice.do("GET", path+"/events?limit=1000", nil), 200, "", &log)
		var types []string
		for _, e := range log.Events {
			types = append(types, e.Type)
		}
		n := len(types)
		if n < 3 || types[n-1] != "session.cancelled" || types[n-2] != "task.terminal" || types[n-3] != "task.terminal" {
			t.Errorf("the session log ends with %v", types)
		}
	})

	t.Run("reset", func(t *testing.T) {
		var got struct {
			PreviousSessionID string  `json:"previousSessionId"`
			Session           session `json:"session"`
		}
		first := alice.want(alice.do("POST", path+"/reset", map[string]any{"reason": "again"}, "Idempotency-Key", "reset-1"), 201, "", &got)
		if got.PreviousSessionID != ses.SessionID || got.Session.Status != "active" || got.Session.SessionID == ses.SessionID ||
			string(got.Session.Metadata) != `{"agent":"x"}` {
			t.Fatalf("reset: %s", first.body)
		}
		alice.wantReplay(first, path+"/reset", map[string]any{"reason": "again"}, "reset-1")
		alice.want(alice.do("POST", path+"/reset", map[string]any{"reason": "other"}, "Idempotency-Key", "reset-1"),
			409, "idempotency_conflict", nil)
		fresh := got.Session.SessionID
		var tk task
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": fresh}), 201, "", &tk)

		// Resetting the new session cancels it (and its task) in turn.
		alice.want(alice.do("POST", "/v1/sessions/"+fresh+"/reset", nil), 201, "", &got)
		if got.PreviousSessionID != fresh || got.Session.SessionID == fresh {
			t.Errorf("second reset: %+v", got)
		}
		alice.want(alice.do("GET", "/v1/tasks/"+tk.TaskID, nil), 200, "", &tk)
		if tk.Status != "cancelled" {
			t.Errorf("the reset session's task is %s", tk.Status)
		}
		alice.want(alice.do("POST", path+"/reset", map[string]any{"extra": 1}), 400, "invalid_request", nil)
		bob.want(bob.do("POST", path+"/reset", nil), 404, "not_found", nil)
		anon.want(anon.do("POST", path+"/reset", nil), 401, "unauthorized", nil)
	})
}
