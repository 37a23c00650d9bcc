package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/connections/providertest"
)

// TestDevbox runs the executor against a real server, with the test as the
// human who answers its question.
func TestDevbox(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jobMigrate)
	ctx, c, task := f.ctx, f.c, f.task
	dev := newDevbox(f.cfg.Log)
	f.cfg.Devbox = dev
	ans := f.runWithHuman(t)
	if ans.err != nil {
		t.Fatalf("the human: %v", ans.err)
	}
	if len(ans.prompts) != 1 || !strings.Contains(ans.prompts[0], "legacy_users") {
		t.Errorf("the human was asked %q", ans.prompts)
	}

	final := f.final(t)
	var result struct{ Job, Summary string }
	if err := json.Unmarshal(final.Result, &result); err != nil || final.Status != client.StatusCompleted ||
		result.Job != "job-1" || result.Summary != "migrated 1,204 users; dropped legacy_users" {
		t.Fatalf("final task: status %s, result %s (%v)", final.Status, final.Result, err)
	}
	if len(final.InputResponses) != 1 || final.InputResponses[0].OptionID != "continue" {
		t.Errorf("answers recorded: %+v", final.InputResponses)
	}
	if final.ReleasedAt == nil {
		t.Errorf("the executor did not release the task it completed")
	}

	// Each state reported once, in the job's order, despite the duplicates
	// and the stale redelivery.
	want := []string{statePending, stateRunning, stateAttentionRequired, stateRunning, stateComplete}
	if reported := progressReported(t, ctx, c, task.TaskID); !slices.Equal(reported, want) {
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

// A job with a follow-up question: the human is asked twice, each answer
// goes to the job, and the task completes with what both decided.
func TestDevboxFollowUpQuestion(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jobMigrateAndReindex)
	ans := f.runWithHuman(t)
	if ans.err != nil || len(ans.prompts) != 2 || !strings.Contains(ans.prompts[0], "legacy_users") ||
		!strings.Contains(ans.prompts[1], "search index") {
		t.Fatalf("the human was asked %q (%v)", ans.prompts, ans.err)
	}
	final := f.final(t)
	var result struct{ Summary string }
	if err := json.Unmarshal(final.Result, &result); err != nil || final.Status != client.StatusCompleted ||
		result.Summary != "migrated 1,204 users; dropped legacy_users; rebuilt the search index" {
		t.Fatalf("final task: status %s, result %s (%v)", final.Status, final.Result, err)
	}
	if len(final.InputResponses) != 2 || final.ReleasedAt == nil {
		t.Errorf("final task: answers %+v, releasedAt %v", final.InputResponses, final.ReleasedAt)
	}
	want := []string{statePending, stateRunning, stateAttentionRequired, stateRunning, stateAttentionRequired, stateComplete}
	if reported := progressReported(t, f.ctx, f.c, f.task.TaskID); !slices.Equal(reported, want) {
		t.Errorf("progress reported %q, want %q", reported, want)
	}
}

// A job that errors fails the task with the job's error, and the task is
// released: nothing runs any more.
func TestDevboxJobErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jobBrokenMigration)
	if err := run(f.ctx, f.cfg); err != nil {
		t.Fatalf("run: %v", err)
	}
	final := f.final(t)
	if final.Status != client.StatusFailed || final.Error == nil ||
		final.Error.Message != "the job failed: duplicate key value in users.email" || final.ReleasedAt == nil {
		t.Fatalf("final task: status %s, error %+v, releasedAt %v", final.Status, final.Error, final.ReleasedAt)
	}
	if reported := progressReported(t, f.ctx, f.c, f.task.TaskID); !slices.Equal(reported, []string{statePending, stateRunning, stateErrored}) {
		t.Errorf("progress reported %q", reported)
	}
}

