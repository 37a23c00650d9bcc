package tasks_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

type answered struct {
	t   tasks.Task
	raw []byte
	err error
}

// A parked poll answers what the same poll answers blocking its caller:
// woken by the same change, after the same changes left aside.
func TestParkedPollAnswersAsWait(t *testing.T) {
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		ctx := context.Background()
		m := metrics.New()
		s := storetest.Open(t, sc, m)
		reg := waits.New(waits.Config{Recheck: time.Hour}, m, time.Now)
		fan := store.NewFanIn(s, store.FanInConfig{}, reg.Notify, m, nil)
		if err := fan.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fan.Stop(ctx) })
		svc := tasks.NewService(tasks.Config{}, s, reg, m, time.Now)
		owner := authz.Principal{ID: "poller"}
		id := startTask(t, s, svc, owner)
		run := func(cmd tasks.Command) {
			t.Helper()
			if _, err := svc.Run(ctx, owner, id, cmd, idem.Key{}); err != nil {
				t.Fatal(err)
			}
		}
		// both begins two polls alike, one to wait blocking and one parked.
		both := func(begin func() *tasks.Poll) (blocking, parked <-chan answered) {
			b, p := make(chan answered, 1), make(chan answered, 1)
			polls := []*tasks.Poll{begin(), begin()}
			for _, poll := range polls {
				if !poll.Waits() {
					t.Fatal("the poll does not wait")
				}
			}
			go func() {
				t, raw, err := polls[0].Wait(ctx)
				b <- answered{t, raw, err}
			}()
			polls[1].Park(ctx, func(t tasks.Task, raw []byte, err error) { p <- answered{t, raw, err} })
			return b, p
		}
		same := func(what string, blocking, parked <-chan answered, revision int64) {
			t.Helper()
			b, p := <-blocking, <-parked
			if b.err != nil || p.err != nil {
				t.Fatalf("%s: %v, %v", what, b.err, p.err)
			}
			if b.t.Revision != revision || !bytes.Equal(b.raw, p.raw) {
				t.Fatalf("%s: blocking answered revision %d %s, parked %s; want revision %d alike",
					what, b.t.Revision, b.raw, p.raw, revision)
			}
		}

		blocking, parked := both(func() *tasks.Poll { return svc.PollFor(ctx, owner, id, time.Minute, tasks.AfterRevision(1)) })
		run(tasks.Command{Kind: tasks.CmdProgress, StatusMessage: ptr("halfway")})
		same("after revision 1", blocking, parked, 2)

		blocking, parked = both(func() *tasks.Poll {
			return svc.PollKinds(ctx, owner, id, 2, waits.Kinds{"task.message"}, time.Minute)
		})
		run(tasks.Command{Kind: tasks.CmdProgress, StatusMessage: ptr("further")}) // left aside by both
		run(tasks.Command{Kind: tasks.CmdMessage, Text: "need a decision"})
		same("a message after revision 2", blocking, parked, 4)

		if n := testutil.ToFloat64(m.Waiters); n != 0 {
			t.Fatalf("%v waiters left, want none", n)
		}
	})
}

func ptr[T any](v T) *T { return &v }
