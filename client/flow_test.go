package client_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/client"
)

// TestTaskFlow drives one task through its life as an agent, an executor and
// a human would: progress, a question with options, the answers, the result,
// then reads both event logs.
func TestTaskFlow(t *testing.T) {
	t.Parallel()
	eachStore(t, app.Config{}, func(t *testing.T, e *env) {
		ctx := testContext(t)
		c := e.alice

		ses, err := c.CreateSession(ctx, client.CreateSessionInput{Metadata: map[string]any{"agent": "a1"}})
		if err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		if !strings.HasPrefix(ses.SessionID, "ses_") || ses.Status != client.SessionActive || ses.Owner != "alice" {
			t.Fatalf("session %+v", ses)
		}
		if !jsonEqual(t, ses.Metadata, `{"agent":"a1"}`) || ses.CreatedAt.IsZero() {
			t.Errorf("session metadata %s, createdAt %v", ses.Metadata, ses.CreatedAt)
		}
		got, err := c.GetSession(ctx, ses.SessionID)
		if err != nil || got.SessionID != ses.SessionID || !got.CreatedAt.Equal(ses.CreatedAt) {
			t.Fatalf("GetSession: %+v, %v", got, err)
		}

		var meta client.Response
		task, err := c.CreateTask(ctx, client.CreateTaskInput{
			SessionID: ses.SessionID, Kind: "devbox", Label: "build",
			Input: map[string]any{"repo": "taskhook"}, Metadata: map[string]any{"n": 1},
			PollIntervalMs: client.Int64(250),
		}, client.WithResponse(&meta))
		if err != nil {
			t.Fatalf("CreateTask: %v", err)
		}
		if meta.Status != http.StatusCreated || meta.Header.Get("Location") != "/v1/tasks/"+task.TaskID || meta.Replayed {
			t.Errorf("create answer %+v", meta)
		}
		if task.Status != client.StatusWorking || task.Revision != 1 || task.Requester != "alice" || task.Owner != "alice" ||
			task.Kind != "devbox" || task.Label != "build" || task.PollIntervalMs != 250 ||
			task.TTLMs == nil || task.ExpiresAt == nil || !task.ExpiresAt.After(task.CreatedAt) || task.Terminal() {
			t.Fatalf("created task %+v", task)
		}
		if !jsonEqual(t, task.Input, `{"repo":"taskhook"}`) || !jsonEqual(t, task.Metadata, `{"n":1}`) {
			t.Errorf("input %s, metadata %s", task.Input, task.Metadata)
		}
		id := task.TaskID

		// Not finished yet: the result is a 202 with the task as it is.
		res, terminal, err := c.Result(ctx, id, 0)
		if err != nil || terminal || res.TaskID != id || res.Status != client.StatusWorking {
			t.Fatalf("Result before the end: %+v, %v, %v", res, terminal, err)
		}

		task, err = c.Progress(ctx, id, client.ProgressInput{StatusMessage: client.String("cloning"), Progress: map[string]int{"pct": 10}})
		if err != nil || task.Revision != 2 || task.StatusMessage != "cloning" || !jsonEqual(t, task.Progress, `{"pct":10}`) {
			t.Fatalf("Progress: %+v, %v", task, err)
		}
		// A nil field is left out, so it keeps its value.
		task, err = c.Progress(ctx, id, client.ProgressInput{Progress: map[string]int{"pct": 50}})
		if err != nil || task.Revision != 3 || task.StatusMessage != "cloning" || !jsonEqual(t, task.Progress, `{"pct":50}`) {
			t.Fatalf("Progress without a message: %+v, %v", task, err)
		}
		task, err = c.Message(ctx, id, "need a decision", map[string]string{"env": "prod"})
		if err != nil || task.Revision != 4 {
			t.Fatalf("Message: %+v, %v", task, err)
		}

		task, err = c.RequireInput(ctx, id, []client.InputRequest{
			{Kind: client.KindAsk, Prompt: "Deploy to prod?", Options: []client.Choice{
				{ID: "yes", Label: "Yes", Style: "primary"},
				{ID: "no", Label: "No", Style: "danger", Description: "stop here"},
			}},
			{RequestID: "why", Prompt: "Why?", AllowFreeform: true},
		})
		if err != nil {
			t.Fatalf("RequireInput: %v", err)
		}
		if task.Status != client.StatusInputRequired || task.Revision != 5 || len(task.InputRequests) != 2 {
			t.Fatalf("after RequireInput: %+v", task)
		}
		ask, why := task.InputRequests[0], task.InputRequests[1]
		if !strings.HasPrefix(ask.RequestID, "req_") || ask.Display != client.DisplaySelect || len(ask.Options) != 2 ||
			ask.Options[1] != (client.Choice{ID: "no", Label: "No", Style: "danger", Description: "stop here"}) {
			t.Errorf("ask request %+v", ask)
		}
		if why.RequestID != "why" || why.Display != client.DisplayText || !why.AllowFreeform || why.Kind != client.KindAsk {
			t.Errorf("free-text request %+v", why)
		}

		task, err = c.Respond(ctx, id, []client.Answer{{RequestID: ask.RequestID, OptionID: "yes"}})
		if err != nil || task.Status != client.StatusInputRequired || task.Revision != 6 || len(task.InputRequests) != 1 {
			t.Fatalf("first answer: %+v, %v", task, err)
		}
		// The same answer again is a safe no-op.
		again, err := c.Respond(ctx, id, []client.Answer{{RequestID: ask.RequestID, OptionID: "yes"}})
		if err != nil || again.Revision != 6 {
			t.Fatalf("repeated answer: %+v, %v", again, err)
		}
		task, err = c.Respond(ctx, id, []client.Answer{{RequestID: "why", Text: "tests pass"}})
		if err != nil || task.Status != client.StatusWorking || task.Revision != 7 || len(task.InputRequests) != 0 {
			t.Fatalf("second answer: %+v, %v", task, err)
		}
		wantAnswers := []client.Answer{{RequestID: ask.RequestID, OptionID: "yes"}, {RequestID: "why", Text: "tests pass"}}
		if len(task.InputResponses) != len(wantAnswers) {
			t.Fatalf("inputResponses %+v, want %+v", task.InputResponses, wantAnswers)
		}
		for i, r := range task.InputResponses {
			if r.Answer != wantAnswers[i] || r.AnsweredBy != "alice" || r.Via != client.ViaAPI || r.SlackUserID != "" ||
				r.AnsweredAt.IsZero() || r.AnsweredAt.After(task.LastUpdatedAt) {
				t.Errorf("inputResponses[%d] = %+v, want %+v answered by alice through the API", i, r, wantAnswers[i])
			}
		}

		task, err = c.Complete(ctx, id, map[string]string{"url": "https://example.com/build/1"})
		if err != nil || task.Status != client.StatusCompleted || !task.Terminal() || task.Revision != 8 ||
			!jsonEqual(t, task.Result, `{"url":"https://example.com/build/1"}`) {
			t.Fatalf("Complete: %+v, %v", task, err)
		}
		res, terminal, err = c.Result(ctx, id, 0)
		if err != nil || !terminal || res.Revision != 8 || res.Status != client.StatusCompleted {
			t.Fatalf("Result after the end: %+v, %v, %v", res, terminal, err)
		}

		// The task's log, whole, then in pages of 3 following the cursor.
		all, err := c.TaskEvents(ctx, id, client.EventsParams{})
		if err != nil {
			t.Fatalf("TaskEvents: %v", err)
		}
		wantTypes := []string{
			client.EventTaskCreated, client.EventTaskProgress, client.EventTaskProgress, client.EventTaskMessage,
			client.EventTaskStatus, client.EventInputRequested, client.EventInputResolved,
			client.EventInputResolved, client.EventTaskStatus, client.EventTaskTerminal,
		}
		var types, ids []string
		for _, ev := range all.Events {
			types = append(types, ev.Type)
			ids = append(ids, ev.ID)
			if ev.TaskID != id || ev.SessionID != ses.SessionID || ev.At.IsZero() {
				t.Errorf("event %+v", ev)
			}
			snap, err := ev.Task()
			if strings.HasPrefix(ev.Type, "task.") {
				if err != nil || snap.TaskID != id || snap.Revision != ev.Revision {
					t.Errorf("event %s %s: task %+v, %v", ev.ID, ev.Type, snap, err)
				}
			} else if err == nil {
				t.Errorf("event %s %s: Task() gave a task", ev.ID, ev.Type)
			}
		}
		if !slices.Equal(types, wantTypes) {
			t.Fatalf("event types %v, want %v", types, wantTypes)
		}
		if all.Cursor != ids[len(ids)-1] {
			t.Errorf("cursor %q, want the last id %q", all.Cursor, ids[len(ids)-1])
		}
		var paged []string
		after := ""
		for range len(ids) {
			page, err := c.TaskEvents(ctx, id, client.EventsParams{After: after, Limit: 3})
			if err != nil {
				t.Fatalf("TaskEvents after %q: %v", after, err)
			}
			if len(page.Events) > 3 {
				t.Fatalf("page of %d events with limit 3", len(page.Events))
			}
			if len(page.Events) == 0 {
				if page.Cursor != after {
					t.Errorf("empty page cursor %q, want %q", page.Cursor, after)
				}
				break
			}
			for _, ev := range page.Events {
				paged = append(paged, ev.ID)
			}
			after = page.Cursor
		}
		if !slices.Equal(paged, ids) {
			t.Errorf("paged ids %v, want %v", paged, ids)
		}

		// The session's log: session.created, then the same task events with the same ids.
		sev, err := c.SessionEvents(ctx, ses.SessionID, client.EventsParams{Limit: 100})
		if err != nil {
			t.Fatalf("SessionEvents: %v", err)
		}
		if len(sev.Events) == 0 || sev.Events[0].Type != client.EventSessionCreated {
			t.Fatalf("session events %+v", sev.Events)
		}
		var sids []string
		for _, ev := range sev.Events[1:] {
			sids = append(sids, ev.ID)
		}
		if !slices.Equal(sids, ids) {
			t.Errorf("session log ids %v, want the task's %v", sids, ids)
		}
	})
}

