package client_test

import (
	"net/http"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/client"
)

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
