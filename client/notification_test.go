package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/stdwebhooks"
)

const notifySecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var notifyBody = []byte(`{"id":"1700000000000-0","type":"task.status","at":"2026-03-01T12:00:00.000Z",` +
	`"sessionId":"ses_abc","taskId":"task_def","revision":3,` +
	`"data":{"task":{"taskId":"task_def","sessionId":"ses_abc","status":"input_required","revision":3}}}`)

// signed returns the headers taskhook sends with body, signed at at.
func signed(t *testing.T, secret, msgID string, at time.Time, body []byte) http.Header {
	t.Helper()
	h, err := stdwebhooks.Headers(secret, msgID, at, body)
	if err != nil {
		t.Fatal(err)
	}
	h.Set("Content-Type", "application/json")
	return h
}

func TestVerifyNotification(t *testing.T) {
	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	n, err := client.VerifyNotification(notifySecret, signed(t, notifySecret, "1700000000000-0", at, notifyBody), notifyBody)
	if err != nil {
		t.Fatal(err)
	}
	if n.ID != "1700000000000-0" || n.Type != client.EventTaskStatus || n.SessionID != "ses_abc" || n.TaskID != "task_def" || n.Revision != 3 {
		t.Errorf("event = %+v", n.Event)
	}
	if want := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC); !n.At.Equal(want) {
		t.Errorf("At = %v, want %v", n.At, want)
	}
	if n.MessageID != "1700000000000-0" || !n.SentAt.Equal(at) {
		t.Errorf("MessageID %q SentAt %v, want the webhook-id and %v", n.MessageID, n.SentAt, at)
	}
	if k := n.DedupeKey(); k != "ses_abc/1700000000000-0" {
		t.Errorf("DedupeKey = %q, want the session and the webhook-id", k)
	}
	task, err := n.Task()
	if err != nil || task.Revision != 3 {
		t.Errorf("Task() = %+v, %v", task, err)
	}
}

func TestVerifyNotificationRefuses(t *testing.T) {
	now := time.Now()
	otherSecret := stdwebhooks.NewSecret()
	cases := []struct {
		name   string
		secret string
		header http.Header
		body   []byte
		want   error
	}{
		{"wrong secret", otherSecret, signed(t, notifySecret, "m1", now, notifyBody), notifyBody, client.ErrNotificationSignature},
		{"tampered body", notifySecret, signed(t, notifySecret, "m1", now, notifyBody), bytes.Replace(notifyBody, []byte("input_required"), []byte("completed"), 1), client.ErrNotificationSignature},
		{"stale", notifySecret, signed(t, notifySecret, "m1", now.Add(-6*time.Minute), notifyBody), notifyBody, client.ErrNotificationSignature},
		{"from the future", notifySecret, signed(t, notifySecret, "m1", now.Add(6*time.Minute), notifyBody), notifyBody, client.ErrNotificationSignature},
		{"unsigned", notifySecret, http.Header{}, notifyBody, client.ErrNotificationSignature},
		{"not JSON", notifySecret, signed(t, notifySecret, "m1", now, []byte("hello")), []byte("hello"), client.ErrNotificationBody},
		{"no type", notifySecret, signed(t, notifySecret, "m1", now, []byte(`{"id":"1-0"}`)), []byte(`{"id":"1-0"}`), client.ErrNotificationBody},
		{"null", notifySecret, signed(t, notifySecret, "m1", now, []byte(`null`)), []byte(`null`), client.ErrNotificationBody},
		{"unusable secret", "whsec_***", signed(t, notifySecret, "m1", now, notifyBody), notifyBody, client.ErrNotificationSecret},
	}
	for _, tc := range cases {
		_, err := client.VerifyNotification(tc.secret, tc.header, tc.body)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), strings.TrimPrefix(tc.secret, "whsec_")) {
			t.Errorf("%s: error %q quotes the secret", tc.name, err)
		}
	}
}

// receiver is a notify endpoint built with NotificationHandler that records
// the events it is handed and fails while fail is set.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	events []client.Event
	fail   bool
}

func newReceiver(t *testing.T, secret string) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(client.NotificationHandler(secret, func(ctx context.Context, ev client.Event) error {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if rc.fail {
			return errors.New("not now")
		}
		rc.events = append(rc.events, ev)
		return nil
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) handled() []client.Event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]client.Event(nil), rc.events...)
}