// TestListPaging pages through lists with NextCursor and checks owner scoping
// and filters.
func TestListPaging(t *testing.T) {
	t.Parallel()
	eachStore(t, app.Config{}, func(t *testing.T, e *env) {
		ctx := testContext(t)
		c := e.alice

		var sessions []string
		for range 3 {
			s, err := c.CreateSession(ctx, client.CreateSessionInput{})
			if err != nil {
				t.Fatalf("CreateSession: %v", err)
			}
			sessions = append(sessions, s.SessionID)
		}
		made := map[string]bool{}
		for range 5 {
			task, err := c.CreateTask(ctx, client.CreateTaskInput{SessionID: sessions[0], Kind: "page"})
			if err != nil {
				t.Fatalf("CreateTask: %v", err)
			}
			made[task.TaskID] = true
		}
		other, err := c.CreateTask(ctx, client.CreateTaskInput{SessionID: sessions[1], Kind: "other"})
		if err != nil {
			t.Fatalf("CreateTask: %v", err)
		}
		if _, err := c.Complete(ctx, other.TaskID, nil); err != nil {
			t.Fatalf("Complete: %v", err)
		}

		tasks := collect(t, func(cursor string) (*client.Page[client.Task], error) {
			return c.ListTasks(ctx, client.ListTasksParams{SessionID: sessions[0], Limit: 2, Cursor: cursor})
		})
		seen := map[string]bool{}
		for i, task := range tasks {
			if seen[task.TaskID] || !made[task.TaskID] {
				t.Errorf("task %s listed twice or not of the session", task.TaskID)
			}
			seen[task.TaskID] = true
			if i > 0 && task.CreatedAt.After(tasks[i-1].CreatedAt) {
				t.Errorf("list is not newest first at %d", i)
			}
		}
		if len(seen) != len(made) {
			t.Errorf("listed %d tasks, made %d", len(seen), len(made))
		}

		byKind := collect(t, func(cursor string) (*client.Page[client.Task], error) {
			return c.ListTasks(ctx, client.ListTasksParams{Kind: "other", Limit: 1, Cursor: cursor})
		})
		if len(byKind) != 1 || byKind[0].TaskID != other.TaskID {
			t.Errorf("kind filter: %+v", byKind)
		}
		done := collect(t, func(cursor string) (*client.Page[client.Task], error) {
			return c.ListTasks(ctx, client.ListTasksParams{Status: client.StatusCompleted, Cursor: cursor})
		})
		if len(done) != 1 || done[0].TaskID != other.TaskID {
			t.Errorf("status filter: %+v", done)
		}

		listed := collect(t, func(cursor string) (*client.Page[client.Session], error) {
			return c.ListSessions(ctx, client.ListSessionsParams{Status: client.SessionActive, Limit: 1, Cursor: cursor})
		})
		var ids []string
		for _, s := range listed {
			ids = append(ids, s.SessionID)
		}
		slices.Sort(ids)
		want := slices.Clone(sessions)
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Errorf("sessions %v, want %v", ids, want)
		}

		// Lists hold only the caller's own objects.
		if page, err := e.bob.ListTasks(ctx, client.ListTasksParams{}); err != nil || len(page.Items) != 0 || page.NextCursor != "" {
			t.Errorf("bob's tasks: %+v, %v", page, err)
		}
		if page, err := e.bob.ListSessions(ctx, client.ListSessionsParams{}); err != nil || len(page.Items) != 0 {
			t.Errorf("bob's sessions: %+v, %v", page, err)
		}
	})
}

