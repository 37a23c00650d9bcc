package callbacks

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/netguard"
	"github.com/taskhook/taskhook/stdwebhooks"
)

// What the Sender sends, the Go client's receiver accepts: both ends of a
// notification agree on the signature and on what each answer means.
func TestSendToTheGoClientsReceiver(t *testing.T) {
	secret := stdwebhooks.NewSecret()
	var mu sync.Mutex
	var got []client.Event
	fail := false
	srv := httptest.NewServer(client.NotificationHandler(secret, func(_ context.Context, ev client.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return context.DeadlineExceeded
		}
		got = append(got, ev)
		return nil
	}))
	defer srv.Close()
	s := newTestSender(t, SenderConfig{Guard: netguard.Guard{AllowPrivate: true}})

	d := Delivery{URL: srv.URL, Secret: secret, MessageID: "1700000000000-0", Body: testBody, At: time.Now()}
	if o := s.Send(context.Background(), d); o.Kind != Delivered || o.Status != 204 {
		t.Fatalf("Send = %+v, want Delivered 204", o)
	}
	mu.Lock()
	if len(got) != 1 || got[0].ID != "1700000000000-0" || got[0].Type != "task.status" {
		t.Errorf("receiver handled %+v", got)
	}
	fail = true
	mu.Unlock()

	if o := s.Send(context.Background(), d); o.Kind != Retry || o.Status != 500 {
		t.Errorf("receiver failing: Send = %+v, want Retry 500", o)
	}
	d.Secret = stdwebhooks.NewSecret()
	if o := s.Send(context.Background(), d); o.Kind != Dropped || o.Status != 401 {
		t.Errorf("wrong secret: Send = %+v, want Dropped 401", o)
	}
}
