package app_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// inParallel runs do(i) for every i below n, a few at a time, and fails the
// test with the first error.
func inParallel(t *testing.T, n int, do func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	slots := make(chan struct{}, 16)
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := do(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

// pageAll reads every page of a list with limit 100, following the cursor,
// and returns the items' ids in the order listed.
func pageAll[T any](t *testing.T, what string, id func(T) string, list func(cursor string) (*client.Page[T], error)) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for pages := 1; ; pages++ {
		if pages > 50 {
			t.Fatalf("%s: more than 50 pages: the cursor does not advance", what)
		}
		page, err := list(cursor)
		if err != nil {
			t.Fatalf("%s, page %d: %v", what, pages, err)
		}
		if len(page.Items) > 100 {
			t.Fatalf("%s, page %d: %d items, limit 100", what, pages, len(page.Items))
		}
		for _, it := range page.Items {
			ids = append(ids, id(it))
		}
		if page.NextCursor == "" {
			return ids
		}
		cursor = page.NextCursor
	}
}

// Lists hold up at the sizes of real use on the embedded store: 500 tasks in
// 5 sessions, made through the API, page a hundred at a time through every
// list and filter, each item once. (A page of more than about 15 tasks used
// to time out on the embedded store: 503 store_unavailable.)
func TestListsPageThroughHundredsOnTheEmbeddedStore(t *testing.T) {
	t.Parallel()
	srv := apptest.Embedded(t, app.Config{})
	ctx := context.Background()
	cl := srv.Client(t, "lister")

	const sessions, perSession = 5, 100
	kinds := []string{"build", "review", "deploy"}
	sessionIDs := make([]string, sessions)
	for k := range sessionIDs {
		sessionIDs[k] = apptest.Session(t, ctx, cl).SessionID
	}
	type task struct{ id, session, kind, status string }
	tasks := make([]task, sessions*perSession)
	inParallel(t, len(tasks), func(i int) error {
		ses, kind := sessionIDs[i/perSession], kinds[i%len(kinds)]
		tk, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses, Kind: kind, Label: fmt.Sprint("task ", i)})
		if err != nil {
			return fmt.Errorf("create task %d: %w", i, err)
		}
		tasks[i] = task{id: tk.TaskID, session: ses, kind: kind, status: client.StatusWorking}
		return nil
	})
	// Some tasks move on: a fifth completes, a fifth fails, a fifth waits for
	// input; then the last session is cancelled, and its live tasks with it.
	inParallel(t, len(tasks), func(i int) error {
		var err error
		switch i % 5 {
		case 1:
			_, err = cl.Complete(ctx, tasks[i].id, "done")
			tasks[i].status = client.StatusCompleted
		case 2:
			_, err = cl.Fail(ctx, tasks[i].id, "broken", nil)
			tasks[i].status = client.StatusFailed
		case 3:
			_, err = cl.RequireInput(ctx, tasks[i].id, []client.InputRequest{{RequestID: "q", Prompt: "?", Display: client.DisplayConfirmation}})
			tasks[i].status = client.StatusInputRequired
		}
		if err != nil {
			return fmt.Errorf("task %d to %s: %w", i, tasks[i].status, err)
		}
		return nil
	})
	cancelled := sessionIDs[sessions-1]
	if _, err := cl.CancelSession(ctx, cancelled, "done with it"); err != nil {
		t.Fatal(err)
	}
	for i := range tasks {
		if tasks[i].session == cancelled && (tasks[i].status == client.StatusWorking || tasks[i].status == client.StatusInputRequired) {
			tasks[i].status = client.StatusCancelled
		}
	}

	// check wants the listed ids to be exactly the tasks keep keeps, once each.
	check := func(what string, listed []string, keep func(task) bool) {
		t.Helper()
		want := map[string]bool{}
		for _, tk := range tasks {
			if keep(tk) {
				want[tk.id] = true
			}
		}
		seen := map[string]bool{}
		for _, id := range listed {
			switch {
			case seen[id]:
				t.Errorf("%s: %s listed twice", what, id)
			case !want[id]:
				t.Errorf("%s: %s does not belong", what, id)
			}
			seen[id] = true
		}
		if len(seen) != len(want) {
			t.Errorf("%s: %d tasks listed, want %d", what, len(seen), len(want))
		}
	}
	taskID := func(tk client.Task) string { return tk.TaskID }
	listTasks := func(what string, p client.ListTasksParams) []string {
		return pageAll(t, what, taskID, func(cursor string) (*client.Page[client.Task], error) {
			p.Limit, p.Cursor = 100, cursor
			return cl.ListTasks(ctx, p)
		})
	}

	check("every task", listTasks("every task", client.ListTasksParams{}), func(task) bool { return true })
	for _, ses := range sessionIDs {
		check("the tasks of "+ses, listTasks("the tasks of "+ses, client.ListTasksParams{SessionID: ses}),
			func(tk task) bool { return tk.session == ses })
	}
	for _, st := range []string{client.StatusWorking, client.StatusInputRequired, client.StatusCompleted, client.StatusFailed, client.StatusCancelled} {
		check("tasks "+st, listTasks("tasks "+st, client.ListTasksParams{Status: st}),
			func(tk task) bool { return tk.status == st })
		check("tasks "+st+" of the first session", listTasks("tasks "+st+" of the first session", client.ListTasksParams{SessionID: sessionIDs[0], Status: st}),
			func(tk task) bool { return tk.status == st && tk.session == sessionIDs[0] })
	}
	for _, kind := range kinds {
		check("tasks of kind "+kind, listTasks("tasks of kind "+kind, client.ListTasksParams{Kind: kind}),
			func(tk task) bool { return tk.kind == kind })
	}

	sessionID := func(s client.Session) string { return s.SessionID }
	listSessions := func(status string) []string {
		return pageAll(t, "sessions "+status, sessionID, func(cursor string) (*client.Page[client.Session], error) {
			return cl.ListSessions(ctx, client.ListSessionsParams{Status: status, Limit: 100, Cursor: cursor})
		})
	}
	for status, want := range map[string][]string{
		"":                      sessionIDs,
		client.SessionActive:    sessionIDs[:sessions-1],
		client.SessionCancelled: {cancelled},
	} {
		got := listSessions(status)
		seen := map[string]bool{}
		for _, id := range got {
			seen[id] = true
		}
		ok := len(got) == len(want) && len(seen) == len(want)
		for _, id := range want {
			ok = ok && seen[id]
		}
		if !ok {
			t.Errorf("sessions %q: %v, want %v", status, got, want)
		}
	}
}