// The owner cancels the session while the job runs and waits for the
// release: the executor sees the task cancelled, stops the job and releases
// the task, and the cancel answers with nothing left unreleased.
func TestDevboxCancel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jobLongMigration)
	ctx, c, task := f.ctx, f.c, f.task
	dev := newDevbox(testLog(t))
	f.cfg.Devbox = dev
	ran := make(chan error, 1)
	go func() { ran <- run(ctx, f.cfg) }()
	// Wait until the job runs: the executor reported it.
	for cur := task; cur.StatusMessage != stateRunning; {
		var err error
		if cur, err = c.WaitTask(ctx, task.TaskID, cur.Revision, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	got, err := c.CancelSession(ctx, task.SessionID, "the user left", client.WithReleaseWait(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.CancelledTaskIDs, []string{task.TaskID}) || got.UnreleasedTaskIDs == nil || len(got.UnreleasedTaskIDs) != 0 {
		t.Fatalf("the cancel answered %+v", got)
	}
	if !dev.Stopped("job-1") {
		t.Errorf("the task was released before its job stopped")
	}
	if err := <-ran; err != nil {
		t.Fatalf("run: %v", err)
	}
	if final := f.final(t); final.Status != client.StatusCancelled || final.CancelReason != "the user left" || final.ReleasedAt == nil {
		t.Fatalf("final task: %s (%q), releasedAt %v", final.Status, final.CancelReason, final.ReleasedAt)
	}
}

// fixture is a server, an executor's client of it, and a devbox task that
// runs a job, with the config that runs the executor on it.
type fixture struct {
	ctx  context.Context
	c    *client.Client
	task *client.Task
	cfg  config
}

// newFixture starts a server and a devbox task that runs job.
func newFixture(t *testing.T, job string) *fixture {
	t.Helper()
	srv := startServer(t)
	ctx, token, c := asExecutor(t, srv)
	task := devboxTask(t, ctx, c, job)
	return &fixture{ctx: ctx, c: c, task: task,
		cfg: config{API: srv.URL, Token: token, TaskID: task.TaskID, Log: testLog(t)}}
}

// devboxTask opens a session and starts a devbox task that runs job.
func devboxTask(t *testing.T, ctx context.Context, c *client.Client, job string) *client.Task {
	t.Helper()
	_, task := apptest.SessionWithTask(t, ctx, c, client.CreateTaskInput{Kind: "devbox", Input: map[string]string{"job": job}})
	return task
}

// runWithHuman runs the executor while playHuman answers the task, and
// returns what the human was asked.
func (f *fixture) runWithHuman(t *testing.T) answered {
	t.Helper()
	human := make(chan answered, 1)
	go func() { human <- playHuman(f.ctx, f.c, f.task.TaskID) }()
	if err := run(f.ctx, f.cfg); err != nil {
		t.Fatalf("run: %v", err)
	}
	return <-human
}

// final is the task as it is now.
func (f *fixture) final(t *testing.T) *client.Task {
	t.Helper()
	final, err := f.c.GetTask(f.ctx, f.task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	return final
}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// answered is what the human was asked, how many times they signed in,
// or why they stopped answering.
type answered struct {
	prompts []string
	signins int
	err     error
}

// playHuman answers "continue" to every question the task asks, and signs
// in whenever it asks for a sign-in, until it ends, waiting for each with a
// long-poll that only questions, sign-ins and the end wake.
func playHuman(ctx context.Context, c *client.Client, taskID string) answered {
	var out answered
	var rev int64
	for {
		t, err := c.WaitTask(ctx, taskID, rev, 30*time.Second,
			client.WithKinds(client.EventInputRequested, client.EventAuthorizationRequired, client.EventTaskTerminal))
		if err != nil {
			out.err = err
			return out
		}
		if t.Terminal() {
			return out
		}
		for _, req := range t.InputRequests {
			if req.Kind == "authorization" {
				if out.err = signIn(ctx, req.AuthorizationURL); out.err != nil {
					return out
				}
				out.signins++
				continue
			}
			out.prompts = append(out.prompts, req.Prompt)
			if _, err := c.Respond(ctx, taskID, []client.Answer{{RequestID: req.RequestID, OptionID: "continue"}}); err != nil {
				out.err = err
				return out
			}
		}
		rev = t.Revision
	}
}

// progressReported is the statusMessage of each task.progress event of the
// task, in order.
func progressReported(t *testing.T, ctx context.Context, c *client.Client, id string) []string {
	t.Helper()
	var reported []string
	for _, ev := range taskEvents(t, ctx, c, id) {
		if ev.Type != client.EventTaskProgress {
			continue
		}
		snap, err := ev.Task()
		if err != nil {
			t.Fatal(err)
		}
		reported = append(reported, snap.StatusMessage)
	}
	return reported
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
	// apptest picks the port, and points hook URLs at it.
	return apptest.Standalone(t, app.Config{WakeBlock: 500 * time.Millisecond})
}

// signInServer starts a server whose connection "devbox" signs in with
// prov, asking for scopes, and keeps the tokens sealed.
func signInServer(t *testing.T, prov *providertest.Provider, scopes ...string) *apptest.Server {
	file := providertest.WriteConnectionsFile(t, prov.Connection("devbox", "path", scopes...))
	return apptest.Standalone(t, app.Config{ConnectionsFile: file, WakeBlock: 500 * time.Millisecond,
		VaultKeys: "k1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))})
}

// asExecutor is a context of a minute at most, and the executor's token and
// client of srv.
func asExecutor(t *testing.T, srv *apptest.Server) (context.Context, string, *client.Client) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	token := apptest.Token(t, "executor")
	return ctx, token, client.New(srv.URL, token)
}

// The agent that starts a devbox task hears it through a notification
// endpoint instead of a long-poll: the question reaches it (and it answers,
// as the human), then the end. Every delivery it takes is signed.
func TestDevboxAgentHearsTheTask(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, app.Config{AllowPrivateTargets: true, WakeBlock: 500 * time.Millisecond})
	ctx, token, c := asExecutor(t, srv)
	heard := make(chan client.Event, 16)
	cfg := config{API: srv.URL, Token: token, Job: jobMigrate, Devbox: newDevbox(testLog(t)), Log: testLog(t),
		Listen: "127.0.0.1:0", Heard: func(ev client.Event) { heard <- ev }}
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg) }()

	var types []string
	for {
		select {
		case ev := <-heard:
			types = append(types, ev.Type)
			if ev.Type == client.EventInputRequested {
				var data struct{ Requests []client.InputRequest }
				if err := json.Unmarshal(ev.Data, &data); err != nil || len(data.Requests) == 0 {
					t.Fatalf("the question's event: %s (%v)", ev.Data, err)
				}
				req := data.Requests[0]
				if _, err := c.Respond(ctx, ev.TaskID, []client.Answer{{RequestID: req.RequestID, OptionID: "continue"}}); err != nil {
					t.Fatal(err)
				}
			}
			if ev.Type == client.EventTaskTerminal {
				if err := <-done; err != nil {
					t.Fatalf("run: %v", err)
				}
				if !slices.Contains(types, client.EventInputRequested) {
					t.Fatalf("the agent heard %v: no question", types)
				}
				return
			}
		case err := <-done:
			// run closes its listener, which lets the deliveries under way
			// finish, before it returns: what it heard is in the channel.
			for len(heard) > 0 {
				types = append(types, (<-heard).Type)
			}
			if err != nil || !slices.Contains(types, client.EventTaskTerminal) || !slices.Contains(types, client.EventInputRequested) {
				t.Fatalf("run ended (%v) and the agent heard %v, want the question and the end", err, types)
			}
			return
		case <-ctx.Done():
			t.Fatalf("the agent heard %v, then nothing", types)
		}
	}
}

// signIn is the person's browser opening a sign-in's authorizationUrl: the
// provider (which agrees at once) redirects to taskhook's connection
// callback, which redirects to the page that says the tab can be closed.
func signIn(ctx context.Context, authorizationURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authorizationURL, nil)
	if err != nil {
		return err
	}
	var hops []string
	browser := &http.Client{CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		hops = append(hops, r.URL.Path)
		return nil
	}}
	resp, err := browser.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "signed in") || len(hops) != 2 ||
		!strings.HasPrefix(hops[0], "/v1/connections/devbox/callback/") || hops[1] != "/v1/connections/signed-in" {
		return fmt.Errorf("the sign-in ended at %d %q after %q", resp.StatusCode, page, hops)
	}
	return nil
}

