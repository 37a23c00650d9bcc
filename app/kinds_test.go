package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

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
