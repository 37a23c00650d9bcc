package app_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

func TestSessionCancelAndReset(t *testing.T) {
	apptest.EachBackend(t, app.Config{}, func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		cl := srv.Client(t, "agent")
		ses, err := cl.CreateSession(ctx, client.CreateSessionInput{Metadata: map[string]any{"chat": "c1"}})
		if err != nil {
			t.Fatal(err)
		}
		live := apptest.StartTasks(t, ctx, cl, ses.SessionID, 3)
		done, _ := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID})
		if _, err := cl.Complete(ctx, done.TaskID, "ok"); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.RequireInput(ctx, live[0], []client.InputRequest{{RequestID: "q", Prompt: "?", Display: "confirmation"}}); err != nil {
			t.Fatal(err)
		}

		out, err := cl.CancelSession(ctx, ses.SessionID, "user left \u0007 \"quoted\"")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(live)
		if out.Session.Status != client.SessionCancelled || !slices.Equal(out.CancelledTaskIDs, live) {
			t.Fatalf("cancel: %+v, want live tasks %v", out, live)
		}
		for _, id := range live {
			tk, _ := cl.GetTask(ctx, id)
			if tk.Status != client.StatusCancelled || tk.CancelReason != "user left \u0007 \"quoted\"" || len(tk.InputRequests) != 0 {
				t.Fatalf("task %s after cancel: %+v", id, tk)
			}
		}
		// The cancelled tasks are in the lists of cancelled tasks, the
		// owner's and the session's.
		for _, p := range []client.ListTasksParams{{Status: client.StatusCancelled}, {Status: client.StatusCancelled, SessionID: ses.SessionID}} {
			page, err := cl.ListTasks(ctx, p)
			var got []string
			for _, tk := range page.Items {
				got = append(got, tk.TaskID)
			}
			slices.Sort(got)
			if err != nil || !slices.Equal(got, live) {
				t.Fatalf("cancelled tasks listed with %+v: %v, %v; want %v", p, got, err, live)
			}
		}
		if tk, _ := cl.GetTask(ctx, done.TaskID); tk.Status != client.StatusCompleted {
			t.Fatalf("a finished task changed: %s", tk.Status)
		}
		again, err := cl.CancelSession(ctx, ses.SessionID, "again")
		if err != nil || len(again.CancelledTaskIDs) != 0 || again.Session.Status != client.SessionCancelled {
			t.Fatalf("repeat cancel: %+v %v", again, err)
		}
		if _, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID}); !client.IsCode(err, client.CodeSessionNotActive) {
			t.Fatalf("task in a cancelled session: %v", err)
		}
		evs, err := cl.SessionEvents(ctx, ses.SessionID, client.EventsParams{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if last := evs.Events[len(evs.Events)-1]; last.Type != client.EventSessionCancelled {
			t.Fatalf("the session log ends with %s", last.Type)
		}

		reset, err := cl.ResetSession(ctx, ses.SessionID, "", client.WithIdempotencyKey("r1"))
		if err != nil {
			t.Fatal(err)
		}
		if reset.PreviousSessionID != ses.SessionID || reset.Session.Status != client.SessionActive ||
			reset.Session.SessionID == ses.SessionID || string(reset.Session.Metadata) != `{"chat":"c1"}` {
			t.Fatalf("reset: %+v", reset)
		}
		var meta client.Response
		again2, err := cl.ResetSession(ctx, ses.SessionID, "", client.WithIdempotencyKey("r1"), client.WithResponse(&meta))
		if err != nil || again2.Session.SessionID != reset.Session.SessionID || !meta.Replayed {
			t.Fatalf("repeated reset: %+v %v %+v", again2, err, meta)
		}
		if _, err := cl.WithToken(apptest.Token(t, "other")).CancelSession(ctx, reset.Session.SessionID, ""); !client.IsCode(err, client.CodeNotFound) {
			t.Fatalf("another principal cancelling: %v", err)
		}
	})
}

// A task past its TTL is gone with everything under it, on every store,
// by Redis key expiry alone; and the request log never holds the token.
func TestExpiredTasksAreGone(t *testing.T) {
	apptest.EachBackend(t, app.Config{}, func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		tok := apptest.Token(t, "ttl")
		cl := client.New(srv.URL, tok)
		ses, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{TTLMs: client.Int64(1000)})
		if task.TTLMs == nil || *task.TTLMs != 1000 || task.ExpiresAt == nil || !task.ExpiresAt.Equal(task.CreatedAt.Add(1e9)) {
			t.Fatalf("effective ttl: %v %v", task.TTLMs, task.ExpiresAt)
		}
		if _, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("x")}); err != nil {
			t.Fatal(err)
		}
		storetest.WaitFor(t, "the task to expire", func() bool {
			_, err := cl.GetTask(ctx, task.TaskID)
			return client.IsCode(err, client.CodeNotFound)
		})
		if _, err := cl.TaskEvents(ctx, task.TaskID, client.EventsParams{}); !client.IsCode(err, client.CodeNotFound) {
			t.Fatalf("events of an expired task: %v", err)
		}
		if _, err := cl.Complete(ctx, task.TaskID, nil); !client.IsCode(err, client.CodeNotFound) {
			t.Fatalf("completing an expired task: %v", err)
		}
		page, err := cl.ListTasks(ctx, client.ListTasksParams{SessionID: ses.SessionID})
		if err != nil || len(page.Items) != 0 {
			t.Fatalf("an expired task is listed: %+v %v", page, err)
		}
		logs := srv.Logs.String()
		if !strings.Contains(logs, `"route":"/v1/tasks/{taskId}"`) {
			t.Fatalf("no request line with the route template in the logs")
		}
		if strings.Contains(logs, tok) || strings.Contains(logs, task.TaskID) {
			t.Fatal("the logs hold the bearer token or an id from a path")
		}
	})
}

// A ttlMs far above the maximum is cut to the maximum, however large: the
// receipt is durable, never created already expired.
func TestHugeTTLIsCutToTheMaximum(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, app.Config{})
	ctx := context.Background()
	cl := srv.Client(t, "ttl-huge")
	ses := apptest.Session(t, ctx, cl)
	const maxTTL = 30 * 24 * 3600 * 1000
	for _, ttl := range []int64{1e13, 1<<63 - 1} {
		task, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, TTLMs: client.Int64(ttl)})
		if err != nil {
			t.Fatal(err)
		}
		if task.TTLMs == nil || *task.TTLMs != maxTTL {
			t.Fatalf("ttlMs %d: effective %v, want %d", ttl, fmtTTL(task.TTLMs), maxTTL)
		}
		if _, err := cl.GetTask(ctx, task.TaskID); err != nil {
			t.Fatalf("ttlMs %d: the receipt is not durable: %v", ttl, err)
		}
	}
}

func fmtTTL(ms *int64) any {
	if ms == nil {
		return nil
	}
	return *ms
}