// The devbox API takes only tokens its provider issued: the executor asks
// taskhook for the requester's token, the requester signs in through the
// fake provider (the test follows the authorizationUrl), and the job runs
// to the end with the token.
func TestDevboxSignsIn(t *testing.T) {
	t.Parallel()
	prov := providertest.New(t)
	srv := signInServer(t, prov, "jobs:run")
	ctx, token, c := asExecutor(t, srv)
	dev := newDevbox(testLog(t)).requireTokens(prov.URL + "/introspect")
	if _, err := dev.StartJob(ctx, "", jobMigrate, srv.URL, newWebhookSecret()); !errors.Is(err, errUnauthorized) {
		t.Fatalf("a call without a token: %v", err)
	}
	if _, err := dev.StartJob(ctx, "made-up", jobMigrate, srv.URL, newWebhookSecret()); !errors.Is(err, errUnauthorized) {
		t.Fatalf("a call with a token the provider did not issue: %v", err)
	}

	task := devboxTask(t, ctx, c, jobMigrate)
	human := make(chan answered, 1)
	go func() { human <- playHuman(ctx, c, task.TaskID) }()
	if err := run(ctx, config{API: srv.URL, Token: token, TaskID: task.TaskID, Devbox: dev, Log: testLog(t),
		Connection: "devbox"}); err != nil {
		t.Fatalf("run: %v", err)
	}
	ans := <-human
	if ans.err != nil || ans.signins != 1 || len(ans.prompts) != 1 {
		t.Fatalf("the human: %d sign-ins, asked %q, %v", ans.signins, ans.prompts, ans.err)
	}
	final, err := c.GetTask(ctx, task.TaskID)
	if err != nil || final.Status != client.StatusCompleted {
		t.Fatalf("final task: %+v %v", final, err)
	}
	page, err := c.TaskEvents(ctx, task.TaskID, client.EventsParams{}, client.WithKinds(client.EventAuthorizationCompleted))
	if err != nil || len(page.Events) != 1 || !strings.Contains(string(page.Events[0].Data), `"outcome":"authorized"`) {
		t.Fatalf("authorization.completed: %+v %v", page, err)
	}
	if prov.Exchange != 1 {
		t.Errorf("codes exchanged: %d, want 1", prov.Exchange)
	}
}

