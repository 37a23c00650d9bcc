package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

func TestRedisOutage(t *testing.T) {
	t.Parallel()
	rs := storetest.StartRedisServer(t, storetest.Durable...)
	srv := apptest.Start(t, store.Config{URL: "redis://" + rs.Addr() + "/0", Prefix: "outage:"}, app.Config{})
	ctx := context.Background()
	cl := srv.Client(t, "ops")
	ses, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{})
	rs.Stop()

	// Every store-backed answer is a 503 store_unavailable with Retry-After,
	// well before the 5 s bound; readiness follows.
	for _, call := range []func(context.Context) error{
		func(ctx context.Context) error {
			_, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("during")})
			return err
		},
		func(ctx context.Context) error { _, err := cl.GetTask(ctx, task.TaskID); return err },
		func(ctx context.Context) error {
			_, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID})
			return err
		},
		func(ctx context.Context) error { return cl.Ready(ctx) },
	} {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := call(cctx)
		cancel()
		var e *client.Error
		if !asError(err, &e) || e.Status != http.StatusServiceUnavailable || e.Code != client.CodeStoreUnavailable || e.RetryAfter <= 0 {
			t.Fatalf("with Redis down: %v, want 503 store_unavailable with Retry-After within 5s", err)
		}
	}

	rs.Start()
	storetest.WaitFor(t, "the condition", func() bool { return cl.Ready(ctx) == nil })
	got, err := cl.GetTask(ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing half-applied: the task and its log agree.
	events, err := cl.TaskEvents(ctx, task.TaskID, client.EventsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if last := events.Events[len(events.Events)-1]; last.Revision != got.Revision {
		t.Fatalf("task at revision %d, its log ends at %d", got.Revision, last.Revision)
	}
	// The same process serves again, scripts and wake-ups included.
	done := make(chan *client.Task, 1)
	go func() {
		tk, _ := cl.WaitTask(ctx, task.TaskID, got.Revision, 20*time.Second)
		done <- tk
	}()
	if _, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("after")}); err != nil {
		t.Fatal(err)
	}
	if tk := <-done; tk == nil || tk.Revision != got.Revision+1 {
		t.Fatalf("long-poll after recovery: %+v", tk)
	}
}

