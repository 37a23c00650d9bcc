package app_test

import (
	"context"
	"slices"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
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