// A devbox that refuses the token fresh from a sign-in (here: it checks
// tokens with another provider) sends the executor to the loop guard, which
// fails the task instead of asking the person to sign in again and again.
func TestDevboxTokenRefused(t *testing.T) {
	t.Parallel()
	prov, elsewhere := providertest.New(t), providertest.New(t)
	srv := signInServer(t, prov)
	ctx, token, c := asExecutor(t, srv)
	task := devboxTask(t, ctx, c, jobMigrate)
	human := make(chan answered, 1)
	go func() { human <- playHuman(ctx, c, task.TaskID) }()
	dev := newDevbox(testLog(t)).requireTokens(elsewhere.URL + "/introspect")
	err := run(ctx, config{API: srv.URL, Token: token, TaskID: task.TaskID, Devbox: dev, Log: testLog(t), Connection: "devbox"})
	if !errors.Is(err, errUnauthorized) {
		t.Fatalf("run: %v, want the devbox's refusal", err)
	}
	if ans := <-human; ans.err != nil || ans.signins != 1 {
		t.Fatalf("the human: %d sign-ins, %v", ans.signins, ans.err)
	}
	final, err := c.GetTask(ctx, task.TaskID)
	if err != nil || final.Status != client.StatusFailed || final.Error == nil ||
		final.Error.Message != "authorization rejected right after sign-in" {
		t.Fatalf("final task: %+v %v", final, err)
	}
}

// A caller calls the published devbox over REST: the executor hears of the
// task by its task.created webhook alone (it was published before the
// call, so the catch-up had nothing to take), runs the job, asks; the
// caller, as the task's owner, answers; the executor completes and
// releases. On every store.
func TestDevboxToolOverREST(t *testing.T) {
	t.Parallel()
	apptest.EachBackend(t, toolServerConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx, token, _ := asExecutor(t, srv)
		publishTool(t, ctx, srv, token)
		caller := srv.Client(t, "caller")

		// The schema names the jobs: another is refused before any task exists.
		_, err := caller.CallTool(ctx, "devbox", client.CallToolInput{Arguments: map[string]string{"job": "drop-everything"}})
		if !client.IsCode(err, client.CodeInvalidRequest) {
			t.Fatalf("a call with a job the devbox does not know: %v", err)
		}
		task, err := caller.CallTool(ctx, "devbox", client.CallToolInput{Arguments: map[string]string{"job": jobMigrateAndReindex}})
		if err != nil || task.Owner != "caller" || task.Executor != "executor" || task.Kind != "devbox" {
			t.Fatalf("CallTool: %+v %v", task, err)
		}
		ans := playHuman(ctx, caller, task.TaskID)
		if ans.err != nil || len(ans.prompts) != 2 || !strings.Contains(ans.prompts[0], "legacy_users") {
			t.Fatalf("the caller was asked %q (%v)", ans.prompts, ans.err)
		}
		final := releasedTask(t, ctx, caller, task.TaskID)
		var result struct{ Summary string }
		if err := json.Unmarshal(final.Result, &result); err != nil || final.Status != client.StatusCompleted ||
			result.Summary != "migrated 1,204 users; dropped legacy_users; rebuilt the search index" {
			t.Fatalf("final task: status %s, result %s (%v)", final.Status, final.Result, err)
		}
	})
}

