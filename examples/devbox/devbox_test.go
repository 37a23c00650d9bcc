package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// TestDevbox runs the executor against a real server, with the test as the
// human who answers its question.
func TestDevbox(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	token := apptest.Token(t, "executor")
	c := client.New(srv.URL, token)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))

	_, task := apptest.SessionWithTask(t, ctx, c, client.CreateTaskInput{Kind: "devbox"})

	asked := make(chan string, 1) // the question the human saw
	humanDone := make(chan error, 1)
	go func() { humanDone <- playHuman(ctx, c, task.TaskID, asked) }()

	dev := newDevbox(log)
	if err := run(ctx, config{API: srv.URL, Token: token, TaskID: task.TaskID, Devbox: dev, Log: log}); err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := <-humanDone; err != nil {
		t.Fatalf("the human: %v", err)
	}
	if q := <-asked; !strings.Contains(q, "legacy_users") {
		t.Errorf("the human was asked %q", q)
	}

	final, err := c.GetTask(ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	var result struct{ Job, Summary string }
	if err := json.Unmarshal(final.Result, &result); err != nil || final.Status != client.StatusCompleted ||
		result.Job != "job-1" || !strings.HasPrefix(result.Summary, "migrated 1,204 users") {
		t.Fatalf("final task: status %s, result %s (%v)", final.Status, final.Result, err)
	}
	if len(final.InputResponses) != 1 || final.InputResponses[0].OptionID != "continue" {
		t.Errorf("answers recorded: %+v", final.InputResponses)
	}

	// Each state reported once, in the job's order, despite the duplicates
	// and the stale redelivery.
	var reported []string
	for _, ev := range taskEvents(t, ctx, c, task.TaskID) {
		if ev.Type != client.EventTaskProgress {
			continue
		}
		snap, err := ev.Task()
		if err != nil {
			t.Fatal(err)
		}
		reported = append(reported, snap.StatusMessage)
	}
	want := []string{statePending, stateRunning, stateAttentionRequired, stateRunning, stateComplete}
	if !slices.Equal(reported, want) {
		t.Errorf("progress reported %q, want %q", reported, want)
	}

	// The hook stored each delivery once: the duplicates were dropped, the
	// stale one (a new delivery id) was stored and skipped by the executor.
	hooks, err := c.ListHooks(ctx, client.ListHooksParams{TaskID: task.TaskID})
	if err != nil || len(hooks.Items) != 1 {
		t.Fatalf("ListHooks: %+v, %v", hooks, err)
	}
	h := hooks.Items[0]
	if h.Status != client.HookClosed || h.CloseReason != client.CloseReasonTaskTerminal {
		t.Errorf("hook after the task: %s (%s)", h.Status, h.CloseReason)
	}
	page, err := c.HookLog(ctx, h.HookID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var stored []int
	for _, ev := range page.Events {
		var st jobState
		if err := json.Unmarshal([]byte(ev.Body), &st); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, st.Seq)
	}
	if !slices.Equal(stored, []int{1, 2, 3, 2, 4, 5}) {
		t.Errorf("the hook stored job states %v, want [1 2 3 2 4 5]", stored)
	}

	// The devbox posts again after the task completed: nobody reads the hook
	// any more, and it says so.
	err = dev.job("job-1").Redeliver(ctx)
	var e *client.Error
	if !client.IsCode(err, client.CodeHookClosed) || !errors.As(err, &e) || e.Status != http.StatusGone {
		t.Fatalf("a post after completion: %v, want 410 hook_closed", err)
	}
}

// playHuman waits (long-polling) for the task to ask, then answers
// "continue".
func playHuman(ctx context.Context, c *client.Client, taskID string, asked chan<- string) error {
	var rev int64
	for {
		t, err := c.WaitTask(ctx, taskID, rev, 30*time.Second)
		if err != nil {
			return err
		}
		if t.Status == client.StatusInputRequired {
			req := t.InputRequests[0]
			asked <- req.Prompt
			_, err := c.Respond(ctx, taskID, []client.InputResponse{{RequestID: req.RequestID, OptionID: "continue"}})
			return err
		}
		if t.Terminal() {
			return context.Canceled
		}
		rev = t.Revision
	}
}

// taskEvents reads a task's whole event log.
func taskEvents(t *testing.T, ctx context.Context, c *client.Client, id string) []client.Event {
	t.Helper()
	var all []client.Event
	after := ""
	for {
		page, err := c.TaskEvents(ctx, id, client.EventsParams{After: after, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			return all
		}
		all = append(all, page.Events...)
		after = page.Cursor
	}
}

// startServer runs a server whose public URL is its own address, so that
// the callback URLs it hands out reach it.
func startServer(t *testing.T) *apptest.Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // apptest listens on it again; another listener taking it meanwhile is unlikely
	return apptest.Standalone(t, app.Config{
		Addr: addr, PublicURL: "http://" + addr, WakeBlock: 500 * time.Millisecond,
	})
}
