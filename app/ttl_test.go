package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

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