// A caller calls the devbox through /mcp as a 2026-07-28 client with the
// tasks extension: a task at once; tasks/get shows the question as an
// elicitation, tasks/update answers it, and tasks/get shows the result.
func TestDevboxToolOverMCP(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, toolServerConfig())
	ctx, token, _ := asExecutor(t, srv)
	publishTool(t, ctx, srv, token)
	m := mcpCaller{url: srv.URL + "/mcp", token: apptest.Token(t, "caller")}

	var created struct{ ResultType, TaskID, Status string }
	m.call(t, ctx, "tools/call", "devbox", map[string]any{"name": "devbox", "arguments": map[string]any{"job": jobMigrate}}, &created)
	if created.ResultType != "task" || created.TaskID == "" || created.Status != client.StatusWorking {
		t.Fatalf("tools/call: %+v", created)
	}
	id := created.TaskID
	// tasks/get answers at once; the caller's REST long-poll is what waits.
	rest := client.New(srv.URL, m.token)
	if _, err := rest.WaitTask(ctx, id, 0, 30*time.Second, client.WithKinds(client.EventInputRequested)); err != nil {
		t.Fatal(err)
	}

	var asking struct {
		Status        string
		InputRequests map[string]struct {
			Method string
			Params struct {
				Mode, Message   string
				RequestedSchema struct {
					Properties struct {
						OptionID struct{ OneOf []struct{ Const string } }
					}
				}
			}
		}
	}
	m.call(t, ctx, "tasks/get", id, map[string]any{"taskId": id}, &asking)
	if asking.Status != client.StatusInputRequired || len(asking.InputRequests) != 1 {
		t.Fatalf("tasks/get while the devbox asks: %+v", asking)
	}
	var requestID string
	for rid, req := range asking.InputRequests {
		opts := req.Params.RequestedSchema.Properties.OptionID.OneOf
		if req.Method != "elicitation/create" || req.Params.Mode != "form" || !strings.Contains(req.Params.Message, "legacy_users") ||
			len(opts) != 2 || opts[0].Const != "continue" {
			t.Fatalf("the question as an elicitation: %+v", req)
		}
		requestID = rid
	}
	m.call(t, ctx, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
		requestID: map[string]any{"action": "accept", "content": map[string]any{"optionId": "continue"}}}}, nil)

	final := releasedTask(t, ctx, rest, id)
	if len(final.InputResponses) != 1 || final.InputResponses[0].Via != "mcp" || final.InputResponses[0].AnsweredBy != "caller" {
		t.Errorf("the answer recorded: %+v", final.InputResponses)
	}
	var done struct {
		Status string
		Result struct {
			StructuredContent struct{ Job, Summary string }
		}
	}
	m.call(t, ctx, "tasks/get", id, map[string]any{"taskId": id}, &done)
	if done.Status != client.StatusCompleted || done.Result.StructuredContent.Summary != "migrated 1,204 users; dropped legacy_users" {
		t.Fatalf("tasks/get once completed: %+v", done)
	}
}

// A task started while the executor was away (its endpoint no longer
// listens) is taken by the next run's catch-up, and runs to the end.
func TestDevboxToolCatchesUp(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, toolServerConfig())
	ctx, token, _ := asExecutor(t, srv)
	stop := publishTool(t, ctx, srv, token)
	stop()
	caller := srv.Client(t, "caller")
	task, err := caller.CallTool(ctx, "devbox", client.CallToolInput{Arguments: map[string]string{"job": jobMigrate}})
	if err != nil {
		t.Fatal(err)
	}

	// The next run listens elsewhere: the task's task.created still goes to
	// the endpoint it was started with, so only the catch-up can find it.
	publishTool(t, ctx, srv, token)
	if ans := playHuman(ctx, caller, task.TaskID); ans.err != nil || len(ans.prompts) != 1 {
		t.Fatalf("the caller was asked %q (%v)", ans.prompts, ans.err)
	}
	if final := releasedTask(t, ctx, caller, task.TaskID); final.Status != client.StatusCompleted {
		t.Fatalf("final task: %s", final.Status)
	}
}

