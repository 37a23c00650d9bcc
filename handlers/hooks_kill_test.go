package handlers_test

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// A replica killed with SIGKILL while a long-poll read is open loses no hook
// event: what it took and never saw acknowledged is delivered again through
// another replica once its visibility runs out.
func TestHookEventsSurviveAKilledReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	t.Parallel()
	sc := storetest.Standalone(t)
	proc, procURL := apptest.StartProcess(t, sc)
	b := startEnv(t, sc, app.Config{})
	a := envOf(t, &apptest.Server{URL: procURL})

	hook, token := b.hook(t, client.CreateHookInput{SessionID: b.session(t)})
	want := map[string]bool{}
	for _, body := range []string{"one", "two", "three"} {
		want[b.must(t, 202, b.post(t, token, body)).str("eventId")] = true
	}
	// The process takes all three for its consumer and never acks them.
	took := a.read(t, hook, "consumer=a&visibilityMs=500")
	if n := len(took.list("events")); n != 3 {
		t.Fatalf("the process read %d events: %s", n, took.raw)
	}
	// A long poll is open on the process when a fourth event arrives, and
	// the process dies: it may or may not have taken the fourth.
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		req, _ := http.NewRequest("GET", procURL+"/v1/hooks/"+hook+"/events?consumer=a&visibilityMs=500&wait=30s", nil)
		req.Header.Set("Authorization", "Bearer "+a.alice)
		if res, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
	storetest.WaitFor(t, "the long poll on the process", func() bool {
		res, err := http.Get(procURL + "/metrics")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		m, _ := io.ReadAll(res.Body)
		return strings.Contains(string(m), "taskhook_waiters 1")
	})
	want[b.must(t, 202, b.post(t, token, "four")).str("eventId")] = true
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-polled

	// The other replica delivers every event, the three the dead process
	// took on their second delivery.
	got := map[string]float64{}
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		r := b.read(t, hook, "consumer=b&visibilityMs=500&wait=5s")
		var ids []string
		for _, e := range r.list("events") {
			m := e.(map[string]any)
			got[m["eventId"].(string)] = m["deliveryCount"].(float64)
			ids = append(ids, m["eventId"].(string))
		}
		if len(ids) > 0 {
			b.must(t, 200, b.do(t, "POST", "/v1/hooks/"+hook+"/ack", b.alice, map[string]any{"eventIds": ids}))
		}
	}
	for id := range want {
		if _, ok := got[id]; !ok {
			t.Errorf("event %s was lost with the process", id)
		}
	}
	for _, e := range took.list("events") {
		id := e.(map[string]any)["eventId"].(string)
		if got[id] != 2 {
			t.Errorf("event %s taken by the process came back with deliveryCount %v, want 2", id, got[id])
		}
	}
}
