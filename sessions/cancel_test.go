package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/problem"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
)

// scripts is how many Lua scripts the store has run so far.
func (e env) scripts() float64 {
	return testutil.ToFloat64(e.metrics.RedisCommands.WithLabelValues("evalsha")) +
		testutil.ToFloat64(e.metrics.RedisCommands.WithLabelValues("eval"))
}

// cancelledEvent is the data of a session.cancelled event.
type cancelledEvent struct {
	Session          sessions.Session `json:"session"`
	Reason           string           `json:"reason"`
	CancelledTaskIDs []string         `json:"cancelledTaskIds"`
}

// wantCancelEnded checks the session's log ends with one session.cancelled
// naming the tasks, after a task.terminal of each.
func (e env) wantCancelEnded(t *testing.T, session, reason string, cancelled []string) {
	t.Helper()
	log := e.log(t, alice, session)
	terminal := map[string]bool{}
	for _, ev := range log[:len(log)-1] {
		if ev.Type == wire.EventSessionCancelled {
			t.Fatalf("session.cancelled before the end of the log: %+v", ev)
		}
		if ev.Type == wire.EventTaskTerminal {
			terminal[ev.TaskID] = true
		}
	}
	last := log[len(log)-1]
	if last.Type != wire.EventSessionCancelled {
		t.Fatalf("the log ends with %s, want %s", last.Type, wire.EventSessionCancelled)
	}
	data := decode[cancelledEvent](t, last.Data)
	if data.Reason != reason || !slices.Equal(data.CancelledTaskIDs, sorted(cancelled)) ||
		data.Session.SessionID != session || data.Session.Status != sessions.Cancelled {
		t.Fatalf("session.cancelled: %+v, want %q with %v", data, reason, sorted(cancelled))
	}
	for _, id := range cancelled {
		if !terminal[id] {
			t.Errorf("no task.terminal of %s before session.cancelled", id)
		}
	}
}