// The executor stops while the task waits for an answer. The next run's
// job asks the same question, and waits on the one the task holds open
// instead of asking it twice: the person is asked once, and that answer
// counts.
func TestDevboxToolRestartWhileAsking(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, toolServerConfig())
	ctx, token, _ := asExecutor(t, srv)
	stop := publishTool(t, ctx, srv, token)
	caller := srv.Client(t, "caller")
	task, err := caller.CallTool(ctx, "devbox", client.CallToolInput{Arguments: map[string]string{"job": jobMigrate}})
	if err != nil {
		t.Fatal(err)
	}
	asking, err := caller.WaitTask(ctx, task.TaskID, 0, 30*time.Second, client.WithKinds(client.EventInputRequested))
	if err != nil || len(asking.InputRequests) != 1 {
		t.Fatalf("the first run's question: %+v %v", asking, err)
	}
	stop()

	publishTool(t, ctx, srv, token)
	// The next run's job reports before it asks, and its executor read the
	// task, open question and all, before the job started.
	if _, err := caller.WaitTask(ctx, task.TaskID, asking.Revision, 30*time.Second, client.WithKinds(client.EventTaskProgress)); err != nil {
		t.Fatal(err)
	}
	if ans := playHuman(ctx, caller, task.TaskID); ans.err != nil || len(ans.prompts) != 1 {
		t.Fatalf("the caller was asked %q (%v)", ans.prompts, ans.err)
	}
	final := releasedTask(t, ctx, caller, task.TaskID)
	if final.Status != client.StatusCompleted || len(final.InputResponses) != 1 ||
		final.InputResponses[0].RequestID != asking.InputRequests[0].RequestID {
		t.Fatalf("final task: %s, answers %+v", final.Status, final.InputResponses)
	}
}

// toolServerConfig is a server's config where the tool's endpoint, on
// loopback, may be reached.
func toolServerConfig() app.Config {
	return app.Config{AllowPrivateTargets: true, WakeBlock: 500 * time.Millisecond}
}

// publishTool runs the executor with -publish devbox, as the principal of
// token, until stop is called (or the test ends); it returns once the tool
// is published and the catch-up done.
func publishTool(t *testing.T, ctx context.Context, srv *apptest.Server, token string) (stop func()) {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	published := make(chan struct{})
	done := make(chan error, 1)
	cfg := config{API: srv.URL, Token: token, Log: testLog(t), Publish: "devbox", Listen: "127.0.0.1:0",
		Published: func(*client.Tool) { close(published) }}
	go func() { done <- run(runCtx, cfg) }()
	select {
	case <-published:
	case err := <-done:
		cancel()
		t.Fatalf("run ended before the tool was published: %v", err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// releasedTask waits for the executor's last step, the task's release, and
// returns the task then.
func releasedTask(t *testing.T, ctx context.Context, c *client.Client, id string) *client.Task {
	t.Helper()
	for {
		task, err := c.WaitTask(ctx, id, 0, 30*time.Second, client.WithKinds(client.EventTaskReleased))
		if err != nil {
			t.Fatal(err)
		}
		if task.ReleasedAt != nil {
			return task
		}
	}
}

// mcpCaller is an MCP client of the 2026-07-28 generation with the tasks
// extension, in raw JSON-RPC: each request carries its version and
// capabilities, nothing is kept between requests.
type mcpCaller struct {
	url, token string
}

// call sends method (name is its Mcp-Name header: the tool, or the task)
// and decodes the JSON-RPC result into out (nil: it is not read), failing
// the test on a JSON-RPC error.
func (m mcpCaller) call(t *testing.T, ctx context.Context, method, name string, params map[string]any, out any) {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcpVersion,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "devbox-test", "version": "0"},
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{
		"Authorization": {"Bearer " + m.token},
		"Content-Type":  {"application/json"},
		"Accept":        {"application/json, text/event-stream"},
		// The generation, and the method and its target, where any
		// replica or proxy can read them without parsing the body.
		"Mcp-Protocol-Version": {mcpVersion},
		"Mcp-Method":           {method},
		"Mcp-Name":             {name},
	}
	resp, raw := apptest.Fetch(t, http.DefaultClient, req)
	var answer struct {
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
		}
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &answer) != nil || answer.Error != nil || answer.Result == nil {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(answer.Result, out); err != nil {
			t.Fatalf("%s: %v: %s", method, err, answer.Result)
		}
	}
}

// mcpVersion is the generation the MCP caller speaks.
const mcpVersion = "2026-07-28"