func post(t *testing.T, url, method string, h http.Header, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestNotificationHandler(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	rc := newReceiver(t, notifySecret)
	now := time.Now()
	good := signed(t, notifySecret, "1700000000000-0", now, notifyBody)

	if got := post(t, rc.URL, http.MethodPost, good, notifyBody); got != http.StatusNoContent {
		t.Fatalf("a signed event: status %d, want 204", got)
	}
	events := rc.handled()
	if len(events) != 1 || events[0].ID != "1700000000000-0" || events[0].Type != client.EventTaskStatus {
		t.Fatalf("handled %+v, want the one event", events)
	}

	big := append([]byte(`{"type":"task.message","pad":"`), bytes.Repeat([]byte("x"), client.MaxNotificationBytes)...)
	big = append(big, `"}`...)
	refusals := []struct {
		name   string
		method string
		header http.Header
		body   []byte
		want   int
	}{
		{"wrong secret", http.MethodPost, signed(t, stdwebhooks.NewSecret(), "m1", now, notifyBody), notifyBody, http.StatusUnauthorized},
		{"tampered body", http.MethodPost, good, append(bytes.Clone(notifyBody), ' '), http.StatusUnauthorized},
		{"stale", http.MethodPost, signed(t, notifySecret, "m1", now.Add(-10*time.Minute), notifyBody), notifyBody, http.StatusUnauthorized},
		{"unsigned", http.MethodPost, http.Header{}, notifyBody, http.StatusUnauthorized},
		{"signed, not an event", http.MethodPost, signed(t, notifySecret, "m1", now, []byte("[1,2]")), []byte("[1,2]"), http.StatusBadRequest},
		{"above the body cap", http.MethodPost, signed(t, notifySecret, "m1", now, big), big, http.StatusRequestEntityTooLarge},
		{"GET", http.MethodGet, good, nil, http.StatusMethodNotAllowed},
	}
	for _, tc := range refusals {
		if got := post(t, rc.URL, tc.method, tc.header, tc.body); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
	if n := len(rc.handled()); n != 1 {
		t.Errorf("%d events handled, want only the first", n)
	}

	// fn failing answers 500, so the sender tries again later.
	rc.mu.Lock()
	rc.fail = true
	rc.mu.Unlock()
	if got := post(t, rc.URL, http.MethodPost, good, notifyBody); got != http.StatusInternalServerError {
		t.Errorf("fn failed: status %d, want 500", got)
	}
}

func TestNotificationHandlerWithAnUnusableSecretAnswers500(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	rc := newReceiver(t, "not a secret!")
	h := signed(t, notifySecret, "m1", time.Now(), notifyBody)
	if got := post(t, rc.URL, http.MethodPost, h, notifyBody); got != http.StatusInternalServerError {
		t.Errorf("status %d, want 500: the event must not be dropped for the receiver's mistake", got)
	}
	if n := len(rc.handled()); n != 0 {
		t.Errorf("%d events handled", n)
	}
}

// The endpoint calls add, list and remove a session's and a task's
// notification endpoints; only the owner may, and the secret is shown once.
func TestEndpointCalls(t *testing.T) {
	eachStore(t, app.Config{AllowPrivateTargets: true}, func(t *testing.T, e *env) {
		ctx := testContext(t)
		recv := receivertest.New(t, nil)
		task := newTask(t, ctx, e.alice)

		sesEp, err := e.alice.AddSessionEndpoint(ctx, task.SessionID, client.EndpointRequest{URL: recv.URL})
		if err != nil {
			t.Fatal(err)
		}
		taskEp, err := e.alice.AddTaskEndpoint(ctx, task.TaskID, client.EndpointRequest{URL: recv.URL, Kinds: []string{client.EventTaskMessage}})
		if err != nil {
			t.Fatal(err)
		}
		if sesEp.Secret == "" || taskEp.Secret == "" || !slices.Equal(sesEp.Kinds, client.DefaultNotifyKinds) {
			t.Fatalf("the added endpoints: %+v %+v", sesEp, taskEp)
		}
		for name, list := range map[string]func() ([]client.Endpoint, error){
			"session": func() ([]client.Endpoint, error) { return e.alice.SessionEndpoints(ctx, task.SessionID) },
			"task":    func() ([]client.Endpoint, error) { return e.alice.TaskEndpoints(ctx, task.TaskID) },
		} {
			eps, err := list()
			if err != nil || len(eps) != 1 || eps[0].Secret != "" || eps[0].Status != "active" {
				t.Fatalf("the %s's endpoints: %+v %v", name, eps, err)
			}
		}
		if _, err := e.bob.SessionEndpoints(ctx, task.SessionID); !client.IsCode(err, client.CodeNotFound) {
			t.Fatalf("another principal lists the endpoints: %v", err)
		}
		if _, err := e.bob.RemoveTaskEndpoint(ctx, task.TaskID, taskEp.EndpointID); !client.IsCode(err, client.CodeNotFound) {
			t.Fatalf("another principal removes an endpoint: %v", err)
		}
		if left, err := e.alice.RemoveTaskEndpoint(ctx, task.TaskID, taskEp.EndpointID); err != nil || len(left) != 0 {
			t.Fatalf("endpoints left: %+v %v", left, err)
		}
		if _, err := e.alice.AddSessionEndpoint(ctx, task.SessionID, client.EndpointRequest{URL: recv.URL + "/second"}); err != nil {
			t.Fatal(err)
		}
		left, err := e.alice.RemoveSessionEndpoint(ctx, task.SessionID, sesEp.EndpointID)
		if err != nil || len(left) != 1 || left[0].URL != recv.URL+"/second" {
			t.Fatalf("endpoints left: %+v %v", left, err)
		}
		_, err = e.alice.RemoveSessionEndpoint(ctx, task.SessionID, sesEp.EndpointID)
		wantCode(t, err, http.StatusNotFound, client.CodeNotFound)
		eps, err := e.alice.TaskEndpoints(ctx, task.TaskID)
		if err != nil || len(eps) != 0 {
			t.Fatalf("endpoints after removal: %+v %v", eps, err)
		}
	})
}
