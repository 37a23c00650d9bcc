package tasks_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
)

type pageAnswer struct {
	page store.LogPage
	err  error
}

// A parked read of a task's events answers what the same read answers
// blocking its caller: woken by the same event, after the same events of
// other kinds left aside, and when the wait runs out.
func TestParkedEventsPollAnswersAsWait(t *testing.T) {
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		ctx := context.Background()
		m := metrics.New()
		s := storetest.Open(t, sc, m)
		fan := store.NewFanIn(s, store.FanInConfig{Recheck: time.Hour}, m, nil, time.Now)
		if err := fan.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fan.Stop(ctx) })
		svc := tasks.NewService(tasks.Config{}, s, fan, m, time.Now)
		owner := authz.Principal{ID: "reader"}
		id := startTask(t, s, svc, owner)
		run := func(cmd tasks.Command) {
			t.Helper()
			if _, err := svc.Run(ctx, owner, id, cmd, store.Idempotency{}); err != nil {
				t.Fatal(err)
			}
		}
		start, err := svc.Events(ctx, owner, id, store.LogQuery{Limit: 100})
		if err != nil || len(start.Entries) == 0 {
			t.Fatalf("the log: %+v, %v", start, err)
		}
		// both begins two reads of q alike, one to wait blocking and one
		// parked.
		both := func(q store.LogQuery) (blocking, parked <-chan pageAnswer) {
			b, p := make(chan pageAnswer, 1), make(chan pageAnswer, 1)
			polls := []*store.LogPoll{svc.PollEvents(ctx, owner, id, q), svc.PollEvents(ctx, owner, id, q)}
			for _, poll := range polls {
				if !poll.Waits() {
					t.Fatal("the read does not wait")
				}
			}
			go func() {
				page, err := polls[0].Wait(ctx)
				b <- pageAnswer{page, err}
			}()
			polls[1].Park(ctx, func(page store.LogPage, err error) { p <- pageAnswer{page, err} })
			return b, p
		}
		same := func(what string, blocking, parked <-chan pageAnswer, events int) store.LogPage {
			t.Helper()
			b, p := <-blocking, <-parked
			if b.err != nil || p.err != nil {
				t.Fatalf("%s: %v, %v", what, b.err, p.err)
			}
			if len(b.page.Entries) != events || !reflect.DeepEqual(b.page, p.page) {
				t.Fatalf("%s: blocking answered %+v, parked %+v; want %d events alike", what, b.page, p.page, events)
			}
			return b.page
		}

		blocking, parked := both(store.LogQuery{After: start.Cursor, Limit: 100, Wait: time.Minute})
		run(tasks.Command{Kind: tasks.CmdProgress, StatusMessage: ptr("halfway")})
		page := same("any event", blocking, parked, 1)

		ignored := testutil.ToFloat64(m.WakeupsIgnored)
		blocking, parked = both(store.LogQuery{After: page.Cursor, Limit: 100, Wait: time.Minute, Kinds: store.Kinds{"task.message"}})
		run(tasks.Command{Kind: tasks.CmdProgress, StatusMessage: ptr("further")})
		storetest.WaitFor(t, "both reads to leave the progress aside", func() bool {
			return testutil.ToFloat64(m.WakeupsIgnored) >= ignored+2
		})
		run(tasks.Command{Kind: tasks.CmdMessage, Text: "need a decision"})
		page = same("a message", blocking, parked, 1)

		blocking, parked = both(store.LogQuery{After: page.Cursor, Limit: 100, Wait: 50 * time.Millisecond})
		if empty := same("a wait that runs out", blocking, parked, 0); empty.Cursor != page.Cursor {
			t.Fatalf("a wait that runs out: cursor %q, want %q", empty.Cursor, page.Cursor)
		}

		if n := testutil.ToFloat64(m.Waiters); n != 0 {
			t.Fatalf("%v waiters left, want none", n)
		}
	})
}
