package app_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// notifyConfig is a server whose endpoints may be on loopback, retrying
// fast: these tests' receivers are local.
func notifyConfig() app.Config {
	return app.Config{
		AllowPrivateTargets: true, NotifyRetryBase: 5 * time.Millisecond, NotifyMaxAttempts: 3,
		NotifyTimeout: 2 * time.Second,
	}
}

// A task's life reaches the task's and the session's endpoints with exactly
// the event types each one takes, every delivery signed, its webhook-id the
// event id and its payload the event with its revision.
func TestNotificationsDeliverTheRoutedKinds(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		cl := client.New(srv.URL, apptest.Token(t, "notify-owner"))
		sesRecv := receivertest.New(t, nil)
		taskRecv := receivertest.New(t, nil)

		ses, err := cl.CreateSession(ctx, client.CreateSessionInput{Notify: []client.EndpointRequest{{URL: sesRecv.URL}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(ses.Notify) != 1 || ses.Notify[0].Secret == "" || !slices.Equal(ses.Notify[0].Kinds, client.DefaultNotifyKinds) {
			t.Fatalf("the created session's endpoint: %+v", ses.Notify)
		}
		taskKinds := []string{"task.progress", "task.terminal", "input.resolved"}
		task, err := cl.CreateTask(ctx, client.CreateTaskInput{
			SessionID: ses.SessionID, Notify: []client.EndpointRequest{{URL: taskRecv.URL, Kinds: taskKinds}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(task.Notify) != 1 || task.Notify[0].Secret == "" {
			t.Fatalf("the created task's endpoint: %+v", task.Notify)
		}
		// The secret is shown once: reads never hold it.
		again, err := cl.GetSession(ctx, ses.SessionID)
		if err != nil || len(again.Notify) != 1 || again.Notify[0].Secret != "" || again.Notify[0].Status != "active" {
			t.Fatalf("the session read back: %+v %v", again, err)
		}

		driveTaskLife(t, cl, task.TaskID)

		log, err := cl.TaskEvents(ctx, task.TaskID, client.EventsParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		want := func(kinds []string) []string {
			var ids []string
			for _, e := range log.Events {
				if slices.Contains(kinds, e.Type) {
					ids = append(ids, e.ID)
				}
			}
			return ids
		}
		for _, c := range []struct {
			name   string
			recv   *receivertest.Receiver
			secret string
			ids    []string
		}{
			{"session endpoint", sesRecv, ses.Notify[0].Secret, want(client.DefaultNotifyKinds)},
			{"task endpoint", taskRecv, task.Notify[0].Secret, want(taskKinds)},
		} {
			waitDeliveries(t, c.recv, len(c.ids))
			var got []string
			for _, d := range c.recv.Got() {
				ev, err := client.VerifyNotification(c.secret, d.Header, d.Body)
				if err != nil {
					t.Fatalf("%s: a delivery does not verify: %v", c.name, err)
				}
				if ev.ID != d.ID() || ev.Revision == 0 || ev.TaskID != task.TaskID || ev.SessionID != ses.SessionID {
					t.Fatalf("%s: delivery %s carries event %+v", c.name, d.ID(), ev)
				}
				if ev.Type == "input.requested" && !strings.Contains(string(d.Body), `"answerUrl":"http`) {
					t.Fatalf("%s: the question comes without its answer link: %s", c.name, d.Body)
				}
				got = append(got, d.ID())
			}
			slices.Sort(got)
			if !slices.Equal(got, c.ids) {
				t.Fatalf("%s got %v, want the events %v", c.name, got, c.ids)
			}
		}
	})
}

// driveTaskLife runs progress, a message, a question, its answer and the
// completion.
func driveTaskLife(t *testing.T, cl *client.Client, id string) {
	t.Helper()
	ctx := context.Background()
	if _, err := cl.Progress(ctx, id, client.ProgressInput{StatusMessage: client.String("half way")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Message(ctx, id, "a note for the agent", nil); err != nil {
		t.Fatal(err)
	}
	asked, err := cl.RequireInput(ctx, id, []client.InputRequest{{Prompt: "Go on?", Display: client.DisplayConfirmation}})
	if err != nil {
		t.Fatal(err)
	}
	req := asked.InputRequests[0]
	if _, err := cl.Respond(ctx, id, []client.Answer{{RequestID: req.RequestID, OptionID: req.Options[0].ID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Complete(ctx, id, map[string]any{"ok": true}); err != nil {
		t.Fatal(err)
	}
}

// taskWithMessages starts a task in the session and posts n messages to it,
// "message 0" first.
func taskWithMessages(t *testing.T, ctx context.Context, cl *client.Client, sessionID string, n int) *client.Task {
	t.Helper()
	task, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := cl.Message(ctx, task.TaskID, fmt.Sprintf("message %d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	return task
}

// waitDeliveries waits for at least n deliveries.
func waitDeliveries(t *testing.T, r *receivertest.Receiver, n int) {
	t.Helper()
	storetest.WaitFor(t, "the notifications", func() bool { return len(r.Got()) >= n })
}

// Receivers that fail are handled by what they answer: 404 and 410 kill the
// endpoint after one call, 500 is retried with the same webhook-id, a
// receiver that never answers is retried and dead-lettered, 400 is dropped
// and a redirect is not followed. None of it changes the task.
func TestNotificationFailuresFollowTheAnswer(t *testing.T) {
	srv := apptest.Standalone(t, app.Config{
		AllowPrivateTargets: true, NotifyRetryBase: 5 * time.Millisecond, NotifyMaxAttempts: 3,
		NotifyTimeout: 300 * time.Millisecond,
	})
	ctx := context.Background()
	cl := client.New(srv.URL, apptest.Token(t, "notify-failures"))

	redirectTarget := receivertest.New(t, nil)
	recv := map[string]*receivertest.Receiver{
		"404": receivertest.New(t, receivertest.Status(http.StatusNotFound)),
		"410": receivertest.New(t, receivertest.Status(http.StatusGone)),
		"500 then 200": receivertest.New(t, func(n int, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(map[bool]int{true: http.StatusInternalServerError, false: http.StatusOK}[n == 1])
		}),
		"400": receivertest.New(t, receivertest.Status(http.StatusBadRequest)),
		"302": receivertest.New(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, redirectTarget.URL, http.StatusFound)
		}),
	}
	silent := receivertest.New(t, nil)
	silent.Answer = silent.Block
	recv["never answers"] = silent
	names := []string{"404", "410", "500 then 200", "400", "302", "never answers"}
	var eps []client.EndpointRequest
	for _, n := range names {
		eps = append(eps, client.EndpointRequest{URL: recv[n].URL, Kinds: []string{"task.message", "task.terminal"}})
	}
	ses, task := apptest.NotifyingSessionWithTask(t, ctx, cl, eps)
	msg, err := cl.Message(ctx, task.TaskID, "first", nil)
	if err != nil {
		t.Fatal(err)
	}

	// The first event: every receiver is called; the 500 one twice, with
	// the same webhook-id; the silent one three times, then dead-lettered.
	waitDeliveries(t, recv["500 then 200"], 2)
	first := recv["500 then 200"].Got()
	if first[0].ID() != first[1].ID() || first[0].ID() == "" {
		t.Fatalf("a retry carries another webhook-id: %q then %q", first[0].ID(), first[1].ID())
	}
	storetest.WaitFor(t, "the dead letter", func() bool {
		page, err := cl.DeadLetters(ctx, ses.SessionID, "", 10)
		return err == nil && len(page.DeadLetters) == 1
	})
	page, _ := cl.DeadLetters(ctx, ses.SessionID, "", 10)
	dl := page.DeadLetters[0]
	if dl.EventID != first[0].ID() || dl.Attempts != 3 || dl.EventType != "task.message" || dl.TaskID != task.TaskID {
		t.Fatalf("dead letter: %+v", dl)
	}
	if n := len(silent.Got()); n != 3 {
		t.Fatalf("the silent receiver was called %d times, want 3 (the attempts)", n)
	}
	storetest.WaitFor(t, "both dead endpoints", func() bool {
		s, err := cl.GetSession(ctx, ses.SessionID)
		if err != nil {
			return false
		}
		dead := 0
		for _, ep := range s.Notify {
			if ep.Status == "dead" {
				dead++
			}
		}
		return dead == 2
	})

	// The second event: the dead endpoints are never called again.
	done, err := cl.Complete(ctx, task.TaskID, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitDeliveries(t, recv["500 then 200"], 3)
	waitDeliveries(t, recv["400"], 2)
	waitDeliveries(t, recv["302"], 2)
	for _, n := range []string{"404", "410"} {
		if got := len(recv[n].Got()); got != 1 {
			t.Fatalf("the %s receiver was called %d times, want once", n, got)
		}
	}
	if got := len(recv["400"].Got()); got != 2 {
		t.Fatalf("the 400 receiver was called %d times, want once per event", got)
	}
	if got := len(redirectTarget.Got()); got != 0 {
		t.Fatalf("a redirect was followed %d times", got)
	}
	s, err := cl.GetSession(ctx, ses.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	for i, ep := range s.Notify {
		dead := names[i] == "404" || names[i] == "410"
		if (ep.Status == "dead") != dead || (dead && ep.DeadReason == "") {
			t.Fatalf("endpoint %s: %+v", names[i], ep)
		}
	}
	final, err := cl.GetTask(ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if final.Revision != done.Revision || final.Revision != msg.Revision+1 || final.Status != client.StatusCompleted {
		t.Fatalf("the deliveries changed the task: %+v", final)
	}
}

// Events that are not task commands reach the endpoints that ask for them:
// a hook's hook.received, and a session cancel's task.terminal and
// session.cancelled. A reset carries the endpoints over, secrets and all.
func TestNotificationsOfHooksAndSessionCancel(t *testing.T) {
	srv := apptest.Standalone(t, notifyConfig())
	ctx := context.Background()
	cl := client.New(srv.URL, apptest.Token(t, "notify-cancel"))
	recv := receivertest.New(t, nil)
	kinds := []string{"hook.received", "task.terminal", "session.cancelled"}
	ses, task := apptest.NotifyingSessionWithTask(t, ctx, cl, []client.EndpointRequest{{URL: recv.URL, Kinds: kinds}})
	hook, err := cl.CreateHook(ctx, client.CreateHookInput{TaskID: task.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Post(ctx, hook.URL, []byte(`{"build":"green"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CancelSession(ctx, ses.SessionID, "done here"); err != nil {
		t.Fatal(err)
	}
	waitDeliveries(t, recv, 3)
	var got []string
	for _, d := range recv.Got() {
		ev, err := client.VerifyNotification(ses.Notify[0].Secret, d.Header, d.Body)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Type)
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(kinds)); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}

	reset, err := cl.ResetSession(ctx, ses.SessionID, "again")
	if err != nil {
		t.Fatal(err)
	}
	carried := reset.Session.Notify
	if len(carried) != 1 || carried[0].EndpointID != ses.Notify[0].EndpointID || carried[0].Secret != "" {
		t.Fatalf("the reset session's endpoints: %+v", carried)
	}
	next, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: reset.Session.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Complete(ctx, next.TaskID, nil); err != nil {
		t.Fatal(err)
	}
	waitDeliveries(t, recv, 4)
	last := recv.Got()[3]
	if ev, err := client.VerifyNotification(ses.Notify[0].Secret, last.Header, last.Body); err != nil || ev.TaskID != next.TaskID {
		t.Fatalf("the carried endpoint's delivery: %+v %v", ev, err)
	}
}

// A receiver that holds every request (as one that takes longer than 10 s
// to answer would) holds back no other endpoint: on the same session, a
// fast receiver has every event while the slow one has answered none. The
// slow endpoint takes its share of the replica's deliveries and no more;
// its other events wait, without spending an attempt, and all reach it once
// it answers. Nothing is sent twice.
func TestSlowReceiverDoesNotHoldBackAnotherEndpoint(t *testing.T) {
	t.Parallel()
	const (
		events = 40 // more than one endpoint's share of a replica's 64 deliveries (8)
		share  = 8
	)
	srv := apptest.Standalone(t, app.Config{AllowPrivateTargets: true, NotifyTimeout: 30 * time.Second})
	ctx := context.Background()
	cl := client.New(srv.URL, apptest.Token(t, "notify-slow"))
	slow := receivertest.New(t, nil)
	var answered atomic.Int64
	slow.Answer = func(n int, w http.ResponseWriter, r *http.Request) {
		slow.Block(n, w, r)
		answered.Add(1)
	}
	fast := receivertest.New(t, nil)
	kinds := []string{"task.message"}
	ses, err := cl.CreateSession(ctx, client.CreateSessionInput{Notify: []client.EndpointRequest{
		{URL: slow.URL, Kinds: kinds}, {URL: fast.URL, Kinds: kinds},
	}})
	if err != nil {
		t.Fatal(err)
	}
	taskWithMessages(t, ctx, cl, ses.SessionID, events)

	waitDeliveries(t, fast, events)
	held := len(slow.Got())
	if n := answered.Load(); n != 0 {
		t.Fatalf("the slow receiver answered %d requests before the fast one had all %d events", n, events)
	}
	if held == 0 || held > share {
		t.Fatalf("the slow receiver holds %d requests, want 1 to its share of %d", held, share)
	}
	deferred := testutil.ToFloat64(srv.App.Metrics.Notify.Deliveries.WithLabelValues("deferred"))

	slow.Release()
	waitDeliveries(t, slow, events)
	for name, r := range map[string]*receivertest.Receiver{"slow": slow, "fast": fast} {
		seen := map[string]bool{}
		for _, d := range r.Got() {
			if seen[d.ID()] {
				t.Errorf("the %s receiver got %s twice", name, d.ID())
			}
			seen[d.ID()] = true
		}
		if len(seen) != events {
			t.Errorf("the %s receiver got %d events, want %d", name, len(seen), events)
		}
	}
	t.Logf("fast: %d of %d events while slow held %d requests unanswered (%d deferrals of the rest so far); "+
		"after slow answered: %d requests to it, %d to fast", events, events, held, int(deferred), len(slow.Got()), len(fast.Got()))
}

// outbox reads one partition's notification outbox as Redis holds it.
type outbox struct {
	rdb     *redis.Client
	stream  string
	retries string
}

func newOutbox(t *testing.T, sc store.Config, sessionID string) outbox {
	t.Helper()
	rdb := storetest.Redis(t, sc)
	p, err := ids.PartitionOf(sessionID, ids.SessionPrefix, 16) // the servers' default partitions
	if err != nil {
		t.Fatal(err)
	}
	keys := store.NewKeys(sc.Prefix)
	return outbox{rdb: rdb, stream: keys.Outbox(p), retries: keys.OutboxRetries(p)}
}

// pending is the outbox's entries taken and not settled: by entry id, the
// consumer holding it and how often it was handed out.
func (o outbox) pending(t *testing.T) map[string]redis.XPendingExt {
	t.Helper()
	got, err := o.rdb.XPendingExt(context.Background(), &redis.XPendingExtArgs{
		Stream: o.stream, Group: store.OutboxGroup, Start: "-", End: "+", Count: 1000,
	}).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]redis.XPendingExt{}
	for _, p := range got {
		out[p.ID] = p
	}
	return out
}

// settled reports whether nothing is left to deliver: no entry in the
// outbox, taken or not, and none waiting for a retry.
func (o outbox) settled(t *testing.T) bool {
	t.Helper()
	ctx := context.Background()
	n, err := o.rdb.XLen(ctx, o.stream).Result()
	if err != nil {
		t.Fatal(err)
	}
	r, err := o.rdb.ZCard(ctx, o.retries).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 0 && r == 0
}

// noRetries reports whether the retry queue is empty.
func (o outbox) noRetries(t *testing.T) bool {
	t.Helper()
	n, err := o.rdb.ZCard(context.Background(), o.retries).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 0
}

// consumers is who holds the pending entries, and how many each.
func consumers(pending map[string]redis.XPendingExt) map[string]int {
	out := map[string]int{}
	for _, p := range pending {
		out[p.Consumer]++
	}
	return out
}

// A replica killed while it holds deliveries, under way or waiting for
// their endpoint's share, loses none of them: another replica takes each
// over once it has been left ClaimIdle, and delivers it again with the same
// webhook-id and body. While it lived, each event was sent once at most,
// however long the receiver held it: an entry it holds is taken over
// neither by its own replica nor by another one, and one that waits stays
// pending, never acknowledged.
func TestNotificationsSurviveAKilledReplica(t *testing.T) {
	t.Parallel()
	const (
		events    = 12 // more than one endpoint's share of a replica's deliveries (64/8)
		share     = 8  // under way at once; the other 4 wait
		claimIdle = 2 * time.Second
	)
	sc := storetest.Standalone(t)
	env := []string{
		"TASKHOOK_ALLOW_PRIVATE_TARGETS=true", "TASKHOOK_NOTIFY_CLAIM_IDLE=" + claimIdle.String(),
		// Far above how long the test holds a delivery: A's deliveries
		// end with A, not with a timeout.
		"TASKHOOK_NOTIFY_TIMEOUT=2m", "TASKHOOK_NOTIFY_RETRY_BASE=50ms",
	}
	recv := receivertest.New(t, nil)
	// The receiver holds every request until released and notes when each
	// came.
	var mu sync.Mutex
	arrived := map[string][]time.Time{}
	recv.Answer = func(n int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		id := r.Header.Get("webhook-id")
		arrived[id] = append(arrived[id], time.Now())
		mu.Unlock()
		recv.Block(n, w, r)
	}

	cmdA, urlA := apptest.StartProcess(t, sc, env...)
	ctx := context.Background()
	token := apptest.Token(t, "notify-kill")
	clA := client.New(urlA, token)
	ses, err := clA.CreateSession(ctx, client.CreateSessionInput{
		Notify: []client.EndpointRequest{{URL: recv.URL, Kinds: []string{"task.message"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	secret := ses.Notify[0].Secret
	task := taskWithMessages(t, ctx, clA, ses.SessionID, events)
	box := newOutbox(t, sc, ses.SessionID)

	// A holds every event: the receiver has its share of them, the outbox
	// has them all pending with A's consumer, the others waiting.
	waitDeliveries(t, recv, share)
	var pendingA map[string]redis.XPendingExt
	storetest.WaitFor(t, "every event taken by A", func() bool {
		pendingA = box.pending(t)
		return len(pendingA) == events
	})
	holders := consumers(pendingA)
	if len(holders) != 1 || len(recv.Got()) != share {
		t.Fatalf("before the kill: %d entries pending with %v and %d sent, want %d with replica A alone and %d sent",
			len(pendingA), holders, len(recv.Got()), events, share)
	}
	var consumerA string
	for c := range holders {
		consumerA = c
	}
	// B starts now: every entry is in A's hands already. The claim idle
	// time is what is under test here: A keeps every delivery under way for
	// three times that, with B about, before it dies.
	_, urlB := apptest.StartProcess(t, sc, env...)
	heldSince := time.Now()
	storetest.WaitFor(t, "the deliveries held past the claim idle time", func() bool {
		return time.Since(heldSince) > 3*claimIdle
	})
	if n := len(recv.Got()); n != share {
		t.Fatalf("%d requests for the %d events A had under way: an entry it held was taken again", n, share)
	}
	if !box.noRetries(t) {
		t.Fatal("a waiting entry went to the retry queue")
	}
	if p := box.pending(t); !slices.Equal(slices.Sorted(maps.Keys(p)), slices.Sorted(maps.Keys(pendingA))) || consumers(p)[consumerA] != events {
		t.Fatalf("while A lived its entries went to %v", consumers(p))
	}

	if err := cmdA.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmdA.Wait()
	killedAt := time.Now()

	// B takes over every entry A held, and sends its share of them again.
	storetest.WaitFor(t, "replica B to take over A's deliveries", func() bool {
		p := box.pending(t)
		return len(p) == events && consumers(p)[consumerA] == 0 && len(recv.Got()) >= 2*share
	})
	recv.Release()
	storetest.WaitFor(t, "every notification settled", func() bool { return box.settled(t) })

	log, err := client.New(urlB, token).TaskEvents(ctx, task.TaskID, client.EventsParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range log.Events {
		if e.Type == "task.message" {
			want = append(want, e.ID)
		}
	}
	if len(want) != events {
		t.Fatalf("the task's log holds %d messages, want %d", len(want), events)
	}
	bodies := map[string]string{}
	times := map[string]int{}
	for _, d := range recv.Got() {
		ev, err := client.VerifyNotification(secret, d.Header, d.Body)
		if err != nil {
			t.Fatalf("a delivery does not verify: %v", err)
		}
		if ev.ID != d.ID() {
			t.Fatalf("webhook-id %s carries event %s", d.ID(), ev.ID)
		}
		if b, seen := bodies[d.ID()]; seen && b != string(d.Body) {
			t.Fatalf("webhook-id %s came with two bodies:\n%s\n%s", d.ID(), b, d.Body)
		}
		bodies[d.ID()] = string(d.Body)
		times[d.ID()]++
	}
	var got []string
	for id, n := range times {
		got = append(got, id)
		// The first share went out from A, cut short by the kill, and from
		// B; the rest waited at A and went out from B alone.
		sends := 1
		if slices.Index(want, id) < share {
			sends = 2
		}
		if n != sends {
			t.Errorf("event %s was sent %d times, want %d", id, n, sends)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want the events %v", got, want)
	}
	mu.Lock()
	var takeover []time.Duration
	for _, at := range arrived {
		takeover = append(takeover, at[len(at)-1].Sub(killedAt))
	}
	mu.Unlock()
	slices.Sort(takeover)
	t.Logf("%d events, %d requests (%d cut short by the kill, %d repeats by B with the same webhook-id), none lost; "+
		"B resent them %v to %v after the kill (claim idle %v)",
		events, len(recv.Got()), share, len(recv.Got())-events, takeover[0].Round(time.Millisecond),
		takeover[len(takeover)-1].Round(time.Millisecond), claimIdle)
}

// With the guard on (the default), an endpoint on a special-purpose address
// is refused at registration with 400 invalid_request naming its url, in a
// create (notify[i].url) and in an add (notify.url), and nothing is kept.
// Among them are blocks the guard once let through.
func TestNotifyEndpointsOnSpecialAddressesAreRefused(t *testing.T) {
	srv := apptest.Start(t, storetest.Embedded(t), app.Config{})
	ctx := context.Background()
	cl := client.New(srv.URL, apptest.Token(t, "guarded"))
	ses, err := cl.CreateSession(ctx, client.CreateSessionInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{
		"http://127.0.0.1:9/", "http://198.18.0.1/", "http://192.0.0.9/", "http://192.0.2.1/",
		"http://[::ffff:8.8.8.8]/", "http://[100::1]/", "http://[2001:db8::1]/", "http://[2001::1]/",
		"http://[2002:808:808::1]/", "http://[64:ff9b::a00:1]/",
	} {
		ep := client.EndpointRequest{URL: target}
		_, err := cl.CreateSession(ctx, client.CreateSessionInput{Notify: []client.EndpointRequest{{URL: "http://93.184.216.34/"}, ep}})
		wantRefusedURL(t, target, err, "notify[1].url")
		_, err = cl.AddSessionEndpoint(ctx, ses.SessionID, ep)
		wantRefusedURL(t, target, err, "notify.url")
	}
	if eps, err := cl.SessionEndpoints(ctx, ses.SessionID); err != nil || len(eps) != 0 {
		t.Errorf("endpoints kept: %+v %v", eps, err)
	}
}

func wantRefusedURL(t *testing.T, target string, err error, field string) {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 400 || ce.Code != client.CodeInvalidRequest ||
		len(ce.Details) != 1 || ce.Details[0].Field != field || !strings.Contains(ce.Details[0].Message, "not allowed") {
		t.Errorf("%s: %v, want 400 invalid_request naming %s", target, err, field)
	}
}