// collect follows NextCursor to the end of a list.
func collect[T any](t *testing.T, list func(cursor string) (*client.Page[T], error)) []T {
	t.Helper()
	var all []T
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("more than 100 pages: the cursor does not advance")
		}
		page, err := list(cursor)
		if err != nil {
			t.Fatalf("list with cursor %q: %v", cursor, err)
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

func TestIdempotentReplay(t *testing.T) {
	t.Parallel()
	eachStore(t, app.Config{}, func(t *testing.T, e *env) {
		ctx := testContext(t)
		c := e.alice

		var first, second client.Response
		s1, err := c.CreateSession(ctx, client.CreateSessionInput{}, client.WithIdempotencyKey("ses-1"), client.WithResponse(&first))
		if err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		s2, err := c.CreateSession(ctx, client.CreateSessionInput{}, client.WithIdempotencyKey("ses-1"), client.WithResponse(&second))
		if err != nil {
			t.Fatalf("repeated CreateSession: %v", err)
		}
		if first.Replayed || !second.Replayed || s1.SessionID != s2.SessionID || second.Status != http.StatusCreated {
			t.Fatalf("session replay: first %+v %s, second %+v %s", first, s1.SessionID, second, s2.SessionID)
		}
		// Keys are the caller's own: bob's "ses-1" is another request.
		var bobs client.Response
		s3, err := e.bob.CreateSession(ctx, client.CreateSessionInput{}, client.WithIdempotencyKey("ses-1"), client.WithResponse(&bobs))
		if err != nil || bobs.Replayed || s3.SessionID == s1.SessionID || s3.Owner != "bob" {
			t.Fatalf("bob's CreateSession with alice's key: %+v, %+v, %v", s3, bobs, err)
		}

		in := client.CreateTaskInput{SessionID: s1.SessionID, Label: "once"}
		t1, err := c.CreateTask(ctx, in, client.WithIdempotencyKey("task-1"))
		if err != nil {
			t.Fatalf("CreateTask: %v", err)
		}
		var meta client.Response
		t2, err := c.CreateTask(ctx, in, client.WithIdempotencyKey("task-1"), client.WithResponse(&meta))
		if err != nil || !meta.Replayed || t2.TaskID != t1.TaskID || meta.Status != http.StatusCreated {
			t.Fatalf("task replay: %+v, %+v, %v", t2, meta, err)
		}
		in.Label = "twice"
		_, err = c.CreateTask(ctx, in, client.WithIdempotencyKey("task-1"))
		wantCode(t, err, http.StatusConflict, client.CodeIdempotencyConflict)

		// A command repeated with its key gets its first answer, even once the
		// task has moved on.
		done, err := c.Complete(ctx, t1.TaskID, 42, client.WithIdempotencyKey("done-1"))
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		meta = client.Response{}
		again, err := c.Complete(ctx, t1.TaskID, 42, client.WithIdempotencyKey("done-1"), client.WithResponse(&meta))
		if err != nil || !meta.Replayed || again.Revision != done.Revision || !jsonEqual(t, again.Result, `42`) {
			t.Fatalf("repeated Complete: %+v, %+v, %v", again, meta, err)
		}
		// Without the key, the same command meets the finished task.
		_, err = c.Complete(ctx, t1.TaskID, 42)
		wantCode(t, err, http.StatusConflict, client.CodeTaskTerminal)
	})
}