// A Redis that stalls for longer than the command timeout, with creates,
// messages and completes in flight on two replicas and no idempotency keys:
// nothing answers 500, every write is applied at most once, and a 2xx
// answer means it was applied exactly once.
func TestRedisStallAppliesEachWriteAtMostOnce(t *testing.T) {
	t.Parallel()
	rs := storetest.StartRedisServer(t, storetest.Durable...)
	// The proxy counts the scripts that reach Redis: a re-send is seen there.
	proxy := storetest.StartProxy(t, rs.Addr())
	sc := store.Config{URL: "redis://" + proxy.Addr() + "/0", Prefix: "stall:", Timeout: time.Second}
	replicas := []*apptest.Server{apptest.Start(t, sc, app.Config{}), apptest.Start(t, sc, app.Config{})}
	ctx := context.Background()
	token := apptest.Token(t, "stall")
	clients := []*client.Client{client.New(replicas[0].URL, token), client.New(replicas[1].URL, token)}
	ses, talker := apptest.SessionWithTask(t, ctx, clients[0], client.CreateTaskInput{})
	const n = 3
	var finishers []*client.Task
	for i := 0; i < n; i++ {
		tk, err := clients[0].CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID})
		if err != nil {
			t.Fatal(err)
		}
		finishers = append(finishers, tk)
	}
	// Warm both replicas' snapshots, so each command is one script, and their
	// connection pools, so a re-send would find an idle connection at once.
	var warm sync.WaitGroup
	for _, cl := range clients {
		for _, tk := range append([]*client.Task{talker}, finishers...) {
			for range 6 {
				warm.Add(1)
				go func() {
					defer warm.Done()
					if _, err := cl.GetTask(ctx, tk.TaskID); err != nil {
						t.Error(err)
					}
				}()
			}
		}
	}
	warm.Wait()
	// Only scripts that keep a task command's record count (the argument
	// "rec" the store passes task_create and task_apply with a command id
	// it made): the replicas' background work (outbox maintenance, say)
	// runs scripts of its own.
	const taskCommand = "rec"
	proxy.Watch("evalsha", taskCommand)
	scriptsBefore := proxy.CountWith("evalsha", taskCommand)
	if err := rs.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = rs.Signal(syscall.SIGCONT)
		}
	}()

	type answer struct {
		what string
		err  error
		task *client.Task
	}
	answers := make(chan answer, 3*n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		cl := clients[i%2]
		label, text, fin := fmt.Sprintf("stalled-create-%d", i), fmt.Sprintf("stalled-message-%d", i), finishers[i]
		wg.Add(3)
		go func() {
			defer wg.Done()
			tk, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Label: label})
			answers <- answer{"create " + label, err, tk}
		}()
		go func() {
			defer wg.Done()
			tk, err := cl.Message(ctx, talker.TaskID, text, nil)
			answers <- answer{"message " + text, err, tk}
		}()
		go func() {
			defer wg.Done()
			tk, err := cl.Complete(ctx, fin.TaskID, map[string]int{"n": i})
			answers <- answer{"complete " + fin.TaskID, err, tk}
		}()
	}
	// Redis comes back once every write has its answer, or as soon as one
	// script reaches it a second time: then the second run meets the first
	// one's outcome, which is what applied writes twice before.
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	storetest.WaitFor(t, "every answer, or a script sent twice", func() bool {
		select {
		case <-all:
			return true
		default:
			return proxy.CountWith("evalsha", taskCommand)-scriptsBefore > 3*n
		}
	})
	if err := rs.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	<-all
	close(answers)
	if sent := proxy.CountWith("evalsha", taskCommand) - scriptsBefore; sent != 3*n {
		t.Errorf("%d scripts reached Redis for %d writes, want one each", sent, 3*n)
	}
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	storetest.WaitFor(t, "Redis to answer again", func() bool { return rdb.Ping(ctx).Err() == nil })

	applied := map[string]bool{}
	for a := range answers {
		switch {
		case a.err == nil:
			applied[a.what] = true
		default:
			var e *client.Error
			if !asError(a.err, &e) || e.Status != http.StatusServiceUnavailable || e.Code != client.CodeStoreUnavailable || e.RetryAfter <= 0 {
				t.Errorf("%s during the stall: %v, want its outcome or 503 store_unavailable with Retry-After", a.what, a.err)
			}
		}
	}

	// What Redis ran while stopped has run now; read the truth.
	cl := clients[0]
	var created []client.Task
	page, err := cl.ListTasks(ctx, client.ListTasksParams{SessionID: ses.SessionID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	created = page.Items
	for i := 0; i < n; i++ {
		label := fmt.Sprintf("stalled-create-%d", i)
		count := 0
		for _, tk := range created {
			if tk.Label == label {
				count++
			}
		}
		if count > 1 || (applied["create "+label] && count != 1) {
			t.Errorf("create %s: %d tasks, answered 2xx: %v", label, count, applied["create "+label])
		}
	}

	evs, err := cl.TaskEvents(ctx, talker.TaskID, client.EventsParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		text := fmt.Sprintf("stalled-message-%d", i)
		count := 0
		for _, e := range evs.Events {
			var d struct{ Text string }
			if e.Type == "task.message" && json.Unmarshal(e.Data, &d) == nil && d.Text == text {
				count++
			}
		}
		if count > 1 || (applied["message "+text] && count != 1) {
			t.Errorf("message %q: applied %d times, answered 2xx: %v", text, count, applied["message "+text])
		}
	}

	for _, fin := range finishers {
		evs, err := cl.TaskEvents(ctx, fin.TaskID, client.EventsParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		terminal := 0
		for _, e := range evs.Events {
			if e.Type == "task.terminal" {
				terminal++
			}
		}
		got, err := cl.GetTask(ctx, fin.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if terminal > 1 || (applied["complete "+fin.TaskID] && (terminal != 1 || got.Status != "completed")) {
			t.Errorf("complete %s: %d terminal events, status %s, answered 2xx: %v",
				fin.TaskID, terminal, got.Status, applied["complete "+fin.TaskID])
		}
	}
}

func asError(err error, target **client.Error) bool { return errors.As(err, target) }