// A session with many live tasks is cancelled in bounded batches: every
// live task ends cancelled, a finished one stays as it was, and the cancel
// ends with one session.cancelled naming them all.
func TestCancelInBatches(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		e := newEnv(t, cfg)
		ctx := context.Background()
		ses := e.create(t, alice, "")
		const n = 40 // more live tasks than one batch takes
		var live []string
		for range n {
			live = append(live, e.task(t, alice, ses.SessionID).TaskID)
		}
		// Live tasks at other revisions and statuses, and a finished one.
		halfway := "halfway"
		if _, err := e.tasks.Run(ctx, alice, live[1], tasks.Command{Kind: tasks.CmdProgress, StatusMessage: &halfway}, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.tasks.Run(ctx, alice, live[2], tasks.Command{Kind: tasks.CmdRequireInput, Requests: []tasks.InputRequest{
			{RequestID: "q", Kind: "ask", Prompt: "?", Display: "confirmation"},
		}}, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
		done := e.task(t, alice, ses.SessionID)
		if _, err := e.tasks.Run(ctx, alice, done.TaskID, tasks.Command{Kind: tasks.CmdComplete, Result: json.RawMessage(`"ok"`)}, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
		revisions := map[string]int64{}
		for _, id := range live {
			revisions[id] = e.getTask(t, id).Revision
		}

		// The scripts a cancel of one live task runs: no batching can make
		// a cancel of n take as few.
		one := e.create(t, alice, "")
		e.task(t, alice, one.SessionID)
		before := e.scripts()
		if _, _, err := e.sessions.Cancel(ctx, alice, one.SessionID, "", store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
		single := e.scripts() - before

		key := store.Idempotency{Scope: "alice\nPOST /v1/sessions/cancel\nk1", BodyHash: "h1"}
		before = e.scripts()
		raw, replayed, err := e.sessions.Cancel(ctx, alice, ses.SessionID, "user left", key)
		if err != nil || replayed {
			t.Fatalf("cancel: %v (replayed %v)", err, replayed)
		}
		if ran := e.scripts() - before; ran <= single {
			t.Errorf("the cancel of %d tasks ran %v scripts, as many as that of one task: it was not done in batches", n, ran)
		}
		answer := decode[sessions.CancelAnswer](t, raw)
		got := decode[sessions.Session](t, answer.Session)
		if got.SessionID != ses.SessionID || got.Status != sessions.Cancelled || got.LastUpdatedAt.Before(got.CreatedAt.Time) {
			t.Fatalf("the cancelled session: %+v", got)
		}
		if !slices.Equal(answer.CancelledTaskIDs, sorted(live)) {
			t.Fatalf("cancelled %d tasks %v, want the %d live ones, sorted", len(answer.CancelledTaskIDs), answer.CancelledTaskIDs, n)
		}
		for _, id := range live {
			task := e.getTask(t, id)
			if task.Status != tasks.Cancelled || task.CancelReason != "user left" || task.Revision != revisions[id]+1 || len(task.InputRequests) != 0 {
				t.Fatalf("task %s after the cancel: %s %q revision %d (was %d)", id, task.Status, task.CancelReason, task.Revision, revisions[id])
			}
		}
		if task := e.getTask(t, done.TaskID); task.Status != tasks.Completed || task.Revision != done.Revision+1 {
			t.Fatalf("the finished task changed: %s revision %d", task.Status, task.Revision)
		}
		e.wantCancelEnded(t, ses.SessionID, "user left", live)
		if stalled, err := e.store.StalledCancels(ctx, 0, time.Now().Add(24*time.Hour), 100); err != nil || slices.Contains(stalled, ses.SessionID) {
			t.Fatalf("the ended cancel is still among the stalled ones: %v %v", stalled, err)
		}

		// A repeat with the key gets the same answer; without it, the
		// cancel is a no-op that answers the session as it is.
		again, replayed, err := e.sessions.Cancel(ctx, alice, ses.SessionID, "user left", key)
		if err != nil || !replayed || string(again) != string(raw) {
			t.Fatalf("repeat with the key: %s %v %v", again, replayed, err)
		}
		raw, replayed, err = e.sessions.Cancel(ctx, alice, ses.SessionID, "again", store.Idempotency{})
		if answer := decode[sessions.CancelAnswer](t, raw); err != nil || replayed || answer.CancelledTaskIDs == nil ||
			len(answer.CancelledTaskIDs) != 0 || decode[sessions.Session](t, answer.Session).Status != sessions.Cancelled {
			t.Fatalf("repeat: %s %v %v", raw, replayed, err)
		}
		if _, err := e.tasks.Create(ctx, alice, tasks.CreateInput{SessionID: ses.SessionID}, store.Idempotency{}); !errors.Is(err, problem.ErrSessionNotActive) {
			t.Fatalf("a task in the cancelled session: %v", err)
		}
		if _, _, err := e.sessions.Cancel(ctx, bob, ses.SessionID, "", store.Idempotency{}); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("another principal's cancel: %v", err)
		}
	})
}

// Reset cancels the session and opens a new active one with the same owner
// and metadata; a repeat with the same key answers the same new session.
func TestResetCarriesMetadata(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		e := newEnv(t, cfg)
		ctx := context.Background()
		type resetAnswer struct {
			PreviousSessionID string           `json:"previousSessionId"`
			Session           sessions.Session `json:"session"`
		}
		old := e.create(t, alice, `{"chat":"c1","n":[1,2]}`)
		task := e.task(t, alice, old.SessionID)

		key := store.Idempotency{Scope: "alice\nPOST /v1/sessions/reset\nr1", BodyHash: "h1"}
		raw, replayed, err := e.sessions.Reset(ctx, alice, old.SessionID, "new chat", key)
		if err != nil || replayed {
			t.Fatalf("reset: %v (replayed %v)", err, replayed)
		}
		got := decode[resetAnswer](t, raw)
		ses := got.Session
		if got.PreviousSessionID != old.SessionID || ses.SessionID == old.SessionID || ses.Status != sessions.Active ||
			ses.Owner != "alice" || string(ses.Metadata) != `{"chat":"c1","n":[1,2]}` {
			t.Fatalf("reset: %s", raw)
		}
		if now, _, err := e.sessions.Get(ctx, alice, ses.SessionID); err != nil || now.Status != sessions.Active {
			t.Fatalf("the new session: %+v %v", now, err)
		}
		if prev, _, err := e.sessions.Get(ctx, alice, old.SessionID); err != nil || prev.Status != sessions.Cancelled {
			t.Fatalf("the previous session: %+v %v", prev, err)
		}
		if tk := e.getTask(t, task.TaskID); tk.Status != tasks.Cancelled || tk.CancelReason != "new chat" {
			t.Fatalf("the previous session's task: %s %q", tk.Status, tk.CancelReason)
		}
		e.wantCancelEnded(t, old.SessionID, "new chat", []string{task.TaskID})
		if log := e.log(t, alice, ses.SessionID); len(log) != 1 || log[0].Type != wire.EventSessionCreated {
			t.Fatalf("the new session's log: %+v", log)
		}

		again, replayed, err := e.sessions.Reset(ctx, alice, old.SessionID, "new chat", key)
		if err != nil || !replayed || decode[resetAnswer](t, again).Session.SessionID != ses.SessionID {
			t.Fatalf("repeat: %s %v %v, want %s again", again, replayed, err, ses.SessionID)
		}

		// An admin's reset keeps the owner; to another principal, the
		// session does not exist.
		raw, _, err = e.sessions.Reset(ctx, admin, ses.SessionID, "", store.Idempotency{})
		if byAdmin := decode[resetAnswer](t, raw).Session; err != nil || byAdmin.Owner != "alice" || string(byAdmin.Metadata) != string(ses.Metadata) {
			t.Fatalf("reset by an admin: %s %v", raw, err)
		}
		if _, _, err := e.sessions.Reset(ctx, bob, ses.SessionID, "", store.Idempotency{}); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("another principal's reset: %v", err)
		}
	})
}
