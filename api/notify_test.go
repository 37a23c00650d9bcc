package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/store/storetest"
)

type endpoint struct {
	EndpointID string   `json:"endpointId"`
	Kinds      []string `json:"kinds"`
	Status     string   `json:"status"`
	Secret     string   `json:"secret"`
}

// TestContractNotify drives the notification endpoint routes and their
// refusals over real HTTP, through apitest.Transport.
func TestContractNotify(t *testing.T) {
	srv := apptest.Embedded(t, app.Config{
		AllowPrivateTargets: true, NotifyRetryBase: time.Millisecond, NotifyMaxAttempts: 1,
	})
	alice := newCaller(t, srv.URL, apptest.Token(t, "alice"))
	bob := alice.as(apptest.Token(t, "bob"))
	gone := receivertest.New(t, receivertest.Status(http.StatusGone))
	failing := receivertest.New(t, receivertest.Status(http.StatusServiceUnavailable))

	var ses struct {
		SessionID string     `json:"sessionId"`
		Notify    []endpoint `json:"notify"`
	}
	alice.want(alice.do("POST", "/v1/sessions", map[string]any{"notify": []any{
		map[string]any{"url": gone.URL, "kinds": []string{"task.message"}},
		map[string]any{"url": failing.URL, "kinds": []string{"task.message"}, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
	}}), 201, "", &ses)
	if len(ses.Notify) != 2 || ses.Notify[0].Secret == "" || ses.Notify[1].Secret != "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" {
		t.Fatalf("created endpoints: %+v", ses.Notify)
	}
	base := "/v1/sessions/" + ses.SessionID + "/notify"
	var added endpoint
	alice.want(alice.do("POST", base, map[string]any{"url": gone.URL + "/other"}, "Idempotency-Key", "ep-1"), 201, "", &added)
	if added.Secret == "" || len(added.Kinds) != 5 {
		t.Fatalf("added endpoint: %+v", added)
	}
	r := alice.want(alice.do("POST", base, map[string]any{"url": gone.URL + "/other"}, "Idempotency-Key", "ep-1"), 201, "", nil)
	if r.header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(r.body), added.Secret) {
		t.Fatalf("a repeated add is not the first answer: %s", r.body)
	}
	var list struct{ Notify []endpoint }
	alice.want(alice.do("GET", base, nil), 200, "", &list)
	if len(list.Notify) != 3 || strings.Contains(string(alice.do("GET", base, nil).body), "whsec_") {
		t.Fatalf("the list: %+v", list)
	}
	bob.want(bob.do("GET", base, nil), 404, "not_found", nil)
	bob.want(bob.do("POST", base, map[string]any{"url": gone.URL}), 404, "not_found", nil)
	bob.want(bob.do("DELETE", base+"/"+added.EndpointID, nil), 404, "not_found", nil)
	alice.want(alice.do("DELETE", base+"/"+added.EndpointID, nil), 200, "", nil)
	alice.want(alice.do("DELETE", base+"/"+added.EndpointID, nil), 404, "not_found", nil)

	// Refusals name the field.
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"url": "ftp://example.test/x"}, "notify.url"},
		{map[string]any{"url": "http://user:pw@example.test/x"}, "notify.url"},
		{map[string]any{"url": gone.URL, "kinds": []string{"task.nope"}}, "notify.kinds[0]"},
		{map[string]any{"url": gone.URL, "kinds": []string{}}, "notify.kinds"},
		{map[string]any{"url": gone.URL, "secret": "whsec_short"}, "notify.secret"},
	} {
		r := alice.want(alice.do("POST", base, c.body), 400, "invalid_request", nil)
		if !strings.Contains(string(r.body), c.field) {
			t.Errorf("%v: the refusal does not name %s: %s", c.body, c.field, r.body)
		}
	}
	many := make([]any, 11)
	for i := range many {
		many[i] = map[string]any{"url": gone.URL}
	}
	alice.want(alice.do("POST", "/v1/sessions", map[string]any{"notify": many}), 400, "invalid_request", nil)
	for range 8 {
		alice.want(alice.do("POST", base, map[string]any{"url": gone.URL + "/more"}), 201, "", nil)
	}
	alice.want(alice.do("POST", base, map[string]any{"url": gone.URL + "/more"}), 409, "too_many_endpoints", nil)

	// A task's own endpoints, and what the deliveries leave behind.
	var task struct {
		TaskID string     `json:"taskId"`
		Notify []endpoint `json:"notify"`
	}
	alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID,
		"notify": []any{map[string]any{"url": failing.URL}}}), 201, "", &task)
	if len(task.Notify) != 1 || task.Notify[0].Secret == "" {
		t.Fatalf("the task's endpoint: %+v", task.Notify)
	}
	alice.want(alice.do("GET", "/v1/tasks/"+task.TaskID+"/notify", nil), 200, "", nil)
	alice.want(alice.do("POST", "/v1/tasks/"+task.TaskID+"/messages", map[string]any{"text": "hello"}), 200, "", nil)
	var dead struct {
		DeadLetters []struct{ EventType string } `json:"deadLetters"`
		Cursor      string                       `json:"cursor"`
	}
	storetest.WaitFor(t, "the dead letters", func() bool {
		alice.want(alice.do("GET", base+"/dead-letters", nil), 200, "", &dead)
		return len(dead.DeadLetters) == 2
	})
	alice.want(alice.do("GET", base+"/dead-letters?after="+dead.Cursor, nil), 200, "", &dead)
	if len(dead.DeadLetters) != 0 {
		t.Fatalf("reading after the cursor: %+v", dead)
	}
	bob.want(bob.do("GET", base+"/dead-letters", nil), 404, "not_found", nil)
	storetest.WaitFor(t, "the dead endpoint", func() bool {
		alice.want(alice.do("GET", "/v1/sessions/"+ses.SessionID, nil), 200, "", &list)
		return len(list.Notify) > 0 && list.Notify[0].Status == "dead"
	})
}
